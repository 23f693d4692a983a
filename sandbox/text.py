"""Text that came out of a sandbox, made safe to store and show: valid UTF-8, no NUL or other
control characters (tab and newline stay), at most `limit` characters with a marker where cut.

Every string the runner takes from a frame or from the sandbox's log goes through `clean_text`:
an unpaired surrogate would otherwise break JSON encoding in the CLI and the database, and a NUL
or a terminal escape would reach reports, pages and TA screens as it came."""
from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")


def clean_text(value: object, limit: int = 20_000) -> str:
    """`value` as a clean string (see the module's docstring); non-strings become ''."""
    if not isinstance(value, str):
        return ""
    original = len(value)
    if original > 4 * limit:  # never scan more than a few times the kept length
        value = value[: 2 * limit] + value[-2 * limit:]
    # Unpaired surrogates (JSON's "\ud800") become U+FFFD; a pair written as two escapes joins up.
    text = value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    text = _CONTROL.sub("", text.replace("\r\n", "\n"))
    if len(text) <= limit and len(value) == original:
        return text
    kept = limit
    for _ in range(2):  # the marker counts towards the limit and names what was really cut
        marker = f"\n… [{max(1, original - kept)} characters cut] …\n"
        kept = limit - len(marker)
    if kept < 2:
        return text[:limit]
    return text[: kept - kept // 2] + marker + text[len(text) - kept // 2:]


HELLO_FIELDS = ("mode", "device", "torch", "triton", "python")


def hello_environment(message: dict) -> dict[str, str]:
    """The harness's `hello` frame as short clean strings (the report's environment, memo keys)."""
    return {key: clean_text(message.get(key), 200) for key in HELLO_FIELDS}
