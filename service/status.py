"""A submission's status, as the database stores it (the same strings the API shows)."""
from __future__ import annotations

from enum import StrEnum


class SubmissionStatus(StrEnum):
    """queued -> running (a worker holds its lease) -> graded | not_gradable; a regrade queues it again."""

    queued = "queued"
    running = "running"
    graded = "graded"  # a report judged the submission
    not_gradable = "not_gradable"  # we failed, not the student: it costs them nothing


FINAL_STATUSES: tuple[SubmissionStatus, ...] = (SubmissionStatus.graded, SubmissionStatus.not_gradable)
IN_PROGRESS_STATUSES: tuple[SubmissionStatus, ...] = (SubmissionStatus.queued, SubmissionStatus.running)
