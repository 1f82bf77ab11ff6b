"""Liveness and readiness."""

from __future__ import annotations

import anyio
from fastapi import APIRouter
from sqlalchemy import text
from sqlmodel import Session

from app.api.boundary import BoundaryRoute
from app.api.deps import SessionFactory, read
from app.kit.errors import Unavailable
from app.models.schemas import Health, Readiness

router = APIRouter(tags=["system"], route_class=BoundaryRoute)
READY_WITHIN_SECONDS = 2.0


@router.get("/healthz", summary="The process is up (never touches the database)")
async def healthz() -> Health:
    return Health(status="ok")


def _ping(session: Session) -> None:
    session.connection().execute(text("SELECT 1"))


@router.get("/readyz", summary="The database answers (within 2 s, or 503)")
async def readyz(sessions: SessionFactory) -> Readiness:
    """Bounded in time whatever the load: a database that does not answer, or a
    threadpool too busy to ask it, within 2 s is a 503 with Retry-After."""
    try:
        with anyio.fail_after(READY_WITHIN_SECONDS):
            await read(sessions, _ping)
    except TimeoutError:
        raise Unavailable(
            f"the database did not answer within {READY_WITHIN_SECONDS:g} s", retry_after=1, code="timeout"
        ) from None
    except Exception as exc:  # any driver error means not ready
        raise Unavailable(f"the database does not answer: {type(exc).__name__}", retry_after=1) from None
    return Readiness(status="ready")
