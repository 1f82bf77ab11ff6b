"""Check a campaign's server dice against its revealed dice epochs (docs/verify.md).

    python -m app.verify --url http://127.0.0.1:8000 --campaign CID --token TOKEN

Standard library only, and nothing from the rest of `app`: a player can read this one file, run
it with any Python 3.11 and trust no code of the server it checks (`python3 app/verify.py …` works
as well). It reads the caller's whole roll log and the campaign's dice epochs, then checks that
each revealed epoch's seed hashes to the commitment published before its first die, that every
server die of a revealed epoch is the value its seed derives (API.md, "Verifiable server dice"),
that no two dice claim the same number and that each number is one the epoch counts. Dice of an
epoch not yet revealed, and the numbers a revealed epoch counts but the caller's log does not show
(hidden GM rolls, hidden characters), are reported, not failed.

Exit status: 0 when every checked die matches, 1 on a mismatch or any other failed check, 2 on a
usage or HTTP error.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import os
import re
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

WORD = 2**32  # each HMAC output is read as eight unsigned 32-bit words
SEED = re.compile(r"^[0-9a-f]{64}$")
DIE = re.compile(r"^d([1-9][0-9]*)$")
PAGE = 200  # log entries asked for per page
TIMEOUT = 30.0  # seconds for one HTTP request
SHOWN_KS = 12  # missing numbers listed in full on a line before "…"


def message(epoch_id: str, k: int, salts: Sequence[str]) -> bytes:
    """The HMAC message of die `k` before its counter: `"{epoch_id}:{k}"`, then each salt after a newline."""
    return (f"{epoch_id}:{k}" + "".join("\n" + salt for salt in salts)).encode("utf-8")


def derive(seed_hex: str, epoch_id: str, k: int, salts: Sequence[str], faces: int) -> int:
    """Die `k` of epoch `epoch_id`, a die of `faces` faces (1..faces), from the epoch's revealed seed.

    For j = 0, 1, 2…: h_j = HMAC-SHA256(seed, msg + b":" + str(j)) read as eight big-endian 32-bit
    words u; the first u below the largest multiple of `faces` not above 2**32 gives u % faces + 1
    (the words above it are dropped so that every face is exactly as likely)."""
    if not 1 <= faces <= WORD:
        raise ValueError(f"a die has 1 to {WORD} faces, not {faces}")
    key = bytes.fromhex(seed_hex)
    msg = message(epoch_id, k, salts)
    limit = WORD - WORD % faces
    j = 0
    while True:
        digest = hmac.new(key, msg + b":" + str(j).encode("ascii"), hashlib.sha256).digest()
        for start in range(0, len(digest), 4):
            u = int.from_bytes(digest[start : start + 4], "big")
            if u < limit:
                return u % faces + 1
        j += 1


def commitment_of(seed_hex: str) -> str:
    """The lowercase hex SHA-256 of the seed's 32 bytes, as the epoch published it before its first die."""
    return hashlib.sha256(bytes.fromhex(seed_hex)).hexdigest()


@dataclass
class Die:
    """One server die as the log shows it, and where: the entry's id and the path inside it."""

    epoch: str
    k: int
    die: str
    value: Any
    entry: str
    path: str


@dataclass
class EpochReport:
    id: str
    revealed: bool
    dice: int  # how many server dice the epoch counts, those hidden from the caller included
    commitment_ok: bool | None = None  # None: not revealed, nothing to check yet
    seen: set[int] = field(default_factory=set)  # the numbers the caller's log shows
    checked: int = 0

    @property
    def not_visible(self) -> list[int]:
        """The numbers of a revealed epoch the caller's log does not show."""
        return [k for k in range(self.dice) if k not in self.seen] if self.revealed else []


@dataclass
class Report:
    epochs: list[EpochReport] = field(default_factory=list)
    checked: int = 0  # dice recomputed from a revealed seed
    unrevealed: int = 0  # dice of epochs not yet revealed
    skipped: int = 0  # dice outside any epoch (entered at the table, seeded, imported)
    mismatches: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)  # every failed check but the mismatches

    @property
    def ok(self) -> bool:
        return not self.mismatches and not self.failures

    def lines(self) -> list[str]:
        """The summary, one line per epoch, then one line per failed check."""
        revealed = sum(epoch.revealed for epoch in self.epochs)
        out = [
            f"epochs: {len(self.epochs)} ({revealed} revealed, {len(self.epochs) - revealed} not yet revealed)",
        ]
        for epoch in self.epochs:
            if not epoch.revealed:
                out.append(
                    f"epoch {epoch.id}: not yet revealed, {len(epoch.seen)} of its {epoch.dice} dice in your log"
                )
                continue
            commitment = "commitment ok" if epoch.commitment_ok else "COMMITMENT FAILED"
            line = f"epoch {epoch.id}: revealed, {commitment}, {epoch.checked} of its {epoch.dice} dice checked"
            hidden = epoch.not_visible
            if hidden:
                line += f", {len(hidden)} not visible to you (k={_ranges(hidden)})"
            out.append(line)
        out.append(f"dice checked: {self.checked}, mismatches: {len(self.mismatches)}")
        out.append(
            f"not yet revealed: {self.unrevealed} dice; outside any epoch (table, seed, imported): {self.skipped} dice"
        )
        out += self.mismatches + self.failures
        out.append(
            "OK: every server die checked matches its revealed epoch" if self.ok else "FAILED: see the lines above"
        )
        return out


def _ranges(ks: list[int]) -> str:
    """`0-2,5,9` for [0, 1, 2, 5, 9], the first SHOWN_KS runs only."""
    runs: list[list[int]] = []
    for k in ks:
        if runs and k == runs[-1][1] + 1:
            runs[-1][1] = k
        else:
            runs.append([k, k])
    text = ",".join(f"{a}" if a == b else f"{a}-{b}" for a, b in runs[:SHOWN_KS])
    return text + (",…" if len(runs) > SHOWN_KS else "")


def server_dice(entries: Sequence[Any]) -> tuple[list[Die], int]:
    """Every dict of the entries carrying both `epoch` and `k` (in `rolls` or nested anywhere, as
    a fight's entries hold them), and how many other dice (`die` and `value`, no epoch) there are."""
    found: list[Die] = []
    others = 0

    def walk(node: Any, entry: str, path: str) -> None:
        nonlocal others
        if isinstance(node, dict):
            if "epoch" in node and "k" in node:
                found.append(Die(str(node["epoch"]), node["k"], str(node.get("die")), node.get("value"), entry, path))
                return
            if "die" in node and "value" in node and "purpose" in node:
                others += 1
            for key, value in node.items():
                walk(value, entry, f"{path}.{key}")
        elif isinstance(node, list):
            for index, value in enumerate(node):
                walk(value, entry, f"{path}[{index}]")

    for number, entry in enumerate(entries):
        entry_id = str(entry.get("id", f"#{number}")) if isinstance(entry, dict) else f"#{number}"
        walk(entry, entry_id, "")
    return found, others


def _same_die(dice: list[Die]) -> bool:
    """One die shown in several places of one entry (its summary and its rolls), not two dice."""
    first = dice[0]
    return all(d.entry == first.entry and d.die == first.die and d.value == first.value for d in dice)


def _check_commitment(epoch: dict[str, Any], report: EpochReport, failures: list[str]) -> str | None:
    """The revealed seed, if it is well formed and hashes to the commitment; else the failure noted."""
    seed = epoch.get("seed")
    if not isinstance(seed, str) or not SEED.match(seed):
        report.commitment_ok = False
        failures.append(f"COMMITMENT epoch={report.id} seed={seed!r} is not 64 lowercase hex digits")
        return None
    derived = commitment_of(seed)
    report.commitment_ok = derived == str(epoch.get("commitment", "")).lower()
    if not report.commitment_ok:
        failures.append(f"COMMITMENT epoch={report.id} commitment={epoch.get('commitment')} sha256(seed)={derived}")
        return None
    return seed


def check(epochs: Sequence[dict[str, Any]], entries: Sequence[Any]) -> Report:
    """Check the server dice of `entries` (log entries, any order) against `epochs` (as
    `GET …/dice-epochs` lists them): commitments, values, numbers claimed once and in range."""
    report = Report()
    by_id: dict[str, tuple[dict[str, Any], EpochReport]] = {}
    seeds: dict[str, str | None] = {}
    for epoch in epochs:
        state = EpochReport(str(epoch["id"]), epoch.get("seed") is not None, int(epoch.get("dice", 0)))
        by_id[state.id] = (epoch, state)
        report.epochs.append(state)
        if state.revealed:
            seeds[state.id] = _check_commitment(epoch, state, report.failures)
    dice, report.skipped = server_dice(entries)
    claims: dict[tuple[str, Any], list[Die]] = {}
    for die in dice:
        claims.setdefault((die.epoch, die.k), []).append(die)
    for (epoch_id, k), claimed in claims.items():
        die = claimed[0]
        where = f"epoch={epoch_id} k={k} entry={die.entry}"
        if not _same_die(claimed):
            entries_named = ",".join(dict.fromkeys(d.entry for d in claimed))
            report.failures.append(
                f"DUPLICATE epoch={epoch_id} k={k} claimed by {len(claimed)} dice: entry={entries_named}"
            )
        if epoch_id not in by_id:
            report.failures.append(f"UNKNOWN EPOCH {where}")
            continue
        epoch, state = by_id[epoch_id]
        if not isinstance(k, int) or isinstance(k, bool) or not 0 <= k < state.dice:
            report.failures.append(f"OUT OF RANGE {where}: the epoch counts {state.dice} dice")
            continue
        state.seen.add(k)
        if not state.revealed:
            report.unrevealed += 1
            continue
        seed = seeds[epoch_id]
        faces = DIE.match(die.die)
        if seed is None or faces is None:
            if faces is None:
                report.failures.append(f"BAD DIE {where} die={die.die}")
            continue
        salts = [str(salt) for salt in epoch.get("salts", [])]
        for each in claimed:
            derived = derive(seed, epoch_id, k, salts, int(faces[1]))
            if type(each.value) is not int or each.value != derived:
                logged = f"die={each.die} logged={each.value} derived={derived}"
                report.mismatches.append(f"MISMATCH epoch={epoch_id} k={k} entry={each.entry} {logged}")
        state.checked += 1
        report.checked += 1
    return report


# --- over HTTP ------------------------------------------------------------------------------


class Refused(Exception):
    """A usage or HTTP error: its message is printed, the exit status is 2."""


def get_json(url: str, token: str) -> Any:
    request = urllib.request.Request(
        url, headers={"Authorization": f"Bearer {token}", "Accept": "application/json"}, method="GET"
    )
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            return json.loads(response.read().decode("utf-8"))
    except urllib.error.HTTPError as error:
        raise Refused(f"GET {url}: HTTP {error.code} {_problem(error)}") from None
    except (urllib.error.URLError, OSError) as error:
        raise Refused(f"GET {url}: {getattr(error, 'reason', error)}") from None
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise Refused(f"GET {url}: the answer is not JSON") from None


def _problem(error: urllib.error.HTTPError) -> str:
    """The problem's code and detail when the body is one, else the reason."""
    try:
        body = json.loads(error.read().decode("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return str(error.reason)
    if isinstance(body, dict):
        return " ".join(str(body[key]) for key in ("code", "detail") if key in body) or str(error.reason)
    return str(error.reason)


def log_pages(base: str, token: str) -> Iterator[dict[str, Any]]:
    """Every entry of the caller's roll log, newest first, page after page."""
    cursor: str | None = None
    seen: set[str] = set()
    while True:
        query = {"limit": str(PAGE), **({"cursor": cursor} if cursor else {})}
        page = get_json(f"{base}/rolls?{urllib.parse.urlencode(query)}", token)
        if not isinstance(page, dict) or not isinstance(page.get("items"), list):
            raise Refused("the roll log's answer has no `items` list")
        yield from page["items"]
        cursor = page.get("next_cursor")
        if not cursor:
            return
        if cursor in seen:
            raise Refused(f"the roll log gave the cursor {cursor} twice")
        seen.add(cursor)


def fetch(url: str, campaign: str, token: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(epochs, log entries). The log is read first: an epoch's count only grows, so every die the
    log shows is counted by the epochs read after it, even while the table keeps rolling."""
    base = f"{url.rstrip('/')}/v1/campaigns/{urllib.parse.quote(campaign, safe='')}"
    entries = list(log_pages(base, token))
    answer = get_json(f"{base}/dice-epochs", token)
    if not isinstance(answer, dict) or not isinstance(answer.get("items"), list):
        raise Refused("the dice epochs' answer has no `items` list")
    epochs = answer["items"]
    if not all(isinstance(epoch, dict) and "id" in epoch for epoch in epochs):
        raise Refused("an epoch without an `id`")
    return epochs, entries


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m app.verify",
        description="Check a campaign's server dice against its revealed dice epochs.",
        epilog="Exit status: 0 every checked die matches, 1 a mismatch or a failed check, 2 a usage or HTTP error.",
    )
    parser.add_argument("--url", required=True, help="the server, e.g. http://127.0.0.1:8000")
    parser.add_argument("--campaign", required=True, help="the campaign id")
    parser.add_argument("--token", default=os.environ.get("JDR_TOKEN"), help="your token (default: $JDR_TOKEN)")
    args = parser.parse_args(argv)
    if not args.token:
        print("python -m app.verify: a token is needed: --token or JDR_TOKEN", file=sys.stderr)
        return 2
    if not args.url.startswith(("http://", "https://")):
        print(f"python -m app.verify: --url must start with http:// or https://, not {args.url!r}", file=sys.stderr)
        return 2
    try:
        epochs, entries = fetch(args.url, args.campaign, args.token)
        report = check(epochs, entries)
    except Refused as error:
        print(f"python -m app.verify: {error}", file=sys.stderr)
        return 2
    except (KeyError, TypeError, ValueError) as error:
        print(f"python -m app.verify: an answer of unexpected shape ({type(error).__name__}: {error})", file=sys.stderr)
        return 2
    print(f"campaign {args.campaign}: {len(entries)} log entries read")
    print("\n".join(report.lines()))
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
