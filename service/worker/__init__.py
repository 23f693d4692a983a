"""Who grades: an in-process thread pool (`kernelgrade serve`) or Celery workers over Redis."""
