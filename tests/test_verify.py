"""The independent dice verifier (app/verify.py, API.md "Verifiable server dice"): `derive` against
a second implementation written differently and against vectors computed with openssl, `check` on
synthetic logs, and the command line against a tiny standard-library server serving JSON."""

from __future__ import annotations

import ast
import copy
import hashlib
import hmac
import json
import os
import subprocess
import sys
import threading
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from itertools import count
from pathlib import Path
from typing import Any

import pytest

from app import verify
from app.verify import check, derive

ROOT = Path(__file__).resolve().parents[1]
SEED = bytes(range(32)).hex()  # 000102…1f
E1, E2 = "ep1", "ep2"
SALTS = ["alice", "bob"]


def oracle(seed_hex: str, epoch_id: str, k: int, salts: list[str], faces: int) -> tuple[int, int, int]:
    """The derivation as API.md words it, by another road: the message joined with newlines, the
    whole digest as one integer cut into words by shifts. Returns (die, j, word index used)."""
    key = bytes.fromhex(seed_hex)
    text = "\n".join([f"{epoch_id}:{k}", *salts])
    bound = (1 << 32) // faces * faces
    for j in count():
        whole = int.from_bytes(hmac.digest(key, f"{text}:{j}".encode(), "sha256"), "big")
        for index in range(8):
            u = (whole >> (224 - 32 * index)) & 0xFFFFFFFF
            if u < bound:
                return u % faces + 1, j, index
    raise AssertionError("unreachable")


# computed with `printf 'e1:7\nalice\nbob:0' | openssl dgst -sha256 -mac HMAC -macopt hexkey:0001…1f`,
# the first word of each digest under its bound: (epoch, k, salts, faces, first word, die)
OPENSSL = [
    ("e1", 0, [], 100, 0x8D9DBBD4, 93),
    ("e1", 7, ["alice", "bob"], 20, 0x1CE35B5D, 10),
    ("e1", 3, ["été"], 6, 0x4E7370A4, 5),
    ("e1", 12, ["sel"], 1000, 0x987CF0BE, 927),
]


@pytest.mark.parametrize(("epoch", "k", "salts", "faces", "word", "die"), OPENSSL)
def test_derive_gives_the_openssl_vectors(epoch, k, salts, faces, word, die):
    assert word % faces + 1 == die  # the vector is self-consistent
    assert derive(SEED, epoch, k, salts, faces) == die
    assert oracle(SEED, epoch, k, salts, faces) == (die, 0, 0)


@pytest.mark.parametrize("faces", [2, 6, 20, 100, 1000])
@pytest.mark.parametrize("salts", [[], ["x"], ["alice", "bob"], ["é ü", "42", "the GM's"]])
def test_derive_agrees_with_the_independent_implementation(faces, salts):
    values = [derive(SEED, E1, k, salts, faces) for k in range(40)]
    assert values == [oracle(SEED, E1, k, salts, faces)[0] for k in range(40)]
    assert all(1 <= v <= faces for v in values)


def test_derive_depends_on_the_seed_the_epoch_the_number_and_each_salt():
    other_seed = "ff" * 32
    base = [derive(SEED, E1, k, SALTS, 1000) for k in range(20)]
    assert base != [derive(other_seed, E1, k, SALTS, 1000) for k in range(20)]
    assert base != [derive(SEED, E2, k, SALTS, 1000) for k in range(20)]
    assert base != [derive(SEED, E1, k, ["alice"], 1000) for k in range(20)]
    assert base != [derive(SEED, E1, k, ["bob", "alice"], 1000) for k in range(20)]  # the salts' order
    assert base != [derive(SEED, E1, k + 1, SALTS, 1000) for k in range(20)]


# 2**31 + 1 faces: the bound is 2**31 + 1, so almost half the words are rejected
HALF = 2**31 + 1


def test_a_rejected_first_word_moves_to_the_next_word():
    k = next(k for k in count() if oracle(SEED, E1, k, SALTS, HALF)[1:] == (0, 1))
    die, j, index = oracle(SEED, E1, k, SALTS, HALF)
    first = int.from_bytes(hmac.digest(bytes.fromhex(SEED), f"{E1}:{k}\nalice\nbob:0".encode(), "sha256")[:4], "big")
    assert first >= HALF  # rejected: the value it would give is not the die
    assert derive(SEED, E1, k, SALTS, HALF) == die != first % HALF + 1


def test_a_wholly_rejected_digest_moves_to_the_next_counter():
    k = next(k for k in range(5000) if oracle(SEED, E1, k, SALTS, HALF)[1] >= 1)
    die, j, _ = oracle(SEED, E1, k, SALTS, HALF)
    assert j >= 1 and derive(SEED, E1, k, SALTS, HALF) == die


def test_derive_refuses_a_die_without_faces():
    with pytest.raises(ValueError):
        derive(SEED, E1, 0, [], 0)
    assert derive(SEED, E1, 0, [], 1) == 1


def test_the_verifier_imports_nothing_but_the_standard_library():
    tree = ast.parse((ROOT / "app" / "verify.py").read_text(encoding="utf-8"))
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.level == 0}
    assert imported and all(name.split(".")[0] in sys.stdlib_module_names | {"__future__"} for name in imported), (
        imported
    )
    assert not any(isinstance(node, ast.ImportFrom) and node.level for node in ast.walk(tree))  # no relative import


# --- check() on synthetic logs ----------------------------------------------------------------


def die(epoch: str, k: int, faces: int, purpose: str = "test", value: int | None = None) -> dict[str, Any]:
    salts = SALTS if epoch == E1 else []
    real = derive(SEED, epoch, k, salts, faces)
    return {"die": f"d{faces}", "value": real if value is None else value, "purpose": purpose, "epoch": epoch, "k": k}


def epochs() -> list[dict[str, Any]]:
    """E2 current (2 dice, not revealed), E1 revealed (6 dice), newest first."""
    commitment = hashlib.sha256(bytes.fromhex(SEED)).hexdigest()
    return [
        {"id": E2, "campaign_id": "C1", "commitment": "ab" * 32, "salts": [], "dice": 2, "revealed_at": None},
        {"id": E1, "campaign_id": "C1", "commitment": commitment, "salts": SALTS, "dice": 6, "seed": SEED},
    ]


def log() -> list[dict[str, Any]]:
    """E1's dice 0-4 (5 hidden from this caller) in a test, a roll and a fight, one of E2's, one table die."""
    fight = {
        "id": "L3",
        "kind": "combat",
        "actions": [{"rolls": [die(E1, 3, 20, "attack")], "tie": {"die": "d20", "value": 4}}],
        "rolls": [die(E1, 4, 6, "damage")],
    }
    return [
        {"id": "L5", "kind": "roll", "rolls": [die(E2, 0, 100)]},
        {"id": "L4", "kind": "test", "provenance": "table", "rolls": [{"die": "d100", "value": 12, "purpose": "test"}]},
        fight,
        {"id": "L2", "kind": "roll", "rolls": [die(E1, 1, 6, "2d6"), die(E1, 2, 6, "2d6")]},
        {"id": "L1", "kind": "test", "rolls": [die(E1, 0, 100)]},
    ]


def test_a_good_log_checks_every_revealed_die_and_reports_the_rest():
    report = check(epochs(), log())
    assert report.ok and report.mismatches == [] and report.failures == []
    assert (report.checked, report.unrevealed, report.skipped) == (5, 1, 1)
    e2, e1 = report.epochs
    assert (e1.checked, e1.not_visible, e1.commitment_ok) == (5, [5], True)
    assert (e2.revealed, sorted(e2.seen), e2.not_visible) == (False, [0], [])
    assert report.lines() == [
        "epochs: 2 (1 revealed, 1 not yet revealed)",
        "epoch ep2: not yet revealed, 1 of its 2 dice in your log",
        "epoch ep1: revealed, commitment ok, 5 of its 6 dice checked, 1 not visible to you (k=5)",
        "dice checked: 5, mismatches: 0",
        "not yet revealed: 1 dice; outside any epoch (table, seed, imported): 1 dice",
        "OK: every server die checked matches its revealed epoch",
    ]


def test_one_altered_value_is_exactly_one_mismatch():
    entries = log()
    attack = entries[2]["actions"][0]["rolls"][0]
    real = attack["value"]
    attack["value"] = real % 20 + 1
    report = check(epochs(), entries)
    assert report.mismatches == [f"MISMATCH epoch=ep1 k=3 entry=L3 die=d20 logged={real % 20 + 1} derived={real}"]
    assert report.failures == [] and not report.ok and report.checked == 5


def test_an_altered_commitment_fails_and_checks_no_die_of_that_epoch():
    altered = epochs()
    altered[1]["commitment"] = "00" * 32
    report = check(altered, log())
    derived = hashlib.sha256(bytes.fromhex(SEED)).hexdigest()
    assert report.failures == [f"COMMITMENT epoch=ep1 commitment={'00' * 32} sha256(seed)={derived}"]
    assert not report.ok and report.checked == 0 and report.epochs[1].commitment_ok is False


def test_a_seed_that_is_not_64_lowercase_hex_fails():
    altered = epochs()
    altered[1]["seed"] = SEED.upper()
    assert check(altered, log()).failures == [
        f"COMMITMENT epoch=ep1 seed='{SEED.upper()}' is not 64 lowercase hex digits"
    ]


def test_two_entries_claiming_one_number_fail():
    entries = log()
    entries.append({"id": "L0", "kind": "test", "rolls": [die(E1, 0, 100)]})
    report = check(epochs(), entries)
    assert report.failures == ["DUPLICATE epoch=ep1 k=0 claimed by 2 dice: entry=L1,L0"] and not report.ok


def test_one_die_shown_twice_in_its_own_entry_is_one_die():
    entries = log()
    entries[2]["summary"] = {"damage": copy.deepcopy(entries[2]["rolls"][0])}
    report = check(epochs(), entries)
    assert report.ok and report.checked == 5


def test_a_number_the_epoch_does_not_count_and_an_unknown_epoch_fail():
    entries = log()
    entries[0]["rolls"].append(die(E2, 2, 100))  # E2 counts 2 dice: k 0 and 1
    entries[1]["rolls"].append({**die(E1, 0, 100), "epoch": "nope", "k": 0})
    report = check(epochs(), entries)
    assert report.failures == [
        "OUT OF RANGE epoch=ep2 k=2 entry=L5: the epoch counts 2 dice",
        "UNKNOWN EPOCH epoch=nope k=0 entry=L4",
    ]


# --- the command line against a tiny server ----------------------------------------------------

TOKEN = "pl_secret"


class Stub(ThreadingHTTPServer):
    epochs: list[dict[str, Any]]
    entries: list[dict[str, Any]]


class Handler(BaseHTTPRequestHandler):
    """`GET /v1/campaigns/C1/dice-epochs` and `…/rolls` (two entries a page, whatever the limit, so
    that the verifier follows the cursor), for the bearer of TOKEN only."""

    server: Stub

    def do_GET(self) -> None:
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        if self.headers.get("Authorization") != f"Bearer {TOKEN}":
            return self.answer(401, {"code": "unauthorized", "detail": "no valid token"})
        if url.path == "/v1/campaigns/C1/dice-epochs":
            return self.answer(200, {"items": self.server.epochs})
        if url.path == "/v1/campaigns/C1/rolls" and query.get("limit") == "200":
            start = int(query.get("cursor", "0"))
            page = self.server.entries[start : start + 2]
            more = start + 2 < len(self.server.entries)
            return self.answer(200, {"items": page, "next_cursor": str(start + 2) if more else None})
        return self.answer(404, {"code": "not-found"})

    def answer(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def stub() -> Iterator[Stub]:
    server = Stub(("127.0.0.1", 0), Handler)
    server.epochs, server.entries = epochs(), log()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def url_of(server: Stub) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}"


def run(*args: str, env: dict[str, str] | None = None, isolated: bool = False) -> subprocess.CompletedProcess[str]:
    """`python -m app.verify …`, or (`isolated`) the file alone under `python -I -S`: no site
    packages, no environment, not even the repository on the path."""
    command = (
        [sys.executable, "-I", "-S", str(ROOT / "app" / "verify.py")]
        if isolated
        else [sys.executable, "-m", "app.verify"]
    )
    return subprocess.run(
        [*command, *args], cwd=ROOT, env=env or os.environ.copy(), capture_output=True, text=True, timeout=60
    )


def test_the_command_line_passes_a_good_log_and_prints_the_summary(stub):
    done = run("--url", url_of(stub), "--campaign", "C1", env={**os.environ, "JDR_TOKEN": TOKEN})
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines() == ["campaign C1: 5 log entries read", *check(epochs(), log()).lines()]
    assert "dice checked: 5, mismatches: 0" in done.stdout and done.stderr == ""


def test_the_command_line_run_in_isolation_finds_the_tampered_die(stub):
    real = stub.entries[4]["rolls"][0]["value"]
    stub.entries[4]["rolls"][0]["value"] = 100 if real != 100 else 1
    done = run("--url", url_of(stub) + "/", "--campaign", "C1", "--token", TOKEN, isolated=True)
    assert done.returncode == 1, done.stdout + done.stderr
    logged = stub.entries[4]["rolls"][0]["value"]
    assert f"MISMATCH epoch=ep1 k=0 entry=L1 die=d100 logged={logged} derived={real}" in done.stdout.splitlines()
    assert (
        "dice checked: 5, mismatches: 1" in done.stdout
        and done.stdout.splitlines()[-1] == "FAILED: see the lines above"
    )


def test_the_command_line_fails_on_a_commitment_that_does_not_match(stub):
    stub.epochs[1]["commitment"] = "00" * 32
    done = run("--url", url_of(stub), "--campaign", "C1", "--token", TOKEN)
    assert done.returncode == 1 and "COMMITMENT epoch=ep1 commitment=" + "00" * 32 in done.stdout


def test_the_command_line_says_why_it_cannot_check_with_status_2(stub):
    done = run("--url", url_of(stub), "--campaign", "C1", "--token", "pl_wrong")
    assert done.returncode == 2 and done.stdout == ""
    assert "HTTP 401 unauthorized no valid token" in done.stderr and "Traceback" not in done.stderr
    done = run("--url", url_of(stub), "--campaign", "C1", env={k: v for k, v in os.environ.items() if k != "JDR_TOKEN"})
    assert done.returncode == 2 and "a token is needed" in done.stderr
    done = run("--campaign", "C1", "--token", TOKEN)
    assert done.returncode == 2 and "--url" in done.stderr and "Traceback" not in done.stderr
    done = run("--url", "http://127.0.0.1:9", "--campaign", "C1", "--token", TOKEN)  # nothing answers there
    assert done.returncode == 2 and "GET http://127.0.0.1:9/v1/campaigns/C1/rolls" in done.stderr
    assert "Traceback" not in done.stderr


def test_main_in_process_returns_the_status(stub, capsys):
    assert verify.main(["--url", url_of(stub), "--campaign", "C1", "--token", TOKEN]) == 0
    assert "OK: every server die checked matches its revealed epoch" in capsys.readouterr().out


def test_an_epoch_with_a_null_seed_is_not_revealed_yet():
    listed = epochs()
    listed[0]["seed"] = None
    report = check(listed, log())
    assert report.ok and report.epochs[0].revealed is False and report.unrevealed == 1
