"""Imports every module under `app` with the interpreter that runs it; exits 1 naming each module that
cannot be imported and why (a module missing from a runtime-only install is named with its importer).

Run by .ci/run with the Python of a venv built from the runtime dependencies only (`make run`'s
and the Dockerfile's), so that a module needing a dev extra fails CI instead of a newcomer's first command.
Standard library only.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
import traceback


def main() -> int:
    import app

    failures: list[str] = []
    names = [info.name for info in pkgutil.walk_packages(app.__path__, "app.")]
    for name in names:
        try:
            importlib.import_module(name)
        except Exception as exc:
            where = traceback.extract_tb(exc.__traceback__)[-1]
            failures.append(f"{name}: {type(exc).__name__}: {exc} (at {where.filename}:{where.lineno})")
    for line in failures:
        print(f"import_all: {line}", file=sys.stderr)
    print(f"import_all: {len(names) - len(failures)} of {len(names)} modules import with {sys.executable}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
