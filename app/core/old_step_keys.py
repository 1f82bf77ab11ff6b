"""The keys of fight steps logged before step keys existed (issue 27 item 2's tail), for what
still brings such steps in after migration 0014 ran: a campaign bundle exported before it.

One definition: the map is migration 0014's own (`alembic/versions/…_0014.py`: its `(rule, what)`
literals and patterns, frozen there as data, and its `filled`), read from that revision's module
as Alembic loads it. The migration imports nothing of the app (a migration stays frozen: a later
change here cannot change what it did), and this module copies nothing of it: the import keys a
step exactly as the migration keyed the stored ones. The app needs its migrations at run time
anyway (`python -m app serve` applies them first)."""

from __future__ import annotations

from functools import cache
from types import ModuleType
from typing import Any

from alembic.script import ScriptDirectory

from app.core.migrations import alembic_config

REVISION = "0014"  # the migration that keyed the steps stored before keys existed


@cache
def _migration() -> ModuleType:
    script = ScriptDirectory.from_config(alembic_config()).get_revision(REVISION)
    if script is None:  # pragma: no cover  (the revision is in the tree)
        raise LookupError(f"no alembic revision {REVISION}")
    return script.module


def with_step_keys(body: Any) -> Any:
    """`body` with a `key` in each step that has none, as migration 0014 gives it (right after
    `rule`), at any depth (a reroll's or a revert's nested steps); a step already keyed keeps its
    key, a step of a text the map does not know stays without one."""
    filled, _changed = _migration().filled(body)
    return filled
