"""One line naming the environment variable for a setting that cannot be used, instead of a traceback.

Works for every settings class (service.config.Settings, the docker backend's options): the
variable's name comes from the class's own env_prefix, found by the name pydantic gives the error.
"""
from __future__ import annotations

import re

from pydantic import ValidationError
from pydantic_core import ErrorDetails
from pydantic_settings import BaseSettings, SettingsError

# Values of these settings are never repeated back (a database URL carries its password).
_SECRET_WORDS = ("secret", "key", "password", "token", "url")
_SHOWN_CHARS = 60


def _settings_classes() -> list[type[BaseSettings]]:
    found: list[type[BaseSettings]] = []
    todo = list(BaseSettings.__subclasses__())
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo += cls.__subclasses__()
    return found


def _variable(cls: type[BaseSettings], loc: tuple[int | str, ...]) -> str:
    """('webhook_backoff_s', 1) -> 'KERNELGRADE_WEBHOOK_BACKOFF_S (value 2)'; ('limits', 'memory_bytes') ->
    'KERNELGRADE_LIMITS (memory_bytes)'."""
    prefix = str(cls.model_config.get("env_prefix") or "")
    name = f"{prefix}{str(loc[0]).upper()}" if loc else prefix.rstrip("_")
    inner = [f"value {part + 1}" if isinstance(part, int) else str(part) for part in loc[1:]]
    return f"{name} ({'.'.join(inner)})" if inner else name


def _one(cls: type[BaseSettings], error: ErrorDetails) -> str:
    loc = tuple(error.get("loc", ()))
    message = re.sub(r"^(Value|Assertion) error, ", "", error.get("msg", "invalid"))
    field = str(loc[0]).lower() if loc else ""
    shown = ""
    secret = any(w in field for w in _SECRET_WORDS)
    if "input" in error and isinstance(error["input"], (str, int, float)) and not secret:
        text = str(error["input"])
        shown = "" if text in message else f" (got {text[:_SHOWN_CHARS]!r}{'…' if len(text) > _SHOWN_CHARS else ''})"
    return f"{_variable(cls, loc)}: {message}{shown}"


def settings_error(exc: BaseException) -> str | None:
    """The one-line message for a settings class's ValidationError or SettingsError; None for anything else."""
    classes = _settings_classes()
    if isinstance(exc, ValidationError):
        cls = next((c for c in classes if c.__name__ == exc.title), None)
        if cls is None:
            return None
        return "invalid setting " + "; ".join(_one(cls, e) for e in exc.errors())
    if isinstance(exc, SettingsError):
        # pydantic-settings could not decode a structured value: 'error parsing value for field "limits" from ...'
        match = re.search(r'field "([^"]+)"', str(exc))
        owner = next((c for c in classes if match and match.group(1) in c.model_fields), None)
        if match is None or owner is None:
            return f"invalid setting: {str(exc).splitlines()[0]}"
        return f"invalid setting {_variable(owner, (match.group(1),))}: not valid JSON"
    return None
