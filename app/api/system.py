"""Liveness and readiness."""
from __future__ import annotations

from fastapi import APIRouter
from sqlalchemy import text

from app.api.deps import SessionDep
from app.core.errors import Unavailable

router = APIRouter(tags=["system"])


@router.get("/healthz", summary="The process is up")
def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/readyz", summary="The database answers")
def readyz(session: SessionDep) -> dict[str, str]:
    try:
        session.exec(text("SELECT 1"))
    except Exception as exc:  # any driver error means not ready
        raise Unavailable(f"the database does not answer: {type(exc).__name__}") from None
    return {"status": "ready"}
