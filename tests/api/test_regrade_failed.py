"""A regrade that fails on our side, told to the course: through the real API server on a real
database, with a real webhook receiver. The submissions are graded by one server; then that
server stops and another starts on the same database whose sandbox cannot start (its interpreter
is missing, as on a broken worker), so every regrade that runs the sandbox really ends
not_gradable. The earlier grade stays current (gradebook unchanged); the course gets a signed
`submission.regrade_failed` carrying that grade and what failed; a bulk regrade counts and lists
the failed submission (API and CLI), and not the one whose regrade graded."""
from __future__ import annotations

import contextlib
import json

import pytest
from standardwebhooks import Webhook
from typer.testing import CliRunner

from service.cli import app
from service.worker.webhook_payload import signing_secret
from tests.api.support import Course, Receiver, Service, api_settings, cheap_body, example_body, wait_final, wait_for
from tests.support.servers import LiveServer, database

pytestmark = [pytest.mark.sandbox, pytest.mark.timeout(300)]

SANDBOX_DIED = "sandbox died during start-up"


@pytest.fixture
def servers(db_kind, tmp_path):
    """`start(**overrides)`: a live server on this test's database (one at a time; `stop()` the last)."""
    with contextlib.ExitStack() as stack:
        url = stack.enter_context(database(db_kind, tmp_path))
        running: list[contextlib.ExitStack] = []

        def start(**overrides) -> Service:
            own = contextlib.ExitStack()
            settings = api_settings(url, tmp_path, warm_pool=0, **overrides)
            service = Service(own.enter_context(LiveServer(settings)), settings, db_kind)
            own.callback(service.close_clients)
            running.append(own)
            return service

        def stop() -> None:
            running.pop().close()

        start.stop = stop  # type: ignore[attr-defined]
        start.url = url  # type: ignore[attr-defined]
        yield start
        while running:
            running.pop().close()


def hooks_settled(client, submission_id: str, count: int) -> list[dict]:
    def check():
        hooks = client.get(f"/v1/submissions/{submission_id}").json()["webhooks"]
        return hooks if len(hooks) >= count and all(h["delivered"] or h["next_attempt_at"] is None
                                                    for h in hooks) else None

    return wait_for(check, timeout=60, interval=0.2, what=f"{count} webhook deliveries of {submission_id}")


def messages(receiver: Receiver, secret: str, event: str) -> list[dict]:
    """The delivered messages of one event type, each verified as a Standard Webhooks receiver would."""
    return [Webhook(signing_secret(secret)).verify(r.body, r.headers) for r in receiver.snapshot()
            if r.headers["kernelgrade-event"] == event]


def test_a_failed_regrade_is_sent_as_regrade_failed_and_counted_by_the_bulk_regrade(servers, tmp_path, monkeypatch):
    with Receiver(fail_first=0) as receiver:
        good = servers()
        course = good.new_course()
        client = course.client("submit", "read", "review")
        ran = client.post("/v1/submissions", json={**example_body(), "assignment": "hw",
                                                    "student": {"id": "s1"}, "callback_url": receiver.url})
        cheap = client.post("/v1/submissions", json={**cheap_body(), "assignment": "hw", "student": {"id": "s2"},
                                                     "callback_url": receiver.url})
        assert ran.status_code == cheap.status_code == 202, (ran.text, cheap.text)
        ran_id, cheap_id = ran.json()["id"], cheap.json()["id"]
        first = wait_final(client, ran_id)
        assert first["status"] == "graded" and wait_final(client, cheap_id)["status"] == "graded"
        hooks_settled(client, ran_id, 1)
        hooks_settled(client, cheap_id, 1)
        book = client.get("/v1/grades", params={"assignment": "hw"}).json()["rows"]
        servers.stop()

        # The same database, served by a worker whose sandbox cannot start.
        broken = servers(sandbox_python=str(tmp_path / "gone" / "bin" / "python3"))
        course = Course(broken, course.id, course.webhook_secret)
        client = course.client("submit", "read", "review")

        # One regrade.
        assert client.post(f"/v1/submissions/{ran_id}/regrade").status_code == 202
        after = wait_final(client, ran_id)
        assert [(h["seq"], h["status"], h["current"]) for h in after["history"]] == [
            (1, "graded", True), (2, "not_gradable", False)], "the failure is recorded, the grade stays current"
        assert after["status"] == "graded" and after["report"] == first["report"]
        hooks = hooks_settled(client, ran_id, 2)
        assert [(h["event"], h["delivered"]) for h in hooks] == [("submission.graded", True),
                                                                 ("submission.regrade_failed", True)]
        [failed] = messages(receiver, course.webhook_secret, "submission.regrade_failed")
        [graded] = [m for m in messages(receiver, course.webhook_secret, "submission.graded")
                    if m["submission_id"] == ran_id]
        data = failed["data"]
        assert data["submission_id"] == ran_id and data["identity"]["student"]["id"] == "s1"
        assert data["grade"] == graded["data"]["grade"] and data["grade"]["points"] > 0, "the grade that counts"
        assert (data["status"], data["report_seq"], failed["status"], failed["report_seq"]) == ("graded", 1,
                                                                                                "graded", 1)
        assert failed["report"] == first["report"], "a receiver reading only the report sees the same grade"
        assert data["failed_regrade"]["report_seq"] == 2 and data["failed_regrade"]["status"] == "not_gradable"
        assert SANDBOX_DIED in data["failed_regrade"]["message"]
        assert graded["data"]["failed_regrade"] is None

        # A bulk regrade of the assignment: the sandboxed one fails again, the cheap one is regraded.
        started = client.post("/v1/regrades", json={"assignment": "hw"})
        assert started.status_code == 202, started.text
        assert (started.json()["failed"], started.json()["failures"]) == (0, [])
        job_id = started.json()["id"]
        job = wait_for(lambda: (j := client.get(f"/v1/regrades/{job_id}").json())["status"] == "done" and j,
                       timeout=90, interval=0.3, what="the bulk regrade")
        assert (job["total"], job["done"], job["failed"]) == (2, 2, 1), job
        assert job["failures"] == [{"submission_id": ran_id, "student_id": "s1", "report_seq": 3,
                                    "current_report_seq": 1, "message": job["failures"][0]["message"]}]
        assert SANDBOX_DIED in job["failures"][0]["message"]
        assert client.get("/v1/regrades").json()[0]["failures"] == job["failures"]
        assert [h["event"] for h in hooks_settled(client, ran_id, 3)][-1] == "submission.regrade_failed"
        assert [h["event"] for h in hooks_settled(client, cheap_id, 2)] == ["submission.graded",
                                                                           "submission.regraded"]
        assert [m["data"]["failed_regrade"]["report_seq"]
                for m in messages(receiver, course.webhook_secret, "submission.regrade_failed")] == [2, 3]
        assert client.get("/v1/grades", params={"assignment": "hw"}).json()["rows"][0] == book[0], \
            "the gradebook keeps the grade"
        assert book[0]["student_id"] == "s1"

        # The CLI shows the same.
        monkeypatch.setenv("KERNELGRADE_DATABASE_URL", servers.url)
        shown = CliRunner().invoke(app, ["regrade", "status", "--course", course.id, job_id])
        assert shown.exit_code == 0, shown.output
        assert "2/2 done, 0 queued, 0 pending, 1 failed" in shown.output
        [line] = [line for line in shown.output.splitlines() if line.startswith("  failed")]
        assert line.split("\t")[1:4] == [ran_id, "s1", "report 3 (current: 1)"] and SANDBOX_DIED in line

    received = [json.loads(r.body)["type"] for r in receiver.snapshot()]
    assert sorted(received) == sorted(["submission.graded"] * 2 + ["submission.regrade_failed"] * 2
                                      + ["submission.regraded"])
