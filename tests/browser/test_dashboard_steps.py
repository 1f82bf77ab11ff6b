"""The fight history's step names (issue 27 item 2, its leftover): the page names a step by its key
(the server's `key` when sent, else its `what` as a snake_case word), in French, for every step the
server's code writes: a step added or reworded without French words fails here, not silently in a
GM's page."""

from __future__ import annotations

import re
from pathlib import Path

from tests.browser.test_dashboard import clean

APP = Path(__file__).resolve().parents[2] / "app"
# a step's `what` where the code writes it: {"rule": …, "what": "…"} or x.step("RULE", "…", …)
WHAT = re.compile(r"""["']what["']:\s*(f?)"([^"]+)"|\.step\(\s*"[^"]+",\s*(f?)"([^"]+)\"""")


def written_steps() -> list[str]:
    """Every step `what` of the code, an f-string's fields filled with a state's name (`dying`)."""
    found = set()
    for path in APP.rglob("*.py"):
        for m in WHAT.finditer(path.read_text(encoding="utf-8")):
            fstring, what = (m.group(1), m.group(2)) if m.group(2) else (m.group(3), m.group(4))
            found.add(re.sub(r"\{[^}]*\}", "1" if "action {" in what else "dying", what) if fstring else what)
    return sorted(found)


def test_issue27_every_step_the_server_writes_has_french_words_looked_up_by_key(live, pages):
    steps = written_steps()
    assert len(steps) > 60 and "attack test" in steps and "dying: counted in the fight" in steps  # the scan sees them
    server = live.start()
    page = pages()
    page.goto(f"{server.url}/")
    page.wait_for_selector("#lang-toggle")
    words = page.evaluate(
        """async steps => { const m = await import('/web/js/format.js');
           return Object.fromEntries(steps.map(what => [what, m.stepWord({what})])); }""",
        steps,
    )
    assert sorted(what for what, word in words.items() if not word) == []
    said = page.evaluate(
        """async () => { const m = await import('/web/js/format.js');
           return [m.stepKey({what: 'down: 0 HP'}), m.stepKey({what: 'Sépulcrale backlash: acts last'}),
                   m.stepWord({key: 'attack_test', what: 'the attack roll (reworded)'}),
                   m.stepWord({what: 'dying: a round less'}), m.stepWord({what: 'extra action 2'}),
                   m.stepWord({what: 'nothing the page knows'})]; }"""
    )
    assert said == [
        "down_0_hp",
        "sepulcrale_backlash_acts_last",
        "test d'attaque",  # by its key: a reworded English text does not lose the French
        "mourant : un round de moins",
        "action supplémentaire 2",
        None,
    ]
    clean(page)
