"""The executable-documentation harness (tests/docs_examples.py) on tiny Markdown files: it passes
what a file's blocks print, fails a wrong expectation, a failing command and the shapes of
documentation that would leave an expectation unchecked. No server: the blocks only `echo`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests import docs_examples
from tests.docs_examples import normalised, run_file, unmatched

HARNESS = Path(docs_examples.__file__)


def run(tmp_path: Path, text: str) -> docs_examples.FileReport:
    page = tmp_path / "page.md"
    page.write_text(text)
    return run_file(str(page), "http://127.0.0.1:9")


def block(*lines: str, info: str = "sh runnable") -> str:
    return "\n".join([f"```{info}", *lines, "```", ""])


def messages(report: docs_examples.FileReport) -> list[str]:
    return [str(failure) for failure in report.failures]


def test_a_right_expectation_passes(tmp_path):
    report = run(tmp_path, "# A page\n\n" + block("echo 'the outcome is success'", "# → outcome is success"))
    assert report.failures == [] and report.blocks == 1 and report.expectations == 1


def test_a_wrong_expectation_fails_with_its_line_and_the_output(tmp_path):
    report = run(tmp_path, "# A page\n\n" + block("echo 'the outcome is failure'", "# → outcome is success"))
    [failure] = report.failures
    assert failure.line == 5 and "outcome is success" in failure.message and "the outcome is failure" in failure.message


def test_a_failing_command_fails_at_its_line_even_without_expectation_after_it(tmp_path):
    text = block("echo one", "# → one", "false", "echo never")
    [failure] = run(tmp_path, text).failures
    assert failure.line == 4 and "status 1" in failure.message


def test_a_failing_command_inside_a_function_is_located_at_the_call(tmp_path):
    text = block("f() {", "  false", "}", "echo start", "# → start", "x=$(echo a \\", "  | grep zz)", "f")
    [failure] = run(tmp_path, text).failures
    assert failure.line == 7  # the continued command's first line


def test_variables_and_functions_carry_between_blocks_of_a_file(tmp_path):
    text = block("X=carried", 'shout() { echo "$1!"; }') + "\nProse between.\n\n" + block('shout "$X"', "# → carried!")
    assert run(tmp_path, text).failures == []


def test_each_file_runs_in_a_fresh_shell(tmp_path):
    (tmp_path / "first.md").write_text(block("export LEAK=1", "echo set", "# → set"))
    (tmp_path / "second.md").write_text(block('echo "leak=${LEAK:-none}"', "# → leak=none"))
    code = docs_examples.main(["--no-server", str(tmp_path / "first.md"), str(tmp_path / "second.md")])
    assert code == 0


def test_the_api_is_exported(tmp_path):
    text = block("API=${API:-http://127.0.0.1:8000}", 'echo "$API"', "# → http://127.0.0.1:9")
    assert run(tmp_path, text).failures == []


def test_the_output_checked_is_the_output_since_the_previous_expectation(tmp_path):
    text = block("echo alpha", "# → alpha", "echo beta", "# → alpha")
    [failure] = run(tmp_path, text).failures
    assert failure.line == 5


def test_fragments_match_in_order_and_never_inside_a_word(tmp_path):
    assert unmatched("one … three", "one two three") is None
    assert unmatched("three … one", "one two three") == "one"
    assert unmatched("22", "status 422") == "22"
    assert unmatched("422", "status 422.") is None
    assert unmatched("…", "anything") is not None  # never vacuous


def test_json_is_compared_as_json_dumps_writes_it():
    output = '{"outcome":"success","effects":{"karma":{"before":0,"after":-2}}}\n[1,2]'
    assert normalised(output) == '{"outcome": "success", "effects": {"karma": {"before": 0, "after": -2}}} [1, 2]'
    assert unmatched('"outcome": "success", "effects": {"karma": {"before": 0, "after": -2}}', output) is None
    assert unmatched('"outcome": "failure"', output) == '"outcome": "failure"'


def test_continuation_lines_and_consecutive_arrows_make_one_expectation(tmp_path):
    text = block("echo 'a b c d'", "# → a b", "#   c", "# → d")
    report = run(tmp_path, text)
    assert report.failures == [] and report.expectations == 1
    report = run(tmp_path, block("echo 'a b c'", "# → a b", "#   z"))
    assert len(report.failures) == 1 and "z" in report.failures[0].message


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (block("echo x", "# → x", info="sh"), "not run"),
        (block("curl -s $API/v1/me", info="sh"), "talks to the server"),
        (block("curl -s http://127.0.0.1:8000/v1/me", "# → x"), "hard-coded"),
        (block("echo x  # → x"), "same line"),
        (block("# → x", "echo x"), "no command before"),
        (block("echo x", "# → …"), "states nothing"),
        (block("echo x"), "nothing is checked"),
        ("```sh runnable\necho x\n# → x\n", "never closed"),
    ],
)
def test_documentation_that_would_leave_an_expectation_unchecked_is_refused(tmp_path, text, said):
    report = run(tmp_path, text)
    assert any(said in message for message in messages(report)), messages(report)


def test_other_blocks_are_not_run(tmp_path):
    text = block("exit 3", info="sh") + block("exit 3", info="python") + block("echo ran", "# → ran")
    assert run(tmp_path, text).failures == []


def test_a_block_that_hangs_fails_at_the_timeout(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(block("echo start", "# → start", "sleep 30", "echo late", "# → late"))
    report = run_file(str(page), "http://127.0.0.1:9", timeout=1)
    assert any("did not finish" in message for message in messages(report))


def test_the_command_line_exits_non_zero_and_prints_file_line(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(block("echo 'got this'", "# → wanted that"))
    done = subprocess.run(
        [sys.executable, str(HARNESS), "--no-server", str(page)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1
    assert f"{page}:3: expected: wanted that" in done.stdout and "| got this" in done.stdout
    page.write_text(block("echo 'wanted that'", "# → wanted that"))
    done = subprocess.run(
        [sys.executable, str(HARNESS), "--no-server", str(page)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout


def test_no_runnable_block_at_all_fails_and_no_server_fails(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("Nothing to run.\n")
    assert docs_examples.main(["--no-server", str(page)]) == 1
    assert docs_examples.main(["--api", "http://127.0.0.1:9", str(page)]) == 1  # nothing answers there
