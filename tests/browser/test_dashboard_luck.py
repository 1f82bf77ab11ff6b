"""Issue 29 item 4: the dashboard shows each character's luck on its card, in French by default
("Aiko : 12 réussites pour 9,4 attendues"), from GET …/stats, and follows a new test live."""

from __future__ import annotations

import re

from tests.browser.dash_support import table
from tests.browser.test_dashboard import clean, open_with_token

NBSP = re.compile(r"[\u00a0\u202f]")


def expected_line(http, cid: str, character_id: str) -> str:
    [figures] = [
        c for c in http.get(f"/v1/campaigns/{cid}/stats").json()["characters"] if c["character_id"] == character_id
    ]
    observed, expected = figures["successes"]["observed"], figures["successes"]["expected"]
    word = "réussite" if observed == 1 else "réussites"
    return f"Aiko : {observed} {word} pour {expected:.1f} attendues".replace(".", ",")


def test_issue29_item4_a_characters_luck_on_its_card(live, pages):
    server = live.start()
    s = table(live, server)
    http, aiko = s["http"], s["aiko"]
    for seed in range(5):
        assert http.post(f"/v1/characters/{aiko['id']}/tests", json={"stat": "force", "seed": seed}).status_code == 201
    page = pages()
    open_with_token(page, server.url, s["gm"])
    luck = page.locator(f"[data-luck='{aiko['id']}']")
    luck.wait_for()
    assert NBSP.sub(" ", luck.inner_text()) == expected_line(http, s["cid"], aiko["id"])
    assert page.locator(f"[data-luck='{s['vorath']['id']}']").count() == 0  # no test yet: no line

    assert http.post(f"/v1/characters/{aiko['id']}/tests", json={"stat": "force", "seed": 99}).status_code == 201
    want = expected_line(http, s["cid"], aiko["id"])
    page.wait_for_function(
        "([id, want]) => document.querySelector(`[data-luck='${id}']`)?.innerText.replace(/[\\u00a0\\u202f]/g, ' ') === want",
        arg=[aiko["id"], want],
    )
    clean(page)
