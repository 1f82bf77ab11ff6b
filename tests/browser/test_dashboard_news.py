"""A list of characters read while events arrive does not undo them (app/web/js/store.js
`mergeCharacters`): a character created meanwhile keeps its card, one deleted meanwhile does not
come back. Before, the page's read again after its stream opened (a resync) merged its older list
over the events: the new character's card was dropped and the deleted one's came back until the
next read (seen once in the full suite: an NPC's copies joined mid-fight never got their cards)."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from contextlib import closing
from typing import Any

from tests.browser.dash_support import table
from tests.browser.test_dashboard import GOBLIN_SHEET, open_with_token

CARD = "article.character[data-character-id='{}']"


def test_a_list_read_before_a_creation_and_a_deletion_does_not_undo_them(live, pages):
    server = live.start()
    s = table(live, server)
    gm = pages(viewport={"width": 1280, "height": 900})
    made: dict[str, str] = {}
    reads = []

    def stale_list(route) -> None:
        """The list read after the stream opened (the page's second) answers as of before the
        creation and the deletion, and arrives after their events."""
        reads.append(route.request.url)
        if route.request.method != "GET" or len(reads) != 2:
            route.continue_()
            return
        before = route.fetch()
        r = s["http"].post(
            f"/v1/campaigns/{s['cid']}/characters", json={"name": "Renfort", "kind": "npc", "sheet": GOBLIN_SHEET}
        )
        assert r.status_code == 201, r.text
        made["id"] = r.json()["id"]
        assert s["http"].delete(f"/v1/characters/{s['vorath']['id']}").status_code == 204
        time.sleep(1.0)  # the events reach the page meanwhile (at once here; at most one 0.5 s poll)
        route.fulfill(response=before)

    with closing(s["http"]):
        gm.route(re.compile(rf".*/v1/campaigns/{s['cid']}/characters(\?.*)?$"), stale_list)
        open_with_token(gm, server.url, s["gm"])
        gm.wait_for_selector("html[data-synced=true]")
        assert len(reads) >= 2 and "id" in made
        gm.wait_for_selector(CARD.format(made["id"]))
        assert gm.locator(CARD.format(s["vorath"]["id"])).count() == 0
        assert gm.locator(CARD.format(s["aiko"]["id"])).count() == 1
        assert gm.js_errors == [] and gm.server_errors == []


OPTIONS = "() => [...document.querySelectorAll('select[name=encounter] option')].map(o => o.value)"


def until_held(page, held: list) -> None:
    """Until the route handler has held its read and fetched the server's answer (the sync API runs
    handlers only within its own calls, so the test waits through one)."""
    for _ in range(200):
        if held:
            break
        page.wait_for_timeout(50)
    assert len(held) == 1


def holding(held: list, armed: list[bool], wanted: Callable[[Any], bool] = lambda _route: True):
    """A route handler that holds the first read it sees once `armed` (and `wanted`), with the server's
    answer fetched then, for the test to answer later (`held`); every other read goes on."""

    def handle(route) -> None:
        if armed and not held and wanted(route):
            held.append((route, route.fetch()))
        else:
            route.continue_()

    return handle


def answer_late(page, held: list, unknown: str) -> None:
    """Answer the held read with what the server said then (which does not know `unknown` yet), and
    let the page handle it."""
    route, before = held[0]
    assert unknown not in before.text()
    with page.expect_response(lambda r: r.request is route.request):
        route.fulfill(response=before)
    page.evaluate("() => new Promise(done => setTimeout(done, 100))")  # the answer handled


def test_an_older_list_of_fights_answered_last_does_not_replace_a_newer_one(live, pages):
    """The fights' list read after the stream opened answers last, as of before a fight the GM made
    meanwhile; the read that fight's event started answered first: the picker keeps the new fight
    (encounter.js `readList`). Before, the older answer replaced the list and the fight left the picker."""
    server = live.start()
    s = table(live, server)
    gm = pages(viewport={"width": 1280, "height": 900})
    held: list = []
    reads: list[str] = []

    def hold_second(route) -> None:
        reads.append(route.request.url)
        if len(reads) == 2:  # the resync's: answered later, by the test, with what it read now
            held.append((route, route.fetch()))
        else:
            route.continue_()

    with closing(s["http"]):
        gm.route(re.compile(rf".*/v1/campaigns/{s['cid']}/encounters\?limit=50$"), hold_second)
        open_with_token(gm, server.url, s["gm"])  # the first read answered, the stream live
        until_held(gm, held)  # the resync's read
        made = s["http"].post(
            f"/v1/campaigns/{s['cid']}/encounters",
            json={"name": "Embuscade", "combatants": [{"character_id": s["aiko"]["id"], "side": "héros"}]},
        )
        assert made.status_code == 201, made.text
        eid = made.json()["id"]
        gm.wait_for_function(f"() => ({OPTIONS})().includes('{eid}')")  # the event's own read
        answer_late(gm, held, eid)
        assert eid in gm.evaluate(OPTIONS)
        assert gm.js_errors == [] and gm.server_errors == []


def test_a_roll_arriving_while_the_log_reloads_for_new_filters_stays_in_it(live, pages):
    """The GM clears the log's character filter; the page's read of the newest entries answers as of
    before a test rolled meanwhile, whose entry came live first: it stays at the top (log.js `load`).
    Before, the older page replaced the whole list and the roll left the log until the next read."""
    server = live.start()
    s = table(live, server)
    gm = pages(viewport={"width": 1280, "height": 900})
    held: list = []
    armed: list[bool] = []

    with closing(s["http"]):
        gm.route(re.compile(rf".*/v1/campaigns/{s['cid']}/rolls(\?.*)?$"), holding(held, armed))
        open_with_token(gm, server.url, s["gm"])
        gm.wait_for_selector("html[data-synced=true]")
        characters = gm.get_by_label("Filtrer par personnage")
        characters.select_option(label="Aiko")
        gm.wait_for_selector("#log-list li.hint")  # no entry of Aiko's yet
        armed.append(True)
        characters.select_option(value="")
        until_held(gm, held)  # the reload's read
        r = s["http"].post(f"/v1/characters/{s['aiko']['id']}/tests", json={"stat": "force", "dice": [42]})
        assert r.status_code == 201, r.text
        entry = f"#log-list li[data-entry-id='{r.json()['id']}']"
        gm.wait_for_selector(entry)  # came live
        answer_late(gm, held, r.json()["id"])
        assert gm.locator(entry).count() == 1
        assert gm.js_errors == [] and gm.server_errors == []


def test_a_log_read_for_filters_replaced_meanwhile_is_dropped_when_it_answers_last(live, pages):
    """The GM filters the log by Aiko, then by Vorath before Aiko's read answers; Aiko's answer
    arrives last: the log keeps Vorath's entries, which its filters say (log.js `load`: only the
    latest load's answer is shown). Without that guard the older answer replaced the list."""
    server = live.start()
    s = table(live, server)
    gm = pages(viewport={"width": 1280, "height": 900})
    held: list = []
    armed: list[bool] = []
    tests = {}
    for who in ("aiko", "vorath"):
        r = s["http"].post(f"/v1/characters/{s[who]['id']}/tests", json={"stat": "force", "dice": [42]})
        assert r.status_code == 201, r.text
        tests[who] = f"#log-list li[data-entry-id='{r.json()['id']}']"

    with closing(s["http"]):
        gm.route(
            re.compile(rf".*/v1/campaigns/{s['cid']}/rolls(\?.*)?$"),
            holding(held, armed, lambda route: s["aiko"]["id"] in route.request.url),
        )
        open_with_token(gm, server.url, s["gm"])
        gm.wait_for_selector("html[data-synced=true]")
        gm.wait_for_selector(tests["aiko"])
        gm.wait_for_selector(tests["vorath"])
        armed.append(True)
        characters = gm.get_by_label("Filtrer par personnage")
        characters.select_option(label="Aiko")
        until_held(gm, held)  # Aiko's read, not answered yet
        characters.select_option(label="Seigneur Vorath")
        gm.wait_for_function(f'() => !document.querySelector("{tests["aiko"]}")')  # Vorath's read answered
        route, aikos = held[0]
        assert s["aiko"]["id"] in aikos.text()
        with gm.expect_response(lambda r: r.request is route.request):
            route.fulfill(response=aikos)
        gm.evaluate("() => new Promise(done => setTimeout(done, 200))")  # the late answer handled
        assert gm.locator(tests["aiko"]).count() == 0
        assert gm.locator(tests["vorath"]).count() == 1
        assert characters.input_value() == s["vorath"]["id"]
        assert gm.js_errors == [] and gm.server_errors == []


def test_a_player_added_between_the_first_read_and_the_stream_is_listed(live, pages):
    """The page reads its players before its event stream opens; a player added in between sends its
    `player.created` before the stream could hear it. The reads after the stream opened (main.js
    `resync`) read the players too: the GM's list shows it. Before, it stayed missing until a reload."""
    server = live.start()
    s = table(live, server)
    gm = pages(viewport={"width": 1280, "height": 900})
    reads: list[str] = []

    def added_meanwhile(route) -> None:
        reads.append(route.request.url)
        if route.request.method != "GET" or len(reads) != 1:
            route.continue_()
            return
        before = route.fetch()  # the first read: as of before the new player
        r = s["http"].post(f"/v1/campaigns/{s['cid']}/players", json={"name": "Noé"})
        assert r.status_code == 201, r.text
        assert "Noé" not in before.text()
        route.fulfill(response=before)

    with closing(s["http"]):
        gm.route(re.compile(rf".*/v1/campaigns/{s['cid']}/players(\?.*)?$"), added_meanwhile)
        open_with_token(gm, server.url, s["gm"])
        gm.wait_for_selector("html[data-synced=true]")
        gm.wait_for_selector("#player-list li:has-text('Noé')")
        assert len(reads) >= 2
        assert gm.locator("#player-list li").all_inner_texts()[0].startswith("Léa")
        assert gm.js_errors == [] and gm.server_errors == []


def test_a_player_removed_elsewhere_leaves_the_gms_list(live, pages):
    """The GM removes Léa from another tab (here: the API): this page hears `player.deleted` and drops
    her from its players' list."""
    server = live.start()
    s = table(live, server)
    gm = pages(viewport={"width": 1280, "height": 900})
    with closing(s["http"]):
        open_with_token(gm, server.url, s["gm"])
        gm.wait_for_selector("html[data-synced=true]")
        gm.wait_for_selector("#player-list li:has-text('Léa')")
        r = s["http"].delete(f"/v1/campaigns/{s['cid']}/players/{s['player']['id']}")
        assert r.status_code == 204, r.text
        gm.wait_for_selector("#player-list li:has-text('Léa')", state="detached")
        assert gm.locator("#player-list li").all_inner_texts() == ["Aucun joueur pour l'instant."]
        assert gm.js_errors == [] and gm.server_errors == []
