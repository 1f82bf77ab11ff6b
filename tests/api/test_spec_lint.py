"""Issue 25, "Done means": the served openapi.json lints clean. Redocly (`lint`, recommended rules)
and Spectral (`spectral:oas`), pinned in tests/ts/package.json, report 0 errors, and no warning
beyond the few listed here with their reason; openapi-typescript (with the options README
recommends) generates without a warning (openapi-python-client's are checked by
test_generated_client.py). Node and npm are installed on CI; without them the test skips, unless
JDR_REQUIRE_NODE=1 (.ci/run sets it)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections import Counter
from pathlib import Path

import pytest

from tests import typescript_build

TS = Path(__file__).resolve().parents[1] / "ts"
NODE, NPM = shutil.which("node"), shutil.which("npm")

pytestmark = [
    pytest.mark.xdist_group("typescript"),
    pytest.mark.skipif(
        (NODE is None or NPM is None) and os.environ.get("JDR_REQUIRE_NODE") != "1", reason="node and npm needed"
    ),
]

# the warnings left, each with its reason (docs/clients.md, "Generated clients", names them too)
REDOCLY_LEFT = {
    # /healthz, /readyz and GET /v1/rulesets answer no 4xx: nothing to declare
    "operation-4xx-response": 3,
    # the reroll and level-up bodies: one ruleset has the capability, and the body keeps the union
    # shape (tagged `x-ruleset`) every ruleset-dependent body has, which clients and the fuzz run read
    "no-illogical-composition-keywords": 2,
}
SPECTRAL_LEFT: dict[str, int] = {}  # every component is used (issue 25 item 3: the options too)


def _npx(*args: str, spec: str, ok: tuple[int, ...] = (0,)) -> tuple[subprocess.CompletedProcess[str], Path]:
    """`npx ARGS` in tests/ts on the served spec (`{in}/openapi.json`), its report kept in the suite's
    cache under the hash of every input (tests/typescript_build.py `npx`: the spec's text, the linters'
    configuration, node_modules' lock): the lint runs again when any of them changes."""
    configs = [TS / ".redocly.lint.yaml", TS / ".spectral.yaml"]
    try:
        return typescript_build.npx(list(args), {"openapi.json": spec}, configs, ok=ok)
    except typescript_build.BuildFailed as failed:
        pytest.fail(str(failed))


@pytest.fixture(scope="module")
def served() -> str:
    """The spec as the app serves it."""
    from fastapi.testclient import TestClient

    from app.core.config import Settings
    from app.main import create_app

    # an empty file: the spec reads no table (nor a delivery loop); a pooled SQLite connection of the
    # app may still touch its WAL files as the folder goes (seen once): the folder is best-effort
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as folder:
        settings = Settings(database_url=f"sqlite:///{folder}/spec.db", admin_token=None, webhook_delivery=False)
        app = create_app(settings)
        with TestClient(app) as client:
            r = client.get("/openapi.json")
    assert r.status_code == 200
    return r.text


def test_redocly_lint_reports_no_error_and_only_the_known_warnings(served):
    done, _ = _npx(
        "redocly",
        "lint",
        "{in}/openapi.json",
        "--config",
        ".redocly.lint.yaml",
        "--format=json",
        spec=served,
        ok=(0, 1),
    )
    problems = json.loads(done.stdout[done.stdout.index("{") :])["problems"]
    errors = [p for p in problems if p["severity"] == "error"]
    assert errors == [] and done.returncode == 0
    warnings = Counter(p["ruleId"] for p in problems if p["severity"] == "warn")
    assert dict(warnings) == REDOCLY_LEFT, [p["message"] for p in problems if p["ruleId"] not in REDOCLY_LEFT]


def test_spectral_oas_reports_no_error_and_only_the_known_warnings(served):
    done, _ = _npx(
        "spectral", "lint", "{in}/openapi.json", "--ruleset", ".spectral.yaml", "-f", "json", spec=served, ok=(0, 1)
    )
    # the report, then (none left) "No results with a severity of 'error' found!" on the same line
    results, _ = json.JSONDecoder().raw_decode(done.stdout[done.stdout.index("[") :])
    assert [r for r in results if r["severity"] == 0] == [] and done.returncode == 0  # 0: error
    warnings = Counter(r["code"] for r in results if r["severity"] == 1)
    assert dict(warnings) == SPECTRAL_LEFT, [r["message"] for r in results if r["code"] not in SPECTRAL_LEFT]


def test_openapi_typescript_generates_without_a_warning(served):
    done, out = _npx(
        "openapi-typescript",
        "{in}/openapi.json",
        "--default-non-nullable",
        "false",
        "--output",
        "{out}/s.d.ts",
        spec=served,
    )
    assert "⚠" not in done.stdout + done.stderr and "warn" not in (done.stdout + done.stderr).lower()
    types = (out / "s.d.ts").read_text()
    assert 'code: "not_your_turn"' in types and "current_version?: number" in types  # narrowed by code
