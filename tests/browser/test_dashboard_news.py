"""A list of characters read while events arrive does not undo them (app/web/js/store.js
`mergeCharacters`): a character created meanwhile keeps its card, one deleted meanwhile does not
come back. Before, the page's read again after its stream opened (a resync) merged its older list
over the events: the new character's card was dropped and the deleted one's came back until the
next read (seen once in the full suite: an NPC's copies joined mid-fight never got their cards)."""

from __future__ import annotations

import re
import time
from contextlib import closing

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
