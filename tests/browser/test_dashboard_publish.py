"""A hidden GM roll published from the GM's roll log (API.md "Verifiable server dice": `POST
…/rolls/{id}/publish` once every epoch of its dice is revealed): no « Publier » before the reveal,
the reason said instead; after it, the button named after the roll; a refusal said by its code;
the player's page shows the roll and its dice live (`log.published`), and the line says « publié »
on both pages."""

from __future__ import annotations

import json
from contextlib import closing

import pytest

from tests.api.test_dice_epochs import server_dice
from tests.browser.dash_support import at_phone_widths, axe, fight, table
from tests.browser.test_dashboard import clean
from tests.browser.test_dashboard_epochs import gm_and_phone, open_as
from tests.browser.test_dashboard_phone_fight import phone

WORDS = {
    "fr": {
        "publish": "Publier",
        "label": "Publier le jet caché 2d10",
        "wait": "publiable après la révélation de son époque",
        "hidden": "caché",
        "published": "publié",
        "refused": "Les dés de ce jet sont d'une époque pas encore révélée : le MJ la révèle d'abord.",
    },
    "en": {
        "publish": "Publish",
        "label": "Publish the hidden roll 2d10",
        "wait": "publishable after its epoch's reveal",
        "hidden": "hidden",
        "published": "published",
        "refused": "This roll's dice belong to an epoch not revealed yet: the GM reveals it first.",
    },
}


def focused_entry(page) -> str | None:
    """The entry id of the log line holding the focus (the line itself or a control in it)."""
    return page.evaluate(
        "() => document.activeElement?.closest('#log-list li[data-entry-id]')?.dataset.entryId ?? null"
    )


@pytest.mark.parametrize("lang", ["fr", "en"])
def test_the_gm_publishes_a_hidden_roll_after_the_reveal_and_the_player_reads_it_live(live, pages, lang):
    server = live.start()
    s = table(live, server)
    words = WORDS[lang]
    cid = s["cid"]
    with closing(s["http"]) as http:
        gm, player = gm_and_phone(pages, server, s, lang)

        # a hidden GM roll and a visible one, server dice of the current epoch
        eid = http.get(f"/v1/campaigns/{cid}/dice-epochs/current").json()["id"]
        made = [
            http.post(f"/v1/campaigns/{cid}/rolls", json={"expression": "2d10", "hidden": True}),
            http.post(f"/v1/campaigns/{cid}/rolls", json={"expression": "1d6"}),
        ]
        assert [r.status_code for r in made] == [201, 201], [r.text for r in made]
        hidden, shown = (r.json() for r in made)
        dice = server_dice(hidden)
        assert len(dice) == 2 and {d["epoch"] for d in dice} == {eid}
        gm_line = gm.locator(f"#log-list li[data-entry-id='{hidden['id']}']")
        gm_line.wait_for(timeout=15_000)
        player.locator(f"#log-list li[data-entry-id='{shown['id']}']").wait_for(timeout=15_000)
        assert player.locator(f"#log-list li[data-entry-id='{hidden['id']}']").count() == 0

        # before the reveal: no Publier anywhere, the reason on the GM's line; the visible roll has none
        assert gm.get_by_role("button", name=words["publish"]).count() == 0
        assert gm_line.locator(".publish-wait").inner_text() == words["wait"]
        assert gm_line.locator(".badge.hidden-roll").inner_text() == words["hidden"]
        assert gm.locator(f"#log-list li[data-entry-id='{shown['id']}'] .publish-wait").count() == 0
        assert player.locator(".publish-wait, #log-list button.publish").count() == 0
        at_phone_widths(gm)

        # the GM reveals (API): the button comes on the GM's page live, named after the roll
        assert http.post(f"/v1/campaigns/{cid}/dice-epochs/current/reveal").status_code == 200
        revealed = http.get(f"/v1/campaigns/{cid}/dice-epochs").json()["items"]
        assert [e["id"] for e in revealed if e["revealed_at"]] == [eid]
        button = gm.get_by_role("button", name=words["label"], exact=True)
        button.wait_for(timeout=15_000)
        assert button.inner_text() == words["publish"]
        assert gm_line.locator(".publish-wait").count() == 0
        assert player.locator("#log-list button.publish").count() == 0  # the GM's alone
        assert axe(gm) == []
        at_phone_widths(gm)

        # a refusal (the server says the epoch is still secret): its reason by its code, focus kept on the button
        problem = {"title": "Conflict", "status": 409, "detail": "reveal it first", "code": "epoch_not_revealed"}
        publish_url = f"{server.url}/v1/campaigns/{cid}/rolls/{hidden['id']}/publish"
        gm.route(
            publish_url,
            lambda route: route.fulfill(
                status=409, content_type="application/problem+json", body=json.dumps({**problem, "epochs": [eid]})
            ),
        )
        button.click()
        gm.locator("#log-list ~ p.status").filter(has_text=words["refused"]).wait_for(timeout=15_000)
        assert gm.locator("#log-list ~ p.status").inner_text() == words["refused"]
        assert gm.evaluate("() => document.activeElement.getAttribute('aria-label')") == words["label"]
        assert http.get(f"/v1/campaigns/{cid}/rolls").json()["items"][1].get("published_at") is None
        gm.unroute(publish_url)

        # the GM publishes: the player's page shows the roll and its dice live, both lines say « publié »
        with gm.expect_response(lambda r: r.url == publish_url) as done:
            button.click()
        assert done.value.status == 200
        published = done.value.json()
        assert published["id"] == hidden["id"] and published["published_at"]
        gm_line.locator(".published-mark").wait_for(timeout=15_000)
        assert gm_line.locator(".published-mark").inner_text() == words["published"]
        assert gm_line.locator("button.publish, .badge.hidden-roll").count() == 0
        assert focused_entry(gm) == hidden["id"]  # the published line, not the page's top
        assert gm.locator("#log-list ~ p.status").inner_text() == ""

        line = player.locator(f"#log-list li[data-entry-id='{hidden['id']}']")
        line.wait_for(timeout=15_000)
        values = ", ".join(f"{d['die']} {d['value']}" for d in hidden["rolls"])
        assert line.locator(".dice-inline").inner_text() == f" [{values}]"
        assert f"2d10 = {hidden['total']}" in line.locator(".line").inner_text()
        assert line.locator(".published-mark").inner_text() == words["published"]
        assert line.locator("button.publish, .badge.hidden-roll").count() == 0
        assert player.locator("#log-list li[data-entry-id]").evaluate_all("ls => ls.map(l => l.dataset.entryId)") == [
            shown["id"],
            hidden["id"],
        ]  # in its place in the log, newest first
        assert focused_entry(gm) == hidden["id"]  # the GM's redraw on the event kept the focus there
        assert axe(gm) == [] and axe(player) == []
        at_phone_widths(player)
        clean(gm)
        clean(player)


@pytest.mark.parametrize("lang", ["fr", "en"])
def test_a_published_hidden_attack_comes_into_the_players_fight_history_live(live, pages, lang):
    """The GM's hidden attack is not in the player's fight history; published after the reveal, it
    comes in live (`log.published` reads the fight again), marked « publié », not « caché »."""
    server = live.start()
    s = table(live, server)
    words = WORDS[lang]
    with closing(s["http"]) as http:
        encounter = fight(s)
        eid = encounter["id"]
        by_character = {c["character_id"]: c["id"] for c in encounter["combatants"]}
        player = phone(pages, lang=lang if lang == "en" else None)
        open_as(player, server, s["player"]["token"], lang)
        player.wait_for_selector(f"#encounter-view[data-version='{encounter['version']}']", timeout=15_000)
        body = {
            "type": "attack",
            "actor_id": by_character[s["vorath"]["id"]],
            "target_id": by_character[s["aiko"]["id"]],
            "kind": "ranged",
            "damage": "1d6",
            "hidden": True,
        }
        made = http.post(f"/v1/encounters/{eid}/actions", json=body)
        assert made.status_code == 201, made.text
        action = made.json()
        entry = player.locator(f"#encounter-history li[data-action-id='{action['id']}']")
        assert entry.count() == 0
        assert http.post(f"/v1/campaigns/{s['cid']}/dice-epochs/current/reveal").status_code == 200
        assert http.post(f"/v1/campaigns/{s['cid']}/rolls/{action['id']}/publish").status_code == 200
        entry.wait_for(timeout=15_000)
        assert entry.locator(".published-mark").inner_text() == words["published"]
        assert entry.locator(".badge.hidden-roll").count() == 0
        assert axe(player) == []
        at_phone_widths(player)
        clean(player)
