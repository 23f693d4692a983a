"""The submission contract: what a course platform sends and `kernelgrade grade` reads."""
from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

MAX_CODE_CHARS = 64 * 1024
MAX_TEXT_CHARS = 16 * 1024  # each written answer, the explanation and the claimed output (docs/api.md)
MAX_ID_CHARS = 200


def _plain_id(value: str) -> str:
    """A platform id: printable text without control characters or surrounding blanks."""
    if value != value.strip() or any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise ValueError("must be printable text without control characters or surrounding spaces")
    return storable(value)


def storable(value: str) -> str:
    """PostgreSQL text cannot hold NUL, and a lone surrogate cannot be encoded: refuse both (422)."""
    if "\x00" in value:
        raise ValueError("must not contain NUL characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("must be valid Unicode text (no lone surrogates)") from None
    return value


def _email(value: str) -> str:
    # A shape check only (one @, a dot in the domain, no spaces): platforms send what they hold,
    # and no mail is ever sent to it.
    local, at, domain = value.partition("@")
    if not at or not local or "." not in domain.strip(".") or any(c.isspace() for c in value) or "@" in domain:
        raise ValueError("must be an e-mail address like name@example.org")
    return storable(value)


PlatformId = Annotated[str, Field(min_length=1, max_length=MAX_ID_CHARS), AfterValidator(_plain_id)]


class Student(BaseModel):
    """Who submitted, as the course platform knows them (its user id; name and e-mail optional)."""

    model_config = ConfigDict(extra="forbid")

    id: PlatformId = Field(description="the platform's user id")
    name: Annotated[str, Field(max_length=MAX_ID_CHARS), AfterValidator(storable)] | None = Field(
        None, description="display name")
    email: Annotated[str, Field(max_length=320), AfterValidator(_email)] | None = None


class Submission(BaseModel):
    """Unknown fields are rejected (a 422 naming them on the API)."""

    model_config = ConfigDict(extra="forbid")

    exercise: str = Field(min_length=1, max_length=100)
    code: str = Field(min_length=1, max_length=MAX_CODE_CHARS)
    answers: dict[Annotated[str, Field(max_length=64)], Annotated[str, Field(max_length=MAX_TEXT_CHARS)]] = Field(
        default_factory=dict, max_length=20)
    explanation: str = Field("", max_length=MAX_TEXT_CHARS)
    claimed_output: str = Field("", max_length=MAX_TEXT_CHARS)
    # The platform's own identity (all optional, stored in indexed columns: listing and grades).
    assignment: PlatformId | None = Field(None, description="the course's assignment id")
    student: Student | None = None
    attempt: int | None = Field(None, ge=1, le=1_000_000, description="the platform's attempt number (1 = first)")
    external_ref: PlatformId | None = Field(None, description="the platform's own reference for this submission")
    language: Literal["zh", "en"] | None = Field(None, description="the student's language; unset: the one the "
                                                                   "answers are written in, else the lesson's")

    @property
    def written(self) -> list[str]:
        """What the student wrote in words: the explanation and the answers (their language is the report's
        when none is declared, service.messages.written_language)."""
        return [self.explanation, *self.answers.values()]

    def answer(self, question_id: str) -> str:
        if question_id == "explanation":
            return self.explanation
        return self.answers.get(question_id, "")
