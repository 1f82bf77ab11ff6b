"""The keys of fight steps logged before step keys existed, for what
still brings such steps in after migration 0014 ran: a campaign bundle exported before it.

One definition: the map is migration 0014's own (`alembic/versions/…_0014.py`: its `(rule, what)`
literals and patterns, frozen there as data, and its `filled`), read from that revision's file
itself. The migration imports nothing of the app (a migration stays frozen: a later
change here cannot change what it did), and this module copies nothing of it: the import keys a
step exactly as the migration keyed the stored ones. The app needs its migrations at run time
anyway (`python -m app serve` applies them first)."""

from __future__ import annotations

import importlib.util
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

REVISION = "0014"  # the migration that keyed the steps stored before keys existed


@cache
def _migration() -> ModuleType:
    """Revision 0014's module, loaded alone from the versions folder `upgrade_head` uses (by its
    file name's `_<revision>` suffix, checked against its `revision`): Alembic's own look-up by id
    would load every revision first (~0.3 s of CPU)."""
    # imported here, not at the top: Alembic (~0.2 s of CPU) loads at the first bundle imported,
    # not in every worker that never imports one (`python -m app serve` loads it anyway)
    from app.core.migrations import alembic_config

    versions = Path(alembic_config().get_main_option("script_location") or "") / "versions"
    [path] = versions.glob(f"*_{REVISION}.py")
    spec = importlib.util.spec_from_file_location(f"alembic_revision_{REVISION}", path)
    if spec is None or spec.loader is None:  # pragma: no cover  (a .py file)
        raise ImportError(path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if module.revision != REVISION:  # pragma: no cover  (the file names follow alembic.ini's template)
        raise ImportError(f"{path} is revision {module.revision}, not {REVISION}")
    return module


def with_step_keys(body: Any) -> Any:
    """`body` with a `key` in each step that has none, as migration 0014 gives it (right after
    `rule`), at any depth (a reroll's or a revert's nested steps); a step already keyed keeps its
    key, a step of a text the map does not know stays without one."""
    filled, _changed = _migration().filled(body)
    return filled
