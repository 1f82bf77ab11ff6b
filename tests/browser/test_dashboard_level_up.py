"""Issue 27 item 5: the GM's Great Cosmos level-up from a character card (GC-L1, GC-L6), its form built
from the catalogue's body schema (`operations.schemas.level_up`), French by default; the card follows."""

from __future__ import annotations

import re
from contextlib import closing

import pytest

from tests.browser.dash_support import at_phone_widths, axe, table
from tests.browser.test_dashboard import clean, open_with_token
from tests.browser.test_dashboard_phone_fight import phone
from tests.browser.test_dashboard_tv import english_open


def test_issue27_item5_gc_l1_a_level_up_from_the_card_form_built_from_the_catalogue(live, pages):
    server = live.start()
    s = table(live, server)
    page = pages(viewport={"width": 1280, "height": 1000})
    with closing(s["http"]) as http:
        aiko = s["aiko"]
        assert aiko["sheet"]["level"] == 1
        schema = http.get("/v1/rulesets/great-cosmos").json()["operations"]["schemas"]["level_up"]
        assert "chance_bonus_pool" in schema["required"] and "mode" in schema["properties"]
        open_with_token(page, server.url, s["gm"])
        page.get_by_role("button", name="Monter de niveau : Aiko").click()
        dialog = page.locator("dialog")
        dialog.get_by_role("heading", name="Aiko : passage au niveau 2").wait_for()
        assert axe(page, context="dialog") == []
        assert dialog.get_by_label("Seed").count() == 0 and dialog.get_by_label("Dice").count() == 0  # the server rolls
        # a required choice left out: said next to its field, in French, nothing sent
        dialog.get_by_role("button", name="Monter de niveau").click()
        dialog.locator("select[name=chance_bonus_pool][aria-invalid=true]").wait_for()
        assert http.get(f"/v1/characters/{aiko['id']}").json()["sheet"]["level"] == 1
        # GC-L1 one d20 on one stat, GC-L6 the chance bonus to hp
        dialog.get_by_label("Mode", exact=True).select_option(label="1d20 (une caractéristique)")
        dialog.get_by_label("force", exact=True).check()
        dialog.get_by_label("Réserve du bonus de chance (2d20)").select_option(label="PV")
        dialog.get_by_role("button", name="Monter de niveau").click()
        dialog.wait_for(state="detached", timeout=15_000)
        after = http.get(f"/v1/characters/{aiko['id']}").json()
        assert after["sheet"]["level"] == 2 and after["sheet"]["stats"]["force"] > aiko["sheet"]["stats"]["force"]
        [entry] = [e for e in http.get(f"/v1/campaigns/{s['cid']}/rolls").json()["items"] if e["kind"] == "level_up"]
        assert entry["character_id"] == aiko["id"] and entry["provenance"] == "server"
        card = page.locator(f"article.character[data-character-id='{aiko['id']}']")
        card.locator("dl.points div", has_text="niveau").filter(has_text="2").wait_for(timeout=15_000)
        card.locator(f"[role=meter][data-resource=hp][aria-valuemax='{after['sheet']['hp_max']}']").wait_for()
        clean(page)


def test_gc_l1_l3_the_level_up_dialog_shows_the_fields_of_the_level_taken_and_what_is_missing(live, pages):
    server = live.start()
    s = table(live, server)
    page = pages(viewport={"width": 1280, "height": 1000})
    with closing(s["http"]) as http:
        aiko = s["aiko"]
        open_with_token(page, server.url, s["gm"])
        page.get_by_role("button", name="Monter de niveau : Aiko").click()
        dialog = page.locator("dialog")
        dialog.get_by_role("heading", name="Aiko : passage au niveau 2").wait_for()
        names = lambda: set(dialog.locator("[name]").evaluate_all("els => els.map(e => e.name.split('.')[0])"))  # noqa: E731
        shown = names()
        assert {"mode", "chance_bonus_pool"} <= shown, shown  # GC-L1, GC-L6
        assert not shown & {"stat", "pool", "transfers", "changes"}, shown  # other levels' fields: not offered
        # the required chance bonus pool: no « — » to pick, and the dialog says it is missing before any submit
        pool = dialog.locator("select[name=chance_bonus_pool]")
        assert "—" not in pool.locator("option:not([disabled])").all_inner_texts()
        missing = dialog.locator("#level-up-missing")
        assert missing.inner_text() == "À remplir : Réserve du bonus de chance (2d20)"
        pool.select_option(label="PV")
        missing.wait_for(state="hidden")
        assert axe(page, context="dialog") == []
        at_phone_widths(page)
        dialog.get_by_role("button", name="Annuler").click()

        # at level 3, the level 4 dialog: GC-L3's pool, not level 2's mode
        r = http.patch(f"/v1/characters/{aiko['id']}", json={"sheet": {**aiko["sheet"], "level": 3}})
        assert r.status_code == 200, r.text
        page.locator(f"article.character[data-character-id='{aiko['id']}'] dl.points div", has_text="niveau").filter(
            has_text="3"
        ).wait_for(timeout=15_000)
        page.get_by_role("button", name="Monter de niveau : Aiko").click()
        dialog.get_by_role("heading", name="Aiko : passage au niveau 4").wait_for()
        shown = names()
        assert "pool" in shown and not shown & {"mode", "stats", "stat", "transfers", "changes"}, shown
        dialog.get_by_role("button", name="Annuler").click()
        clean(page)


def test_the_level_up_dialog_says_what_is_missing_in_english(live, pages):
    server = live.start()
    s = table(live, server)
    page = pages(viewport={"width": 1280, "height": 1000})
    page.add_init_script("localStorage.setItem('jdr.lang', 'en')")
    with closing(s["http"]):
        page.goto(f"{server.url}/")
        page.get_by_label("Token (GM or player)").fill(s["gm"])
        page.get_by_role("button", name="Open", exact=True).click()
        page.wait_for_selector("html[data-ready=dashboard]")
        page.locator("article.character button", has_text="Level up").first.click()
        missing = page.locator("dialog #level-up-missing")
        assert missing.inner_text().startswith("Still to fill in: ")
        options = page.locator("dialog select[name=chance_bonus_pool] option:not([disabled])").all_inner_texts()
        assert len(options) == 2 and "—" not in options, options
        clean(page)


def misleading_descriptions(route) -> None:
    """The catalogue as the server sends it, but every level-up field's description saying « Level 9 »:
    the dialog must go by each field's `x-level`, not by the text."""
    response = route.fetch()
    body = response.json()
    for prop in body["operations"]["schemas"]["level_up"]["properties"].values():
        prop["description"] = "Level 9 (no such level)."
    route.fulfill(response=response, json=body)


@pytest.mark.parametrize("lang", ["fr", "en"])
def test_gc_l1_l5_the_level_up_dialog_goes_by_x_level_on_a_phone(live, pages, lang):
    server = live.start()
    s = table(live, server)
    page = phone(pages, lang=lang if lang == "en" else None)
    page.route(re.compile(r"/v1/rulesets/great-cosmos(\?.*)?$"), misleading_descriptions)
    button = "Level up: Aiko" if lang == "en" else "Monter de niveau : Aiko"
    cancel = "Cancel" if lang == "en" else "Annuler"
    with closing(s["http"]) as http:
        aiko = s["aiko"]
        if lang == "en":
            english_open(page, server.url, s["gm"])
        else:
            open_with_token(page, server.url, s["gm"])
        dialog = page.locator("dialog")
        # the fields shown: the controls' names, and the legends of the groups (a list, a map) by their field
        legends = {"Transferts": "transfers", "Transfers": "transfers", "Changements": "changes", "Changes": "changes"}
        names = lambda: (
            set(  # noqa: E731
                dialog.locator("[name]").evaluate_all("els => els.map(e => e.name.split('.')[0])")
            )
            | {legends[x] for x in dialog.locator("legend").all_inner_texts() if x in legends}
        )
        steps = [(1, {"mode"}), (2, {"stat"}), (3, {"pool"}), (4, {"transfers"}), (5, {"changes"}), (8, {"changes"})]
        for level, fields in steps:
            if level != aiko["sheet"]["level"]:
                r = http.patch(f"/v1/characters/{aiko['id']}", json={"sheet": {"level": level}})
                assert r.status_code == 200, r.text
                card = page.locator(f"article.character[data-character-id='{aiko['id']}'] dl.points div")
                card.filter(has_text=re.compile(rf"^\D*{level}$")).first.wait_for(timeout=15_000)
            page.get_by_role("button", name=button).click()
            dialog.locator("h2").wait_for()
            shown = names()
            assert shown & {"mode", "stat", "pool", "transfers", "changes"} == fields, (level, shown)
            assert "chance_bonus_pool" in shown
            at_phone_widths(page)
            dialog.get_by_role("button", name=cancel).click()
            dialog.wait_for(state="detached")
        clean(page)
