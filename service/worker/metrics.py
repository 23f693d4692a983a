"""Prometheus metrics, in a registry per app (no import-time globals for tests to patch)."""
from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from service.report import Report


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.queue_depth = Gauge("kernelgrade_queue_depth", "submissions queued or running", ["status"],
                                 registry=self.registry)
        self.grading_seconds = Histogram("kernelgrade_grading_seconds", "time to grade one submission",
                                         buckets=(0.5, 1, 2, 3, 5, 8, 13, 21, 34, 60, 120, 300), registry=self.registry)
        self.outcomes = Counter("kernelgrade_outcomes_total", "finished gradings by status", ["status"],
                                registry=self.registry)
        self.sandbox_failures = Counter("kernelgrade_sandbox_failures_total",
                                        "gradings that failed on our side (not_gradable)", registry=self.registry)
        self.webhooks = Counter("kernelgrade_webhook_attempts_total", "webhook delivery attempts", ["outcome"],
                                registry=self.registry)
        self.lane_gradings = Gauge("kernelgrade_lane_gradings", "serve's gradings in its lanes now: parked (waiting "
                                   "for an identical program, no thread), waiting_run, running", ["state"],
                                   registry=self.registry)
        self.lti_scores = Counter("kernelgrade_lti_score_attempts_total", "attempts at posting a score to an LMS",
                                  ["outcome"], registry=self.registry)

    def graded(self, report: Report, seconds: float) -> None:
        self.grading_seconds.observe(seconds)
        self.outcomes.labels(report.status).inc()
        if report.status == "not_gradable":
            self.sandbox_failures.inc()
