"""The HTTP API (FastAPI): routes are thin, the work happens in service.db.store and the workers."""
