"""Verifiable server dice on the dashboard (API.md "Verifiable server dice (commit, then reveal)"):
the current epoch's commitment and salts, a player's salt shown live on the GM's page, each server
roll's epoch and number `k` in the log, the GM's « Révéler », then the check done in each page with
Web Crypto (the commitment, every die this viewer reads; a hidden GM roll counted as not visible to
the player until the GM publishes it), and a die altered in the database afterwards found by the
same check."""

from __future__ import annotations

import hashlib
import hmac
from contextlib import closing
from typing import Any

import pytest
from sqlalchemy import create_engine, select, update
from sqlalchemy.pool import NullPool

from app.core.db import normalize_database_url
from app.models.tables import LogEntry
from tests.api.test_dice_epochs import derived, server_dice
from tests.browser.dash_support import at_phone_widths, axe, table
from tests.browser.test_dashboard import api, clean, open_with_token
from tests.browser.test_dashboard_phone_fight import phone
from tests.browser.test_dashboard_tv import english_open

WORDS = {
    "fr": {
        "title": "Dés vérifiables",
        "salt": "Votre sel (mêlé à chaque dé de l'époque)",
        "add": "Ajouter le sel",
        "closed": "Un dé a déjà été tiré : les sels de cette époque sont fixés.",
        "reveal": "Révéler",
        "mark": "époque {id} n° {k}",
        "ok": "Vérifié : {n} dés sur {n} conformes",
        "unseen": "{n} dés non visibles pour vous",
        "wrong": "Non conforme : 1 dé diffère du calcul (sur {n})",
        "die": "Dé n° {k} : journal {logged}, calculé {computed}",
        "current": "Époque en cours {id}",
    },
    "en": {
        "title": "Verifiable dice",
        "salt": "Your salt (mixed into every die of the epoch)",
        "add": "Add the salt",
        "closed": "A die has been rolled: this epoch's salts are set.",
        "reveal": "Reveal",
        "mark": "epoch {id} #{k}",
        "ok": "Verified: {n} of {n} dice match",
        "unseen": "{n} dice not visible to you",
        "wrong": "Mismatch: 1 die differs from the computation (of {n})",
        "die": "Die #{k}: log {logged}, computed {computed}",
        "current": "Current epoch {id}",
    },
}
SALT = "Léa souffle sur les dés ✨"


def runs(ks: list[int]) -> str:
    """[3, 4, 5, 9] → "3–5, 9", as the page writes a roll's numbers."""
    spans: list[tuple[int, int]] = []
    for k in sorted(ks):
        if spans and spans[-1][1] == k - 1:
            spans[-1] = (spans[-1][0], k)
        else:
            spans.append((k, k))
    return ", ".join(f"{a}–{b}" if a != b else str(a) for a, b in spans)


def open_as(page, server, token: str, lang: str) -> None:
    if lang == "en":
        english_open(page, server.url, token)
        page.wait_for_selector("#stream-state.live")
    else:
        open_with_token(page, server.url, token)


def gm_and_phone(pages, server, s: dict[str, Any], lang: str) -> tuple[Any, Any]:
    """The GM's page (desktop) and Léa's phone, both open and live, in `lang`."""
    gm = pages(viewport={"width": 1280, "height": 900})
    if lang == "en":
        gm.add_init_script("localStorage.setItem('jdr.lang', 'en')")
    player = phone(pages, lang=lang if lang == "en" else None)
    open_as(gm, server, s["gm"], lang)
    open_as(player, server, s["player"]["token"], lang)
    return gm, player


def verdict(page, epoch_id: str, result: str) -> Any:
    """The revealed epoch's line once its check ended with `result` (ok, mismatch)."""
    line = page.locator(f"#epochs-revealed li[data-epoch-id='{epoch_id}'][data-result='{result}']")
    line.wait_for(timeout=15_000)
    return line


def alter_die(database_url: str, entry_id: str, index: int, value: int) -> None:
    """The stored body of a log entry changed behind the server's back: die `index` now says `value`."""
    engine = create_engine(normalize_database_url(database_url), poolclass=NullPool)
    table = LogEntry.__table__
    try:
        with engine.begin() as conn:
            body = conn.execute(select(table.c.body).where(table.c.id == entry_id)).scalar_one()
            rolls = [dict(r) for r in body["rolls"]]
            rolls[index]["value"] = value
            conn.execute(update(table).where(table.c.id == entry_id).values(body={**body, "rolls": rolls}))
    finally:
        engine.dispose()


@pytest.mark.parametrize("lang", ["fr", "en"])
def test_server_dice_show_their_epoch_and_are_checked_in_each_page_after_the_reveal(live, pages, lang):
    server = live.start()
    s = table(live, server)
    words = WORDS[lang]
    cid = s["cid"]
    with closing(s["http"]) as http, api(server.url, s["player"]["token"]) as lea:
        epoch = http.get(f"/v1/campaigns/{cid}/dice-epochs/current").json()
        eid, short = epoch["id"], epoch["id"][:4] + "…"
        gm, player = gm_and_phone(pages, server, s, lang)
        for page in (gm, player):
            current = page.locator(f"#epoch-current[data-epoch-id='{eid}'][data-dice='0']")
            current.wait_for(timeout=15_000)
            assert page.locator("#epochs-title").inner_text() == words["title"]
            assert current.locator("h3").inner_text() == words["current"].format(id=short)
            commitment = current.locator("code.commitment")
            assert commitment.get_attribute("title") == epoch["commitment"]
            assert commitment.inner_text() == epoch["commitment"][:12] + "…"
        assert gm.get_by_role("button", name=words["reveal"], exact=True).count() == 1
        assert player.get_by_role("button", name=words["reveal"], exact=True).count() == 0  # the GM's alone
        at_phone_widths(player)

        # Léa's salt, from her phone: in the epoch, and on the GM's page live
        player.get_by_label(words["salt"], exact=True).fill(SALT)
        player.get_by_role("button", name=words["add"], exact=True).click()
        gm.locator("#epoch-salts li").filter(has_text=SALT).wait_for(timeout=15_000)
        assert http.get(f"/v1/campaigns/{cid}/dice-epochs/current").json()["salts"] == [SALT]
        assert player.locator("#epoch-salts li").all_inner_texts() == [SALT]

        # server dice: a GM test on Aiko, a free roll, Léa's roll, and a hidden GM roll
        made = [
            http.post(f"/v1/characters/{s['aiko']['id']}/tests", json={"stat": "force"}),
            http.post(f"/v1/campaigns/{cid}/rolls", json={"expression": "4d6kh3"}),
            lea.post(f"/v1/campaigns/{cid}/rolls", json={"expression": "1d20"}),
            http.post(f"/v1/campaigns/{cid}/rolls", json={"expression": "2d10", "hidden": True}),
        ]
        assert [r.status_code for r in made] == [201] * 4, [r.text for r in made]
        entries = [r.json() for r in made]
        total = len(server_dice(entries))
        hidden = len(server_dice(entries[3]))
        assert (hidden, http.get(f"/v1/campaigns/{cid}/dice-epochs/current").json()["dice"]) == (2, total)
        assert sorted(d["k"] for d in server_dice(entries)) == list(range(total))

        # each server roll's epoch and numbers in the log (the hidden one on the GM's page only)
        for page, seen in ((gm, entries), (player, entries[:3])):
            for entry in seen:
                mark = page.locator(f"#log-list li[data-entry-id='{entry['id']}'] .epoch-mark")
                mark.wait_for(timeout=15_000)
                ks = [d["k"] for d in server_dice(entry)]
                assert mark.inner_text() == words["mark"].format(id=short, k=runs(ks))
                assert mark.get_attribute("title").endswith(eid)
        assert player.locator(f"#log-list li[data-entry-id='{entries[3]['id']}']").count() == 0
        # no salt after the first die: the field is gone, the reason said
        player.locator(f"#epoch-current[data-dice='{total - hidden}'], #epoch-current[data-dice='{total}']").wait_for()
        assert player.get_by_label(words["salt"], exact=True).count() == 0
        assert words["closed"] in player.locator("#epoch-current").inner_text()
        at_phone_widths(player)

        # the GM reveals (confirmed): both pages check the epoch, each with the dice it reads
        gm.once("dialog", lambda dialog: dialog.accept())
        with gm.expect_response(lambda r: r.url.endswith(f"/v1/campaigns/{cid}/dice-epochs/current/reveal")) as done:
            gm.get_by_role("button", name=words["reveal"], exact=True).click()
        assert done.value.status == 200
        revealed = http.get(f"/v1/campaigns/{cid}/dice-epochs").json()["items"][1]
        assert revealed["id"] == eid and revealed["seed"] and revealed["salts"] == [SALT]
        for d in server_dice(entries):  # the oracle: the page's « conforme » means these values
            assert d["value"] == derived(revealed["seed"], eid, d["k"], [SALT], int(d["die"][1:]))
        line = verdict(gm, eid, "ok")
        assert line.locator(".verdict").inner_text() == words["ok"].format(n=total)
        assert line.locator(".unseen").count() == 0  # the GM reads every die
        line = verdict(player, eid, "ok")
        assert line.locator(".verdict").inner_text() == words["ok"].format(n=total - hidden)
        assert line.locator(".unseen").inner_text() == words["unseen"].format(n=hidden)
        nxt = http.get(f"/v1/campaigns/{cid}/dice-epochs/current").json()
        for page in (gm, player):  # the next epoch, live: salts again
            page.locator(f"#epoch-current[data-epoch-id='{nxt['id']}'][data-dice='0']").wait_for(timeout=15_000)
            assert page.get_by_label(words["salt"], exact=True).count() == 1
        assert axe(gm) == [] and axe(player) == []
        at_phone_widths(player)

        # the hidden roll published by the GM: in Léa's log, with its numbers, and in her page's check, live
        assert http.post(f"/v1/campaigns/{cid}/rolls/{entries[3]['id']}/publish").status_code == 200
        mark = player.locator(f"#log-list li[data-entry-id='{entries[3]['id']}'] .epoch-mark")
        mark.wait_for(timeout=15_000)
        assert mark.inner_text() == words["mark"].format(id=short, k=runs([d["k"] for d in server_dice(entries[3])]))
        player.locator(f"#epochs-revealed li[data-epoch-id='{eid}'] .verdict").filter(
            has_text=words["ok"].format(n=total)
        ).wait_for(timeout=15_000)
        assert player.locator(f"#epochs-revealed li[data-epoch-id='{eid}'] .unseen").count() == 0

        # a die of the free roll altered in the database: each page's check, on reload, names it
        free = entries[1]
        die = free["rolls"][0]
        forged = die["value"] % 6 + 1
        alter_die(live.database_url, free["id"], 0, forged)
        for page in (gm, player):
            page.reload()
            page.wait_for_selector("html[data-ready=dashboard]")
            line = verdict(page, eid, "mismatch")
            assert line.locator(".verdict").inner_text() == words["wrong"].format(n=total)
            assert line.locator(".mismatches li").all_inner_texts() == [
                words["die"].format(k=die["k"], logged=forged, computed=die["value"])
            ]
        assert axe(player) == []
        clean(gm)
        clean(player)
