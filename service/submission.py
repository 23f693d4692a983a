"""The submission contract: what a course platform sends and `kernelgrade grade` reads."""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

MAX_CODE_CHARS = 64 * 1024
MAX_TEXT_CHARS = 16 * 1024


class Submission(BaseModel):
    """Unknown fields are rejected (a 422 naming them on the API)."""

    model_config = ConfigDict(extra="forbid")

    exercise: str = Field(min_length=1, max_length=100)
    code: str = Field(min_length=1, max_length=MAX_CODE_CHARS)
    answers: dict[str, str] = Field(default_factory=dict, max_length=20)
    explanation: str = Field("", max_length=MAX_TEXT_CHARS)
    claimed_output: str = Field("", max_length=MAX_TEXT_CHARS)

    def answer(self, question_id: str) -> str:
        if question_id == "explanation":
            return self.explanation
        return self.answers.get(question_id, "")
