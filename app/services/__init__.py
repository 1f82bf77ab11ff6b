"""The use cases. Importing any of them registers the one handler of what a unit of work changed
in characters (`handlers`), which `uow` may not import (it would import `uow` back)."""

from app.services import handlers as _handlers  # noqa: F401
