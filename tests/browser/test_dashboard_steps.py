"""The fight history's step names (issue 27 item 2, its leftover): the page names a step by its key
(the server's `key` when sent, else its `what` as a snake_case word), in French, for every step the
server's code writes: a step added or reworded without French words fails here, not silently in a
GM's page."""

from __future__ import annotations

from tests.browser.test_dashboard import clean
from tests.rulesets.test_step_keys import written_steps


def sent_steps() -> list[dict[str, str]]:
    """Every kind of step the server's code writes: its declared key, with a `what` it writes
    (an f-string's fields filled with a state's name, `dying`; "" where the text is computed)."""
    found = {(k, what) for *_, pairs in written_steps() for k, what in pairs if k is not None}
    return [{"key": k, "what": what} for k, what in sorted(found)]


def test_issue27_every_step_the_server_writes_has_french_words_looked_up_by_key(live, pages):
    steps = sent_steps()
    keys = {s["key"] for s in steps}
    assert len(keys) > 60 and {"attack_test", "condition_counted_in_the_fight", "no_defence_in_posture"} <= keys
    server = live.start()
    page = pages()
    page.goto(f"{server.url}/")
    page.wait_for_selector("#lang-toggle")
    words = page.evaluate(
        """async steps => { const m = await import('/web/js/format.js');
           return steps.map(step => [step.key, step.what, m.stepWord(step)]); }""",
        steps,
    )
    missing = sorted((key, what) for key, what, word in words if not word)
    assert missing == []
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
