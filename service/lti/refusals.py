"""Why a launch (or a later request of a launched page) was refused: a code the page explains in
both languages (service/web/i18n.py: LTI_REFUSALS), the HTTP status, and the technical detail."""
from __future__ import annotations

from pylti1p3.exception import LtiException

STATUS = {
    "bad_request": 400, "unknown_platform": 403, "platform_revoked": 403, "unknown_deployment": 403,
    "bad_state": 401, "bad_token": 400, "bad_signature": 401, "expired": 401, "replayed_nonce": 401,
    "bad_audience": 401, "bad_message": 400, "launch_expired": 401, "no_exercise": 409, "unknown_exercise": 409,
    "not_instructor": 403,
}


class LaunchRefused(LtiException):
    """Raised inside pylti1p3's validation steps (a subclass of its LtiException, so the library's
    own `except` clauses treat it alike) and by our routes; becomes the refusal page."""

    def __init__(self, code: str, detail: str = "", **params: str) -> None:
        assert code in STATUS, code
        super().__init__(f"{code}: {detail}" if detail else code)
        self.code, self.detail = code, detail[:300]
        self.params = {k: str(v)[:300] for k, v in params.items()}

    @property
    def status(self) -> int:
        return STATUS[self.code]
