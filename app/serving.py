"""What `python -m app serve` runs in each worker: the app, or the reason it cannot start.

uvicorn's supervisor stops only on a worker's exit status `STARTUP_FAILURE` (a lifespan that
failed); an exception while importing the app exits with 1, which it takes for a crash and
respawns forever. Loading the app through this factory turns any failure to load it (a module
missing from the install, a setting the app refuses) into that status, with the reason logged once.
"""

from __future__ import annotations

import logging
import sys
import traceback
from typing import Any

from uvicorn.config import STARTUP_FAILURE

log = logging.getLogger("app")


def load() -> Any:
    """The ASGI app (`app.main:app`); on failure, the reason logged and the worker exits STARTUP_FAILURE."""
    try:
        from app.main import app
    except Exception as exc:
        log.error("the app cannot start: %s: %s\n%s", type(exc).__name__, exc, traceback.format_exc())
        sys.exit(STARTUP_FAILURE)
    return app
