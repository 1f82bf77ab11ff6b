"""A content-addressed cache, outside the repository, for the suite's expensive generated artefacts
(issue 22 item 1): the TypeScript scenario's node_modules and compiled scenario, the Node linters'
reports on the served spec, the generated Python client. Each depends only on committed inputs and
pinned tools, so an entry is named by the hash of every one of them (`key`): a change of any input
names another entry, which is built anew, and an entry once written is never rewritten (a build
goes to a temporary directory renamed into place whole, so a killed build leaves nothing to serve).

Where: `$JDR_TEST_CACHE`, else `${XDG_CACHE_HOME:-~/.cache}/jdr-rules-api`. `JDR_TEST_CACHE=off`
builds everything afresh in a temporary directory (a cold run, every step run); a kind keeps its
`KEEP` most recently used entries."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

KEEP = 3  # entries kept per kind (the newest used): the current inputs and a branch or two


def root() -> Path | None:
    """The cache's directory, or None when it is off (`JDR_TEST_CACHE=off`)."""
    given = os.environ.get("JDR_TEST_CACHE", "")
    if given.lower() in ("off", "0", "no", "false"):
        return None
    if given:
        return Path(given)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "jdr-rules-api"


def key(*inputs: str | bytes | Path) -> str:
    """The hash of every input, each length-prefixed (so no two lists of inputs run together): a
    file's name and bytes, a text or bytes as they are."""
    digest = hashlib.sha256()
    for item in inputs:
        if isinstance(item, Path):
            data = item.name.encode() + b"\0" + item.read_bytes()
        elif isinstance(item, str):
            data = item.encode()
        else:
            data = item
        digest.update(len(data).to_bytes(8, "big") + data)
    return digest.hexdigest()[:32]


def entry(kind: str, name: str, build: Callable[[Path], None]) -> Path:
    """The directory of `kind`/`name`, built by `build(directory)` when it is not there yet (only a
    build that returned is kept; one that raised leaves nothing). With the cache off, a fresh build
    in a temporary directory each time."""
    base = root()
    if base is None:
        where = Path(tempfile.mkdtemp(prefix=f"jdr-{kind}-"))
        build(where)
        return where
    final = base / kind / name
    if final.is_dir():
        os.utime(final)  # used: the last to be pruned
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=final.parent))
    try:
        build(work)
        try:
            work.rename(final)
        except OSError:  # another process put the same entry there first: same inputs, same artefact
            if not final.is_dir():
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    _prune(final.parent, keep=final)
    return final


def _prune(kind: Path, keep: Path) -> None:
    """The kind's entries beyond the `KEEP` most recently used gone (and builds left by a killed run
    over an hour ago)."""
    entries = [p for p in kind.iterdir() if p.is_dir() and not p.name.startswith(".")]
    entries.sort(key=lambda p: p.stat().st_mtime, reverse=True)
    for old in entries[KEEP:]:
        if old != keep:
            shutil.rmtree(old, ignore_errors=True)
    for left in kind.glob(".*"):
        if time.time() - left.stat().st_mtime > 3600:
            shutil.rmtree(left, ignore_errors=True)
