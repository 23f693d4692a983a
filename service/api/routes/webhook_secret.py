"""/v1/course/webhook-secret: show and rotate the secret that signs the key's course's webhooks (admin)."""
from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from service.api.deps import AdminKey, SessionDep
from service.api.schemas import KEYED_ERRORS
from service.db import store

router = APIRouter(prefix="/v1/course/webhook-secret", tags=["course"], responses=KEYED_ERRORS)
NO_STORE = {"Cache-Control": "no-store"}  # a secret: no proxy or browser keeps a copy


class WebhookSecretView(BaseModel):
    course: str
    webhook_secret: str = Field(description="HMAC-SHA256 key of the Kernelgrade-Signature header (docs/api.md, "
                                            "Webhooks)")


def _answer(course_id: str, secret: str) -> JSONResponse:
    return JSONResponse(WebhookSecretView(course=course_id, webhook_secret=secret).model_dump(), headers=NO_STORE)


@router.get("", response_model=WebhookSecretView)
def show_webhook_secret(session: SessionDep, key: AdminKey) -> JSONResponse:
    """The secret that signs this course's webhooks now."""
    return _answer(key.course_id, store.existing_course(session, key.course_id).webhook_secret)


@router.post("/rotate", response_model=WebhookSecretView)
def rotate_webhook_secret(session: SessionDep, key: AdminKey) -> JSONResponse:
    """Replace the secret and return the new one: every delivery from now on, retries included, is signed
    with it, and the old one no longer verifies."""
    return _answer(key.course_id, store.rotate_webhook_secret(session, key.course_id))
