"""The defender picks its own dodge or parry: a player sets its combatant's standing reaction from its
phone (`PATCH …/combatants/{id}` `{reaction}`, saved at once, the result said), and the attacker's form
says the target's (« Réaction de la cible : parade »), live; only whoever controls the target (the GM,
its owner) is offered another reaction for one attack, as the server rules."""

from __future__ import annotations

from contextlib import closing
from typing import Any

import pytest

from tests.browser.dash_support import at_phone_widths, axe, table
from tests.browser.test_dashboard import GC_SHEET, clean, open_with_token
from tests.browser.test_dashboard_phone_fight import phone
from tests.browser.test_dashboard_tracker import WATCH, unchanged_read
from tests.browser.test_dashboard_tv import english_open
from tests.factories import GC, stats

WORDS = {
    "fr": {
        "own": "Réaction de Aiko quand on l'attaque",
        "options": ["aucune", "esquive", "parade"],
        "saved": "Réaction enregistrée : parade.",
        "chip": "réaction : parade",
        "target": "Réaction de la cible : {}",
        "dodge": "esquive",
        "parry": "parade",
        "override": "Réaction de la cible pour cette attaque",
        "standing": "— sa réaction habituelle —",
    },
    "en": {
        "own": "Aiko's reaction when attacked",
        "options": ["none", "dodge", "parry"],
        "saved": "Reaction saved: parry.",
        "chip": "reaction: parry",
        "target": "Target's reaction: {}",
        "dodge": "dodge",
        "parry": "parry",
        "override": "Target's reaction for this attack",
        "standing": "— its standing reaction —",
    },
}


def rivals(live, server) -> dict[str, Any]:
    """The table of `dash_support.table` (Léa's Aiko, the GM's Seigneur Vorath) and Hugo's Kaël, the
    quickest (agilité 80, GC-O1), in a started fight: Kaël against Aiko and Vorath, its turn."""
    s = table(live, server)
    http = s["http"]
    hugo = http.post(f"/v1/campaigns/{s['cid']}/players", json={"name": "Hugo"}).json()
    kael = http.post(
        f"/v1/campaigns/{s['cid']}/characters",
        json={
            "name": "Kaël",
            "kind": "pc",
            "player_id": hugo["id"],
            "sheet": {**GC_SHEET, "stats": stats(GC, agilite=80)},
        },
    ).json()
    r = http.post(
        f"/v1/campaigns/{s['cid']}/encounters",
        json={
            "name": "Le duel",
            "options": {"hp_visibility": "exact", "reveal_on_turn": False},
            "combatants": [
                {"character_id": s["aiko"]["id"], "side": "héros"},
                {"character_id": kael["id"], "side": "rivaux"},
                {"character_id": s["vorath"]["id"], "side": "ennemis"},
            ],
        },
    )
    assert r.status_code == 201, r.text
    eid = r.json()["id"]
    assert http.post(f"/v1/encounters/{eid}/start", json={"seed": 3}).status_code == 201
    encounter = http.get(f"/v1/encounters/{eid}").json()
    ids = {c["name"]: c["id"] for c in encounter["combatants"]}
    while encounter["current"]["combatant_id"] != ids["Kaël"]:
        assert http.post(f"/v1/encounters/{eid}/next-turn", json={}).status_code == 201
        encounter = http.get(f"/v1/encounters/{eid}").json()
    return {**s, "hugo": hugo, "encounter": encounter, "ids": ids}


def open_as(page, server, token: str, lang: str) -> None:
    (english_open if lang == "en" else open_with_token)(page, server.url, token)


def reaction_of(http, eid: str, combatant_id: str) -> str:
    return next(
        c["reaction"] for c in http.get(f"/v1/encounters/{eid}").json()["combatants"] if c["id"] == combatant_id
    )


@pytest.mark.parametrize("lang", ["fr", "en"])
def test_the_defender_sets_its_standing_reaction_from_its_phone(live, pages, lang):
    server = live.start()
    s = rivals(live, server)
    words = WORDS[lang]
    eid, aiko = s["encounter"]["id"], s["ids"]["Aiko"]
    with closing(s["http"]) as http:
        player = phone(pages, lang=lang if lang == "en" else None)
        open_as(player, server, s["player"]["token"], lang)
        player.wait_for_selector(f"#encounter-view[data-version='{s['encounter']['version']}']", timeout=15_000)
        control = player.get_by_label(words["own"], exact=True)
        control.wait_for()
        assert control.locator("option").all_inner_texts() == words["options"]
        assert control.input_value() == "dodge"  # the ruleset's default (GC-P2)
        # only its own combatant's: not Kaël's, not Vorath's
        assert player.locator("#own-reactions select").count() == 1
        at_phone_widths(player)
        before = int(player.locator("#encounter-view").get_attribute("data-version"))
        control.select_option("parry")  # saved at once: no button
        said = player.locator(f"#reaction-said-{aiko}")
        said.filter(has_text=words["saved"]).wait_for(timeout=15_000)
        assert reaction_of(http, eid, aiko) == "parry"
        player.wait_for_function(
            f"() => Number(document.querySelector('#encounter-view').dataset.version) > {before}", timeout=15_000
        )
        row = player.locator(f"#turn-order li[data-combatant-id='{aiko}']")
        assert words["chip"] in row.inner_text()
        assert control.input_value() == "parry"
        player.evaluate(WATCH)  # the control and its result held still: a read that changes nothing touches no node
        assert unchanged_read(player, eid) == []
        assert axe(player) == []
        at_phone_widths(player, lambda p: no_cut(p, f"#reaction-{aiko}"))
        # changed by the GM since: the line no longer says what this page saved
        assert http.patch(f"/v1/encounters/{eid}/combatants/{aiko}", json={"reaction": "none"}).status_code == 200
        player.wait_for_function(f"() => document.getElementById('reaction-{aiko}').value === 'none'", timeout=15_000)
        assert said.inner_text() == ""
        clean(player)


def no_cut(page, selector: str) -> None:
    """The control is whole within the screen's width."""
    right = page.evaluate(f"document.querySelector('{selector}').getBoundingClientRect().right")
    assert right <= page.viewport_size["width"], right


@pytest.mark.parametrize("lang", ["fr", "en"])
def test_the_attackers_form_says_the_targets_reaction_and_only_its_controller_may_override_it(live, pages, lang):
    server = live.start()
    s = rivals(live, server)
    words = WORDS[lang]
    eid, ids = s["encounter"]["id"], s["ids"]
    with closing(s["http"]) as http:
        # Hugo's phone, Kaël's turn: an attack on Aiko says her standing reaction (esquive)
        hugo = phone(pages, lang=lang if lang == "en" else None)
        open_as(hugo, server, s["hugo"]["token"], lang)
        hugo.wait_for_selector(f"#encounter-view[data-version='{s['encounter']['version']}']", timeout=15_000)
        hugo.locator("select[name=action-type]").select_option("attack")
        form = hugo.locator("#encounter .action-form")
        form.locator("select[name=target_id]").select_option(ids["Aiko"])
        line = form.locator(".target-reaction")
        assert line.inner_text() == words["target"].format(words["dodge"])
        # no choice of Aiko's reaction for Hugo: she is not his
        assert form.locator("select[name=reaction]").is_hidden()
        assert form.get_by_label(words["override"], exact=True).is_hidden()
        at_phone_widths(hugo)
        # Léa sets parry: Hugo's form says it, live
        assert (
            http.patch(f"/v1/encounters/{eid}/combatants/{ids['Aiko']}", json={"reaction": "parry"}).status_code == 200
        )
        line.filter(has_text=words["target"].format(words["parry"])).wait_for(timeout=15_000)
        hugo.evaluate(WATCH)
        assert unchanged_read(hugo, eid) == []
        # the GM's Vorath: its standing reaction, and no choice for Hugo either
        form.locator("select[name=target_id]").select_option(ids["Seigneur Vorath"])
        assert line.inner_text() == words["target"].format(words["dodge"])
        assert form.locator("select[name=reaction]").is_hidden()
        assert axe(hugo) == []
        at_phone_widths(hugo)
        # the attack sent from Hugo's form names no reaction: the server uses Aiko's standing one (parry)
        form.locator("select[name=target_id]").select_option(ids["Aiko"])
        damage = form.locator("input[name=damage]")
        if damage.count():
            damage.fill("1d6")
        with hugo.expect_request(
            lambda r: r.method == "POST" and r.url.endswith(f"/v1/encounters/{eid}/actions")
        ) as sent:
            hugo.locator("#encounter form button[type=submit]").click()
        assert "reaction" not in sent.value.post_data_json
        hugo.wait_for_function(
            f"() => Number(document.querySelector('#encounter-view').dataset.version) > {s['encounter']['version']}",
            timeout=15_000,
        )
        [attack] = [a for a in http.get(f"/v1/encounters/{eid}/actions").json()["items"] if a["type"] == "attack"]
        assert attack["target_id"] == ids["Aiko"]
        # the same refusal as the server's for Hugo choosing Aiko's reaction himself (he controls only Kaël)
        refused = hugo.evaluate(
            """async ([eid, aiko]) => { const m = await import('/web/js/api.js');
               try { await m.api.patch(`/v1/encounters/${eid}/combatants/${aiko}`, {reaction: 'none'}); return null; }
               catch (err) { return [err.status, err.problem?.code]; } }""",
            [eid, ids["Aiko"]],
        )
        assert refused == [403, "owner_or_gm_only"]
        assert reaction_of(http, eid, ids["Aiko"]) == "parry"

        # the GM controls every target: the line, and the choice of another reaction for this attack
        gm = pages(viewport={"width": 1280, "height": 900})
        if lang == "en":
            gm.add_init_script("localStorage.setItem('jdr.lang', 'en')")
        open_as(gm, server, s["gm"], lang)
        gm.wait_for_selector("#encounter .action-form")
        gm.locator("select[name=action-type]").select_option("attack")
        gm_form = gm.locator("#encounter .action-form")
        gm_form.locator("select[name=target_id]").select_option(ids["Aiko"])
        assert gm_form.locator(".target-reaction").inner_text() == words["target"].format(words["parry"])
        override = gm_form.get_by_label(words["override"], exact=True)
        assert override.is_visible()
        assert override.locator("option").all_inner_texts() == [
            words["standing"],
            *words["options"][1:],
            words["options"][0],
        ]
        clean(gm)
        clean(hugo)
