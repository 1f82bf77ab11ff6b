"""Executable documentation: run the shell examples of Markdown files against a live server and
check what they say they print. Standard library only, so that CI can run it with the system
Python before any virtual environment exists:

    python3 tests/docs_examples.py --api http://127.0.0.1:8000 README.md docs/*.md

What runs
- A *runnable block* is a fenced block whose info string is `sh runnable` (GitHub highlights it
  as `sh`). No other block is run.
- The runnable blocks of one file run in order in ONE bash process (`set -Eeuo pipefail`), so
  variables and functions carry from block to block of the same file, never from file to file:
  each file is self-contained (its first block makes what it needs) and files run in any order,
  several at once (`--jobs`).
  Each file runs in a fresh temporary directory, with `API` exported (`--api`); blocks say
  `API=${API:-http://127.0.0.1:8000}` so that they also paste as they are.
- A command that exits non-zero fails the file (at that command), as a reader pasting it would
  see it fail. `curl -s` exits 0 on a 4xx: a block that shows a refusal shows its body.

What is checked
- An *expectation* is a line `# → <text>` on its own line after a command; the lines that follow
  it and start with `#` and at least three spaces (`#   more`), or with `# →` again, continue it.
  It states what the stdout of the commands since the previous expectation (of that file) shows.
- Matching: the expectation is split on `…` into fragments; empty fragments are dropped, and at
  least one must remain. The output is normalised: every JSON value in it (an object or an array)
  is re-serialised as Python's `json.dumps` writes it (`{"a": 1, "b": [2, 3]}`), then every run of
  whitespace, in the output and in each fragment, becomes one space. Each fragment must then
  appear in the normalised output, in order, each after the end of the previous one, and a
  fragment that starts (ends) with a letter or digit must not be preceded (followed) there by a
  letter or digit: `22` does not match `422`.
- So every `# →` line is literal output with `…` for what varies (ids, tokens, times), never prose:
  commentary goes in an ordinary comment (`# …`) or in the text around the block.
- Also refused: an expectation in a block that is not run; an expectation before any command; an
  expectation after code on the same line; a runnable file with no expectation at all; a shell block
  that talks to the server (`curl` or `$API`) without being runnable; `localhost:8000` or
  `127.0.0.1:8000` in a runnable block but in its `API=${API:-…}` default; no runnable block in
  all the files given; an unclosed fence.

On failure it prints file:line, the expectation and the output (truncated), and exits 1.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

RUNNABLE = "sh runnable"
SHELLS = {"sh", "bash", "shell", "console", "zsh"}
ARROW = "# →"
ELLIPSIS = "…"
OUTPUT_SHOWN = 1200  # characters of a failing command's output in a report
HARD_CODED = re.compile(r"(?:localhost|127\.0\.0\.1):8000")
API_DEFAULT = re.compile(r"^\s*API=\$\{API:-http://(?:localhost|127\.0\.0\.1):8000\}\s*$")
TALKS = re.compile(r"\bcurl\b|\$\{?API\b")
FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,})(.*)$")
CONTINUATION = re.compile(r"^\s*#   ")


@dataclass
class Expectation:
    line: int  # 1-based, in the Markdown file
    text: str


@dataclass
class Block:
    info: str
    line: int  # the first line of code (1-based)
    code: list[str]

    @property
    def runnable(self) -> bool:
        return " ".join(self.info.split()) == RUNNABLE

    @property
    def shell(self) -> bool:
        words = self.info.split()
        return bool(words) and words[0] in SHELLS


@dataclass
class Segment:
    """The code between two expectations (across blocks), and the expectation that ends it."""

    lines: list[tuple[int, str]] = field(default_factory=list)
    expectation: Expectation | None = None


@dataclass
class Failure:
    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


@dataclass
class FileReport:
    path: str
    blocks: int = 0
    expectations: int = 0
    seconds: float = 0.0
    failures: list[Failure] = field(default_factory=list)


# --- reading the Markdown --------------------------------------------------------------------


def blocks_of(text: str, path: str = "<text>") -> tuple[list[Block], list[Failure]]:
    """The fenced blocks of a Markdown text (CommonMark fences: ``` or ~~~, closed by a fence of
    the same character at least as long)."""
    blocks: list[Block] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        opened = FENCE.match(lines[i])
        if not opened or (opened[2][0] == "`" and "`" in opened[3]):
            i += 1
            continue
        fence, info, start = opened[2], opened[3].strip(), i + 1
        code: list[str] = []
        i += 1
        while i < len(lines):
            closing = FENCE.match(lines[i])
            if closing and closing[2][0] == fence[0] and len(closing[2]) >= len(fence) and not closing[3].strip():
                break
            code.append(lines[i])
            i += 1
        else:
            return blocks, [Failure(path, start, f"the fence opened here ({fence}{info}) is never closed")]
        blocks.append(Block(info, start + 1, code))
        i += 1
    return blocks, []


def is_expectation(line: str) -> bool:
    return line.lstrip().startswith(ARROW)


def segments_of(path: str, blocks: list[Block]) -> tuple[list[Segment], list[Failure]]:
    """The runnable code cut at each expectation, and what the file breaks of the rules above."""
    failures: list[Failure] = []
    runnable = [block for block in blocks if block.runnable]
    for block in blocks:
        if block.runnable:
            continue
        for offset, line in enumerate(block.code):
            if ARROW in line:
                failures.append(
                    Failure(
                        path,
                        block.line + offset,
                        f"an expectation in a block that is not run ({block.info or 'no info string'}): mark the block `{RUNNABLE}` or reword it",
                    )
                )
        if block.shell and any(TALKS.search(line) for line in block.code):
            failures.append(
                Failure(path, block.line, f"this shell block talks to the server but is not run: mark it `{RUNNABLE}`")
            )
    segments = [Segment()]
    for block in runnable:
        code = block.code
        j = 0
        while j < len(code):
            number, line = block.line + j, code[j]
            if HARD_CODED.search(line) and not API_DEFAULT.match(line):
                failures.append(Failure(path, number, "a hard-coded server address: use $API"))
            if ARROW in line and not is_expectation(line):
                failures.append(
                    Failure(path, number, "an expectation after code on the same line: put it on a line of its own")
                )
            if not is_expectation(line):
                segments[-1].lines.append((number, line))
                j += 1
                continue
            parts = [line.lstrip()[len(ARROW) :]]
            j += 1
            while j < len(code) and (is_expectation(code[j]) or CONTINUATION.match(code[j])):
                following = code[j].lstrip()
                parts.append(following[len(ARROW) :] if is_expectation(following) else following[1:])
                j += 1
            expectation = Expectation(number, " ".join(parts))
            if not any(command(text) for _, text in segments[-1].lines):
                failures.append(Failure(path, number, "an expectation with no command before it"))
            elif not fragments(expectation.text):
                failures.append(Failure(path, number, "an expectation that states nothing (only `…`)"))
            segments[-1].expectation = expectation
            segments.append(Segment())
    if runnable and not any(segment.expectation for segment in segments):
        failures.append(
            Failure(path, runnable[0].line, "runnable blocks with no `# →` expectation: nothing is checked")
        )
    return segments, failures


def command(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith("#")


# --- matching --------------------------------------------------------------------------------


def normalised(output: str) -> str:
    """Every JSON object or array re-serialised as `json.dumps` writes it, then whitespace runs
    made one space."""
    decoder = json.JSONDecoder()
    out: list[str] = []
    i = 0
    while i < len(output):
        char = output[i]
        if char in "{[":
            try:
                value, end = decoder.raw_decode(output, i)
            except ValueError:
                pass
            else:
                out.append(json.dumps(value, ensure_ascii=False))
                i = end
                continue
        out.append(char)
        i += 1
    return " ".join("".join(out).split())


def fragments(expectation: str) -> list[str]:
    return [" ".join(part.split()) for part in expectation.split(ELLIPSIS) if part.strip()]


def unmatched(expectation: str, output: str) -> str | None:
    """The first fragment of `expectation` the output does not show (in order), or None."""
    text = normalised(output)
    position = 0
    if not fragments(expectation):
        return "(the expectation states nothing)"
    for fragment in fragments(expectation):
        start = position
        while True:
            found = text.find(fragment, start)
            if found < 0:
                return fragment
            end = found + len(fragment)
            before_ok = not (fragment[0].isalnum() and found > 0 and text[found - 1].isalnum())
            after_ok = not (fragment[-1].isalnum() and end < len(text) and text[end].isalnum())
            if before_ok and after_ok:
                position = end
                break
            start = found + 1
    return None


def shown(output: str, limit: int = OUTPUT_SHOWN) -> str:
    output = output.rstrip("\n")
    if not output:
        return "    (no output)"
    if len(output) > limit:
        output = output[:limit] + f"… ({len(output) - limit} more characters)"
    return "\n".join("    | " + line for line in output.splitlines())


# --- running ---------------------------------------------------------------------------------

PROLOGUE = """\
set -Eeuo pipefail
trap 'if [[ -n "${FUNCNAME[0]:-}" ]]; then __docs_at=${BASH_LINENO[${#BASH_LINENO[@]}-2]}; else __docs_at=$LINENO; fi; echo "$__docs_at" >"$__DOCS_STATE/failed_at"' ERR
"""


def script_of(segments: list[Segment]) -> tuple[str, dict[int, int]]:
    """The bash script of a file's segments, each segment's stdout sent to its own file; and the
    Markdown line of each script line (for a failing command)."""
    lines = PROLOGUE.splitlines()
    where: dict[int, int] = {}
    for index, segment in enumerate(segments):
        lines.append(f'exec >"$__DOCS_STATE/out.{index}"')
        for number, text in segment.lines:
            lines.append(text)
            where[len(lines)] = number
    return "\n".join(lines) + "\n", where


def run_file(path: str, api: str, timeout: float = 120.0) -> FileReport:
    report = FileReport(path)
    started = time.monotonic()
    text = Path(path).read_text(encoding="utf-8")
    blocks, failures = blocks_of(text, path)
    report.failures += failures
    segments, failures = segments_of(path, blocks)
    report.failures += failures
    report.blocks = sum(block.runnable for block in blocks)
    report.expectations = sum(segment.expectation is not None for segment in segments)
    if report.failures or not report.blocks:
        return report
    script, where = script_of(segments)
    state = Path(tempfile.mkdtemp(prefix="docs-examples-"))
    try:
        (state / "script.sh").write_text(script, encoding="utf-8")
        work = state / "cwd"
        work.mkdir()
        env = {**os.environ, "API": api, "__DOCS_STATE": str(state)}
        process = subprocess.Popen(
            ["bash", "--noprofile", "--norc", str(state / "script.sh")],
            cwd=work,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,  # every segment's stdout goes to its own file
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            _, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            _, stderr = process.communicate()
            report.failures.append(
                Failure(path, report_line(segments, state), f"the file's blocks did not finish within {timeout:.0f} s")
            )
            return report
        ran = [index for index in range(len(segments)) if (state / f"out.{index}").exists()]
        last = ran[-1] if ran else 0
        for index in ran:
            expectation = segments[index].expectation
            if expectation is None or (process.returncode != 0 and index == last):
                continue  # the segment that failed is reported below, with its output
            output = (state / f"out.{index}").read_text(encoding="utf-8", errors="replace")
            missing = unmatched(expectation.text, output)
            if missing is not None:
                report.failures.append(
                    Failure(
                        path,
                        expectation.line,
                        f"expected: {expectation.text.strip()}\n  not found: {missing}\n  output:\n{shown(output)}",
                    )
                )
        if process.returncode != 0:
            at = state / "failed_at"
            script_line = int(at.read_text().split()[0]) if at.exists() and at.read_text().strip() else 0
            line = start_of(
                segments[last], where.get(script_line) or (segments[last].lines[-1][0] if segments[last].lines else 0)
            )
            output = (state / f"out.{last}").read_text(encoding="utf-8", errors="replace") if ran else ""
            message = f"a command exited with status {process.returncode}\n  stdout:\n{shown(output)}"
            if stderr.strip():
                message += f"\n  stderr:\n{shown(stderr)}"
            report.failures.append(Failure(path, line, message))
    finally:
        shutil.rmtree(state, ignore_errors=True)
        report.seconds = time.monotonic() - started
    return report


def start_of(segment: Segment, line: int) -> int:
    """The first line of the command that ends at `line` (bash names a continued command's last)."""
    numbers = [number for number, _ in segment.lines]
    texts = dict(segment.lines)
    while line - 1 in texts and line in numbers and texts[line - 1].rstrip().endswith(("\\", "|", "&&", "||", "$(")):
        line -= 1
    return line


def report_line(segments: list[Segment], state: Path) -> int:
    """The first line of the last segment that started (where a file hung)."""
    for index in range(len(segments) - 1, -1, -1):
        if (state / f"out.{index}").exists() and segments[index].lines:
            return segments[index].lines[0][0]
    return 0


def server_answers(api: str, wait: float) -> bool:
    deadline = time.monotonic() + wait
    while True:
        try:
            with urllib.request.urlopen(f"{api}/readyz", timeout=2) as response:
                if response.status == 200:
                    return True
        except (urllib.error.URLError, OSError):
            pass
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.2)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("files", nargs="+", help="Markdown files (their `sh runnable` blocks are run)")
    parser.add_argument(
        "--api", default=os.environ.get("API", "http://127.0.0.1:8000"), help="the server (exported as API)"
    )
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds allowed to each file's blocks")
    parser.add_argument("--jobs", type=int, default=4, help="files run at once (each in its own bash)")
    parser.add_argument("--wait", type=float, default=0.0, help="seconds to wait for the server's /readyz first")
    parser.add_argument("--no-server", action="store_true", help="do not check first that the server answers")
    args = parser.parse_args(argv)
    api = args.api.rstrip("/")
    if not args.no_server and not server_answers(api, args.wait):
        print(f"docs examples: no server answers {api}/readyz (start one: make run)", file=sys.stderr)
        return 1
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:  # files are independent
        reports = list(pool.map(lambda path: run_file(path, api, args.timeout), args.files))
    failed = False
    for report in reports:
        status = "FAILED" if report.failures else "ok"
        print(
            f"{report.path}: {report.blocks} runnable blocks, {report.expectations} expectations: {status} ({report.seconds:.1f} s)"
        )
        for failure in report.failures:
            print(f"  {failure}")
            failed = True
    if not any(report.blocks for report in reports):
        print("docs examples: no runnable block in " + ", ".join(args.files), file=sys.stderr)
        failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
