"""The course's webhook secret over real HTTP and from the command line: shown to admin keys only,
rotated, and the next real delivery to a real receiver is signed with the new secret (the old one
no longer verifies)."""
from __future__ import annotations

import sys

import pytest

from service import cli
from service.worker.webhooks import SIGNATURE_HEADER, verify
from tests.api.support import Receiver, cheap_body, wait_for

pytestmark = pytest.mark.sandbox
SECRET_PATH = "/v1/course/webhook-secret"


def delivery(course, receiver: Receiver):
    """Submit with a callback to `receiver` and return the request it got (body, signature)."""
    before = len(receiver.snapshot())
    client = course.client("submit", name="submitter")
    response = client.post("/v1/submissions", json={**cheap_body(), "callback_url": receiver.url})
    assert response.status_code == 202, response.text
    received = wait_for(lambda: receiver.snapshot()[before:] or None, timeout=60, interval=0.1,
                        what="the webhook delivery")
    assert len(received) == 1 and received[0].answered == 200
    return received[0].body, received[0].headers[SIGNATURE_HEADER.lower()]


def test_only_an_admin_key_sees_or_rotates_the_secret(service, course):
    for scope in ("submit", "read", "review"):
        client = course.client(scope)
        assert client.get(SECRET_PATH).status_code == 403
        assert client.post(f"{SECRET_PATH}/rotate").status_code == 403
    assert service.client().get(SECRET_PATH).status_code == 401
    shown = course.client("admin", name="admin").get(SECRET_PATH)
    assert shown.status_code == 200, shown.text
    assert shown.json() == {"course": course.id, "webhook_secret": course.webhook_secret}
    assert shown.headers["cache-control"] == "no-store"
    # Another course's admin sees that course's secret, never this one.
    other = service.new_course()
    assert other.client("admin", name="admin").get(SECRET_PATH).json()["webhook_secret"] == other.webhook_secret


def test_rotation_through_the_api_signs_the_next_delivery_with_the_new_secret(course):
    admin = course.client("admin", name="admin")
    old = course.webhook_secret
    with Receiver(fail_first=0) as receiver:
        body, signature = delivery(course, receiver)
        assert verify(old, body, signature)

        rotated = admin.post(f"{SECRET_PATH}/rotate")
        assert rotated.status_code == 200, rotated.text
        assert rotated.headers["cache-control"] == "no-store"
        new = rotated.json()["webhook_secret"]
        assert new != old and len(new) == 64
        assert admin.get(SECRET_PATH).json()["webhook_secret"] == new

        body, signature = delivery(course, receiver)
    assert verify(new, body, signature)
    assert not verify(old, body, signature), "the old secret must stop verifying"


@pytest.fixture
def kernelgrade(service, monkeypatch, capsys):
    """`kernelgrade(*args)` -> (exit code, stdout, stderr): the CLI's main() on the live server's database
    (in this process: a new interpreter per call would cost seconds of imports)."""
    monkeypatch.setenv("KERNELGRADE_DATABASE_URL", service.settings.db_url())
    monkeypatch.setenv("KERNELGRADE_DATA_DIR", str(service.settings.data_dir))

    def run(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        monkeypatch.setattr(sys, "argv", ["kernelgrade", *args])
        try:
            cli.main()
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        out, err = capsys.readouterr()
        return code, out, err

    return run


def test_rotation_from_the_command_line(course, kernelgrade):
    assert kernelgrade("courses", "webhook-secret", course.id) == (0, course.webhook_secret + "\n", "")

    code, out, err = kernelgrade("courses", "webhook-secret", course.id, "--rotate")
    assert code == 0, err
    new = out.strip()
    assert new != course.webhook_secret and len(new) == 64
    assert kernelgrade("courses", "webhook-secret", course.id)[1] == new + "\n"
    with Receiver(fail_first=0) as receiver:
        body, signature = delivery(course, receiver)
    assert verify(new, body, signature) and not verify(course.webhook_secret, body, signature)

    code, out, err = kernelgrade("courses", "webhook-secret", "no-such-course")
    assert code == 2 and out == "" and "no course 'no-such-course'" in err
