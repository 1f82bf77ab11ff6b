"""The dashboard served at `/` (issue 15), driven in Debian's Chromium against a real
uvicorn: a GM session end to end, a GM and a player in two browser contexts, an
encounter through the UI, the stream resumed after a drop, and the first screen of a
big campaign. Every test checks that the page's JavaScript logged no error and that
nothing outside 127.0.0.1 was asked for.

`JDR_SCREENSHOTS=1` also writes docs/dashboard-*.png (the README's pictures)."""

from __future__ import annotations

import os
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from playwright.sync_api import Error as PlaywrightError

from tests.factories import GC, GC_MINIMAL, stats
from tests.hardening.conftest import bearer

ROOT = Path(__file__).resolve().parents[2]
FR_STATS = {
    "force": "Force",
    "esprit": "Esprit",
    "charisme": "Charisme",
    "agilite": "Agilité",
    "precision": "Précision",
    "chance": "Chance",
}
GC_SHEET = {**GC_MINIMAL, "hp_max": 40, "mp_max": 20}  # a small pool, so the meters move visibly
GOBLIN_SHEET = {
    **GC_MINIMAL,
    "race": "gobelin",
    "hp_max": 30,
    "mp_max": 0,
    "stats": stats(GC, force=40, esprit=20, charisme=10, agilite=60, precision=30, chance=30),
}


# --- helpers -------------------------------------------------------------------------------------


def snap(target, name: str) -> None:
    """The README's pictures (a page, or a part of it), when asked for (JDR_SCREENSHOTS=1)."""
    if os.environ.get("JDR_SCREENSHOTS"):
        full = {"full_page": True} if hasattr(target, "goto") else {}
        target.screenshot(path=str(ROOT / "docs" / f"dashboard-{name}.png"), **full)


UNLABELLED = """() => [...document.querySelectorAll('input, select, textarea, button')].filter(c =>
    c.type !== 'hidden' && !(c.labels && c.labels.length) && !c.getAttribute('aria-label')
    && !c.getAttribute('aria-labelledby') && !(c.tagName === 'BUTTON' && c.textContent.trim())).map(c => c.outerHTML)"""


def clean(page) -> None:
    """No script error, no 5xx, nothing asked of another host, and a label on every control shown; the
    page's background reads (the action form's plan and reach) done first, so none still holds the
    fight's rows when the test's database is emptied."""
    page.wait_for_function("() => !document.documentElement.dataset.busy", timeout=30_000)
    assert page.evaluate(UNLABELLED) == []
    assert page.js_errors == [], page.js_errors
    assert page.server_errors == [], page.server_errors
    assert page.outside == [], page.outside


LOGIN = {"fr": ("Jeton (MJ ou joueur)", "Ouvrir"), "en": ("Token (GM or player)", "Open")}


def speaking(page, lang: str = "fr") -> Any:
    """`page` in `lang` from its next load on (the language kept in localStorage, as the toggle does)."""
    if lang != "fr" and getattr(page, "jdr_lang", "fr") != lang:
        page.add_init_script(f"localStorage.setItem('jdr.lang', '{lang}')")
        page.jdr_lang = lang
    return page


def open_with_token(page, url: str, token: str, lang: str = "fr") -> None:
    """The first screen, in `lang`: paste the token, open; it is kept in the tab's session storage,
    never in a URL."""
    speaking(page, lang)
    page.goto(f"{url}/")
    label, button = LOGIN[lang]
    page.get_by_label(label).fill(token)
    page.get_by_role("button", name=button, exact=True).click()
    page.wait_for_selector(f"html[lang={lang}][data-ready=dashboard]")
    assert page.evaluate("sessionStorage.getItem('jdr.token')") == token
    page.wait_for_selector("#stream-state.live")


def api(url: str, token: str | None = None) -> httpx.Client:
    return httpx.Client(base_url=url, headers=bearer(token) if token else {}, timeout=10.0)


def seed(live, server, ruleset: str = "great-cosmos") -> dict[str, Any]:
    """A campaign with a player owning Aiko, and the GM's goblin: ids and tokens."""
    with api(server.url) as http:
        r = http.post("/v1/campaigns", json={"name": "Les Ombres de Séléné", "ruleset": ruleset})
        assert r.status_code == 201, r.text
        cid, gm = r.json()["id"], r.json()["gm_token"]
        live.campaigns.append(cid)
        http.headers.update(bearer(gm))
        player = http.post(f"/v1/campaigns/{cid}/players", json={"name": "Léa"}).json()
        aiko = http.post(
            f"/v1/campaigns/{cid}/characters",
            json={"name": "Aiko", "kind": "pc", "player_id": player["id"], "sheet": GC_SHEET},
        ).json()
        goblin = http.post(
            f"/v1/campaigns/{cid}/characters", json={"name": "Gobelin", "kind": "npc", "sheet": GOBLIN_SHEET}
        ).json()
    return {"cid": cid, "gm": gm, "player": player, "aiko": aiko, "goblin": goblin}


def log_ids(page) -> list[str]:
    return page.eval_on_selector_all("#log-list li.entry", "items => items.map(li => li.dataset.entryId)")


# --- a GM session end to end ---------------------------------------------------------------------


def test_a_gm_session_end_to_end(live, pages):
    server = live.start()
    page = pages()
    page.goto(f"{server.url}/")
    page.get_by_label("Nom de la campagne").fill("Les Ombres de Séléné")
    page.get_by_label("Règles").select_option("great-cosmos")
    page.get_by_role("button", name="Créer la campagne").click()
    page.wait_for_selector("#gm-token-value, [aria-labelledby=create-title] .status:not(:empty)")
    assert page.locator("#gm-token-value").count() == 1, page.locator(
        "[aria-labelledby=create-title] .status"
    ).text_content()
    token = page.locator("#gm-token-value").text_content()
    page.get_by_role("button", name="Ouvrir la campagne").click()
    page.wait_for_selector("html[data-ready=dashboard]")
    assert token not in page.url and page.evaluate("sessionStorage.getItem('jdr.token')") == token
    with api(server.url, token) as http:
        cid = http.get("/v1/me").json()["campaign_id"]
    live.campaigns.append(cid)
    assert page.locator("header h1").text_content() == "Les Ombres de Séléné"  # accents as typed

    # a character through the form built from the sheet schema: the 422 lands on its field
    page.get_by_role("button", name="Nouveau personnage").click()
    form = page.locator("dialog")
    form.get_by_label("Nom", exact=True).first.fill("Élodie")  # (the final skill has a name too)
    form.get_by_label("Race").fill("humain")
    for stat, value in GC_SHEET["stats"].items():  # the rulebook's words: agilité, précision
        form.get_by_label(FR_STATS[stat], exact=True).fill(str(value))
    form.get_by_label("PV max").fill("0")
    form.get_by_label("PM max").fill("20")
    assert page.evaluate(UNLABELLED) == []  # the whole sheet form
    form.get_by_role("button", name="Créer le personnage").click()
    hp_max = form.get_by_label("PV max")
    error = page.locator(f"#{hp_max.get_attribute('aria-describedby')}")
    error.wait_for()
    assert error.text_content() == "doit être supérieur ou égal à 1"  # translated, never the English text
    assert hp_max.get_attribute("aria-invalid") == "true"
    hp_max.fill("40")
    form.get_by_role("button", name="Créer le personnage").click()
    card = page.locator("article.character", has_text="Élodie")
    card.wait_for()
    assert card.get_by_role("meter", name="PV").get_attribute("aria-valuetext") == "40 / 40"
    with api(server.url, token) as http:
        [character] = http.get(f"/v1/campaigns/{cid}/characters").json()["items"]
        odds = http.post(f"/v1/characters/{character['id']}/tests/odds", json={"stat": "force"}).json()
    assert character["name"] == "Élodie" and character["sheet"]["hp_max"] == 40

    # the exact odds before rolling, as the odds route gives them
    page.get_by_label("Caractéristique", exact=True).select_option("force")
    page.locator("#odds li[data-outcome=success]").wait_for()
    for outcome, value in odds["outcomes"].items():
        if value["p"] == 0:  # an impossible outcome is not offered
            assert page.locator(f"#odds li[data-outcome={outcome}]").count() == 0
        else:
            assert value["probability"] in page.locator(f"#odds li[data-outcome={outcome}]").text_content()

    # roll with table dice, by keyboard: the API names the die it needs, the input takes the focus
    page.get_by_role("button", name="Saisir les dés de table").focus()
    page.keyboard.press("Enter")
    die = page.get_by_label("d100 pour test")
    die.wait_for()
    assert page.evaluate("document.activeElement.dataset.purpose") == "test"
    page.keyboard.type("42")
    page.keyboard.press("Enter")
    page.locator("#test-result .outcome").wait_for()
    assert page.locator("#test-result .outcome").text_content() == "Élodie : réussite super-critique"
    assert "d100 42 (test)" in page.locator("#test-result .dice").inner_text().replace("\n", " ")
    with api(server.url, token) as http:
        [entry] = http.get(f"/v1/campaigns/{cid}/rolls").json()["items"]
    assert entry["rolls"] == [{"die": "d100", "value": 42, "purpose": "test"}]
    page.locator(f"#log-list li[data-entry-id='{entry['id']}']").wait_for()
    assert "karma 0 → -2" in page.locator(f"#log-list li[data-entry-id='{entry['id']}']").text_content()
    page.locator("article.character", has_text="karma-2").wait_for()  # the card follows the sheet

    # a player added: its token shown once, and it works
    page.get_by_label("Nom du joueur").fill("Léa")
    page.get_by_role("button", name="Ajouter le joueur").click()
    player_token = page.locator("#players output.token").text_content()
    with api(server.url, player_token) as http:
        assert http.get("/v1/me").json()["role"] == "player"
    page.locator("#player-list", has_text="Léa").wait_for()
    snap(page, "gm")
    page.get_by_role("button", name="C'est fait, le masquer").click()
    assert page.locator("#players output.token").count() == 0
    clean(page)


# --- a GM and a player ---------------------------------------------------------------------------


def test_the_player_sees_a_gm_test_live_and_never_a_hidden_one(live, pages):
    server = live.start()
    s = seed(live, server)
    gm, player = pages(), pages()
    requests: list[str] = []
    bodies: list[str] = []
    player.on("request", lambda r: requests.append(r.url))

    def keep_body(response) -> None:
        if "text/event-stream" not in response.headers.get("content-type", ""):
            try:
                bodies.append(response.text())
            except PlaywrightError:  # a body the browser did not keep (a redirect, an aborted request)
                bodies.append("")

    player.on("response", keep_body)
    open_with_token(gm, server.url, s["gm"])
    open_with_token(player, server.url, s["player"]["token"])
    assert player.locator("#role").text_content() == "Joueur : Léa"
    # its own character in full, the GM's goblin by name only; it tests only its own
    assert player.locator("article.character", has_text="Aiko").get_by_role("meter", name="PV").count() == 1
    assert player.locator("article.character", has_text="Gobelin").count() == 0  # an NPC: `player_access` none
    assert player.eval_on_selector_all("select[name=test-character] option", "o => o.map(x => x.textContent)") == [
        "Aiko"
    ]

    # a hidden GM roll first, then a visible one
    player.evaluate("window.beforeTheRolls = true")  # gone if the page is reloaded
    gm.get_by_label("Personnage", exact=True).select_option(label="Gobelin")
    gm.get_by_label("Jet caché (MJ seulement)").check()
    gm.get_by_role("button", name="Lancer", exact=True).click()
    gm.locator("#test-result .hidden-roll").wait_for()
    gm.get_by_label("Jet caché (MJ seulement)").uncheck()
    gm.get_by_label("Personnage", exact=True).select_option(label="Aiko")
    gm.get_by_role("button", name="Lancer", exact=True).click()
    gm.locator("#test-result", has_text="Aiko").wait_for()
    with api(server.url, s["gm"]) as http:
        visible, hidden = http.get(f"/v1/campaigns/{s['cid']}/rolls").json()["items"]
    assert hidden["hidden"] is True and visible["hidden"] is False

    # the stream brings it to the open page (no reload): an event, not a race against a clock
    player.locator(f"#log-list li[data-entry-id='{visible['id']}']").wait_for(timeout=15_000)
    assert player.evaluate("window.beforeTheRolls") is True
    gm.locator(f"#log-list li[data-entry-id='{hidden['id']}'] .hidden-roll").wait_for()  # marked for the GM
    # the stream is ordered: the hidden entry, had it been sent, came before the visible one.
    # The page draws every entry it receives, so the DOM says what the stream carried.
    assert hidden["id"] not in log_ids(player) and log_ids(player) == [visible["id"]]
    player.reload()
    player.wait_for_selector("html[data-ready=dashboard]")
    assert log_ids(player) == [visible["id"]]
    assert bodies and not any(hidden["id"] in body for body in bodies)
    assert not any(s["player"]["token"] in url for url in requests)  # the token never goes in a URL
    assert any("/events?ticket=" in url for url in requests)

    # a fight appears live; its own combatant exact, the goblin as status words, a hidden spy never
    with api(server.url, s["gm"]) as http:
        spy = http.post(
            f"/v1/campaigns/{s['cid']}/characters", json={"name": "Espion", "kind": "npc", "sheet": GOBLIN_SHEET}
        ).json()
        encounter = http.post(
            f"/v1/campaigns/{s['cid']}/encounters",
            json={
                "name": "Le pont",
                "options": {"hp_visibility": "status", "reveal_on_turn": False},
                "combatants": [
                    {"character_id": s["aiko"]["id"]},
                    {"character_id": s["goblin"]["id"]},
                    {"character_id": spy["id"], "hidden": True},
                ],
            },
        ).json()
        started = http.post(f"/v1/encounters/{encounter['id']}/start", json={"seed": 3}).json()
    player.wait_for_selector(f"#encounter-view[data-version='{started['version']}']")
    view = player.locator("#turn-order")
    assert (
        view.locator("li.combatant", has_text="Aiko").get_by_role("meter", name="PV").get_attribute("aria-valuetext")
        == "40 / 40"
    )
    assert (
        view.locator("li.combatant", has_text="Gobelin").locator("[data-resource=hp]").text_content() == "PV : indemne"
    )
    assert "Espion" not in view.text_content()
    player.locator("#odds li").first.wait_for()
    snap(player, "player")
    clean(gm)
    clean(player)


# --- an encounter through the UI -----------------------------------------------------------------


def shown(page) -> dict[str, Any]:
    return page.evaluate("""() => {
        const view = document.querySelector('#encounter-view');
        return {version: Number(view.dataset.version), status: view.dataset.status, round: Number(view.dataset.round),
          combatants: [...view.querySelectorAll('#turn-order li.combatant')].map(li => ({
            id: li.dataset.combatantId, name: li.querySelector('.name').textContent,
            current: li.getAttribute('aria-current') === 'true',
            resources: Object.fromEntries([...li.querySelectorAll('[role=meter]')].map(m =>
              [m.dataset.resource, [Number(m.getAttribute('aria-valuenow')), Number(m.getAttribute('aria-valuemax'))]])),
            conditions: [...li.querySelectorAll('[data-condition]')].map(c => c.dataset.condition)}))};
    }""")


def expected(encounter: dict[str, Any]) -> dict[str, Any]:
    """What the tracker must show of GET /v1/encounters/{id}: the turn order, whose turn, pools, conditions."""
    by_id = {c["id"]: c for c in encounter["combatants"]}
    order = [slot["combatant_id"] for slot in encounter["order"]]
    order += [c["id"] for c in encounter["combatants"] if c["id"] not in order]
    current = set((encounter["current"] or {}).get("combatant_ids") or []) if encounter["status"] == "active" else set()
    return {
        "version": encounter["version"],
        "status": encounter["status"],
        "round": encounter["round"],
        "combatants": [
            {
                "id": cid,
                "name": by_id[cid]["name"],
                "current": cid in current,
                "resources": {k: [v["value"], v["max"]] for k, v in by_id[cid]["resources"].items() if v["max"] > 0},
                "conditions": [c["name"] for c in by_id[cid]["conditions"]],
            }
            for cid in order
        ],
    }


def check_tracker(page, http: httpx.Client, eid: str, *, after: int) -> dict[str, Any]:
    """Once the page shows a version past `after`, it shows exactly what the API answers."""
    page.wait_for_function(f"() => Number(document.querySelector('#encounter-view').dataset.version) > {after}")
    encounter = http.get(f"/v1/encounters/{eid}").json()
    page.wait_for_selector(f"#encounter-view[data-version='{encounter['version']}']")
    assert shown(page) == expected(encounter)
    return encounter


def enter_dice(page, values: dict[str, list[int]]) -> list[str]:
    """Answer each die the page asks for by its purpose: the plan's dice, asked at once (each input
    given the next value of its purpose, a conditioned one left empty when none is left), and any die
    asked one by one; returns the purposes in the order asked. Whichever comes first is answered: a
    redraw may show the plan's form a moment after the page stopped being busy."""
    asked: list[str] = []
    planned_once = False
    page.wait_for_function(
        "() => document.querySelector('.dice-entry input') || !document.querySelector('[aria-busy=true]')"
    )
    while True:
        page.wait_for_function("""() => document.querySelector('.dice-entry form.dice-plan input:not([disabled])')
                                  || document.querySelector('.dice-entry li.asked:last-child input:not([disabled])')
                                  || !document.querySelector('.dice-entry')""")
        plan = page.locator(".dice-entry form.dice-plan input:not([disabled])")
        if plan.count():
            assert not planned_once, "the plan's dice were asked again (a wrong die?)"
            planned_once = True
            for i in range(plan.count()):
                die = plan.nth(i)
                purpose = die.get_attribute("data-purpose")
                asked.append(purpose)
                if values.get(purpose):
                    die.fill(str(values[purpose].pop(0)))
            page.locator(".dice-entry form.dice-plan button[type=submit]").click()
            continue
        die = page.locator(".dice-entry li.asked:last-child input:not([disabled])")
        if not die.count():
            assert page.locator("#encounter-message .error").count() == 0, page.locator(
                "#encounter-message"
            ).text_content()
            return asked
        purpose = die.get_attribute("data-purpose")
        asked.append(purpose)
        die.fill(str(values[purpose].pop(0)))
        die.press("Enter")


def test_an_encounter_through_the_ui(live, pages):
    server = live.start()
    s = seed(live, server)
    page = pages(viewport={"width": 1280, "height": 1000})
    open_with_token(page, server.url, s["gm"])
    http = api(server.url, s["gm"])

    page.get_by_role("button", name="Nouvelle rencontre").click()
    builder = page.locator("dialog")
    builder.get_by_label("Nom de la rencontre").fill("Embuscade à Séléné")
    builder.get_by_label("Gobelin", exact=True).check()
    builder.get_by_label("Copies de Gobelin").fill("2")
    assert page.evaluate(UNLABELLED) == []
    builder.get_by_role("button", name="Créer la rencontre").click()
    page.wait_for_selector("#encounter-view[data-status=setup]")
    [summary] = http.get(f"/v1/campaigns/{s['cid']}/encounters").json()["items"]
    eid = summary["id"]
    version = summary["version"]
    assert sorted(c["name"] for c in http.get(f"/v1/encounters/{eid}").json()["combatants"]) == [
        "Aiko",
        "Gobelin 1",
        "Gobelin 2",
    ]

    page.get_by_role("button", name="Commencer", exact=True).click()
    encounter = check_tracker(page, http, eid, after=version)
    assert encounter["status"] == "active" and encounter["round"] == 1
    actor = next(c for c in encounter["combatants"] if c["id"] == encounter["current"]["combatant_id"])
    turn = encounter["current"]["combatant_ids"]  # copies of one NPC share a slot (GC-O2: same agilite)
    assert page.locator("#whose-turn").text_content() == ", ".join(
        c["name"] for c in encounter["combatants"] if c["id"] in turn
    )

    # the current combatant attacks someone of the other side, with table dice in the API's order
    page.get_by_label("Action", exact=True).select_option("attack")
    page.wait_for_selector("html:not([data-busy])", state="attached")  # the attack's form and its reads done
    target_name = page.get_by_label("Cible", exact=True).evaluate("s => s.selectedOptions[0].textContent")
    target = next(c for c in encounter["combatants"] if c["name"] == target_name)
    assert target["side"] != actor["side"]
    page.get_by_label("Dégâts", exact=True).fill("2d6+3")
    page.wait_for_selector("html:not([data-busy])", state="attached")  # the plan read again for the damage typed
    assert page.get_by_label("Dégâts", exact=True).input_value() == "2d6+3"  # what the GM typed stays
    page.get_by_role("button", name="Agir avec les dés de table").click()
    asked = enter_dice(page, {"attack": [31], "dodge": [76], "damage": [5, 2]})
    assert asked == ["attack", "dodge", "damage", "damage"]
    encounter = check_tracker(page, http, eid, after=encounter["version"])
    hit = next(c for c in encounter["combatants"] if c["id"] == target["id"])
    assert hit["resources"]["hp"]["value"] == target["resources"]["hp"]["value"] - 10
    # the line is built from the steps (rule ids behind "?", figures, outcomes), in French
    history = page.locator("#encounter-history li[data-type=attack] .line")
    line = history.inner_text()
    assert line.startswith(f"{actor['name']} attaque {target['name']} :"), line
    before, after = target["resources"]["hp"]["value"], hit["resources"]["hp"]["value"]
    assert "test d'attaque : 31 contre" in line and "esquive : 76 contre" in line, line
    assert "2d6+3 = 10" in line and f"PV {before} → {after}" in line, line
    assert "GC-" not in line  # rule ids hidden until "?"
    page.get_by_role("button", name="Afficher les règles appliquées").click()
    page.locator("#encounter-history li[data-type=attack] .rule-id").first.wait_for(state="visible")
    assert "[GC-" in page.locator("#encounter-history li[data-type=attack] .line").inner_text()
    snap(page.locator("#encounter"), "encounter")

    # the table screen: large type, whose turn, status words (hp_visibility: status), never figures
    with page.expect_popup() as popup_info:
        page.get_by_role("button", name="Écran de table").click()
    table = popup_info.value
    table_errors: list[str] = []
    table.on("pageerror", lambda exc: table_errors.append(str(exc)))
    table.wait_for_selector("html[data-ready=table]")
    table.wait_for_selector(f"#table-screen[data-version='{encounter['version']}']")
    assert table.locator("#table-turn strong").text_content() == page.locator("#whose-turn").text_content()
    assert table.locator(f"li[data-combatant-id='{target['id']}'] [data-resource=hp]").text_content() == "PV : blessé"
    assert table.get_by_role("meter").count() == 0
    # large type; polled: the popup may re-render the line (an element just replaced has no computed style)
    table.wait_for_function(
        "() => parseFloat(getComputedStyle(document.querySelector('#table-turn')).fontSize) >= 40", timeout=10_000
    )

    assert table.evaluate(UNLABELLED) == [] and page.evaluate(UNLABELLED) == []  # the action form too
    # back to the GM's tab, as the GM would (the popup in front left the tab's frames at ~1 a second:
    # every click below waited ~2 s for two frames of a stable button)
    page.bring_to_front()
    page.get_by_role("button", name="Tour suivant").click()
    after_turn = check_tracker(page, http, eid, after=encounter["version"])
    assert after_turn["current"]["combatant_id"] != actor["id"]
    table.wait_for_selector(f"#table-screen[data-version='{after_turn['version']}']")  # live, by the stream

    undo = page.locator("#undo")
    assert undo.text_content() == "Annuler : Tour suivant"  # it names what it undoes
    undo.click()
    undone = check_tracker(page, http, eid, after=after_turn["version"])
    assert undone["current"]["combatant_id"] == actor["id"]
    page.locator("#encounter-history li.reverted[data-type=next_turn]").wait_for()

    page.once("dialog", lambda dialog: dialog.dismiss())  # "Terminer le combat" asks first: no
    page.get_by_role("button", name="Terminer le combat").click()
    page.wait_for_timeout(200)
    assert http.get(f"/v1/encounters/{eid}").json()["status"] == "active"
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Terminer le combat").click()
    ended = check_tracker(page, http, eid, after=undone["version"])
    assert ended["status"] == "ended"
    assert page.get_by_role("button", name="Tour suivant").count() == 0
    http.close()
    assert table_errors == []
    clean(page)


# --- the stream after a drop ---------------------------------------------------------------------


def test_the_log_resumes_after_a_drop_without_gaps_or_duplicates(live, pages):
    server = live.start(own=True)  # killed and started again here
    s = seed(live, server)
    page = pages()
    open_with_token(page, server.url, s["gm"])

    def roll(n: int) -> list[str]:
        with api(server.url, s["gm"]) as http:
            return [
                http.post(f"/v1/campaigns/{s['cid']}/rolls", json={"expression": "d100", "purpose": f"r{i}"}).json()[
                    "id"
                ]
                for i in range(n)
            ]

    [first] = roll(1)
    page.locator(f"#log-list li[data-entry-id='{first}']").wait_for()
    server.kill()
    page.wait_for_selector("#stream-state.reconnecting")
    server.start()
    missed = roll(3)  # while the page is still reconnecting: it must fetch them after its last event
    for entry_id in missed:
        page.locator(f"#log-list li[data-entry-id='{entry_id}']").wait_for(timeout=15_000)
    page.wait_for_selector("#stream-state.live")
    [later] = roll(1)
    page.locator(f"#log-list li[data-entry-id='{later}']").wait_for()
    assert log_ids(page) == [later, *reversed(missed), first]
    drop = (
        "net::ERR_CONNECTION_REFUSED",
        "net::ERR_CONNECTION_RESET",
        "net::ERR_EMPTY_RESPONSE",
        "net::ERR_INCOMPLETE_CHUNKED_ENCODING",
        "net::ERR_CONTENT_LENGTH_MISMATCH",  # a response with its length cut by the kill (seen once in CI)
    )  # the browser's notices of the drop itself (which one depends on where the kill lands)
    page.js_errors[:] = [e for e in page.js_errors if not e.endswith(drop)]
    clean(page)


# --- a big campaign ------------------------------------------------------------------------------


def big_campaign(live, server) -> dict[str, Any]:
    """`seed`'s campaign grown to 50 characters and 1,000 log entries in one import (`POST
    /v1/campaigns/import`) rather than ~1,050 requests (~4 s of the servers' CPU here): the small
    campaign and one roll through the API, exported; 48 more NPCs and 999 more rolls in the bundle."""
    s = seed(live, server)
    with api(server.url, s["gm"]) as http:
        r = http.post(f"/v1/campaigns/{s['cid']}/rolls", json={"expression": "3d6", "purpose": "seed 0"})
        assert r.status_code == 201, r.text
        bundle = http.get(f"/v1/campaigns/{s['cid']}/export").json()
    [goblin] = [c for c in bundle["characters"] if c["id"] == s["goblin"]["id"]]
    bundle["characters"] += [{**goblin, "id": f"garde{i}", "name": f"Garde {i + 1}"} for i in range(48)]
    [roll] = bundle["log"]
    start = datetime.fromisoformat(roll["created_at"])
    bundle["log"] = [
        {
            **roll,
            "id": f"roll{i}",
            "created_at": (start + timedelta(milliseconds=i)).isoformat(),
            "body": {**roll["body"], "id": f"roll{i}", "purpose": f"seed {i}"},  # (the body's id: the entry's)
        }
        for i in range(1000)
    ]
    with api(server.url) as http:
        r = http.post("/v1/campaigns/import", json=bundle)
        assert r.status_code == 201, r.text
    live.campaigns.append(r.json()["id"])
    return {"cid": r.json()["id"], "gm": r.json()["gm_token"]}


def test_the_first_screen_of_a_big_campaign_is_interactive_within_a_second(live, pages):
    server = live.start()
    s = big_campaign(live, server)
    page = pages()
    open_with_token(page, server.url, s["gm"])
    timings = []
    for _ in range(3):  # the best of three loads: the machine is shared, and the first load also warms the server
        page.reload()
        page.wait_for_selector("html[data-ready=dashboard]")
        timings.append(page.evaluate("performance.getEntriesByName('jdr:interactive')[0].startTime"))
    print(
        f"first screen interactive after {', '.join(f'{t:.0f}' for t in timings)} ms (50 characters, 1,000 log entries)"
    )
    # liveness on the shared CI machine (issue 22 item 3: no speed assert; the figure is printed above,
    # under a second when the machine is quiet): a first screen that waited for the whole log would not
    assert min(timings) < 5000, timings
    assert page.locator("article.character").count() == 50
    assert page.locator("#log-list li.entry").count() == 50
    assert page.get_by_role("button", name="Lancer", exact=True).is_enabled()
    page.get_by_role("button", name="Charger la suite").click()
    page.wait_for_function("() => document.querySelectorAll('#log-list li.entry').length === 100")
    assert len(set(log_ids(page))) == 100
    clean(page)
