"""List settings as the environment writes them: comma-separated (`a, b`) or a JSON array (`["a", "b"]`).

Shared by every settings class (service.config.Settings, the docker backend's options), so no list
setting insists on JSON (issue 21: `KERNELGRADE_WEBHOOK_ALLOWED_HOSTS=127.0.0.1` used to stop every
command with a traceback). Trusted side only: nothing here runs in the sandbox.
"""
from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import BeforeValidator
from pydantic_settings import NoDecode


def listed(value: Any) -> Any:
    """`"a, b,"` -> ["a", "b"]; `'["a", "b"]'` -> ["a", "b"]; anything not a string passes unchanged."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    if text.startswith("["):
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"not a valid JSON array ({exc.msg}); or write the values comma-separated") from None
    return [part.strip() for part in text.split(",") if part.strip()]


# NoDecode keeps pydantic-settings from insisting on JSON before `listed` sees the text.
TextList = Annotated[list[str], NoDecode, BeforeValidator(listed)]
