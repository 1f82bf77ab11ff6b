"""Joining a table with a link (API.md "Joining a table with a link"): the GM's page makes a
player's single-use invitation (the link, a copy button, its QR code); a phone opening the link is
in as that player with a token of its own; the same link again says that it no longer works. Each
in French and in English."""

from __future__ import annotations

from contextlib import closing

import pytest

from tests.browser.dash_support import no_overflow, table
from tests.browser.test_dashboard import LOGIN, clean, open_with_token, snap, speaking

PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True}
WORDS = {
    "fr": {
        "invite": "Inviter Léa par un lien",
        "title": "Lien d'invitation de Léa",
        "link": "Lien d'invitation",
        "qr": "Code QR du lien d'invitation de Léa",
        "copy": "Copier le lien",
        "copied": "Copié",
        "role": "Joueur : Léa",
        "spent": "Ce lien d'invitation n'est plus valable : il a déjà servi ou il a expiré. Demandez-en un nouveau au MJ.",
    },
    "en": {
        "invite": "Invite Léa by a link",
        "title": "Invitation link of Léa",
        "link": "Invitation link",
        "qr": "QR code of the invitation link of Léa",
        "copy": "Copy the link",
        "copied": "Copied",
        "role": "Player: Léa",
        "spent": "This invitation link is no longer valid: it was already used or it expired. Ask the GM for a new one.",
    },
}


@pytest.mark.parametrize("lang", ["fr", "en"])
def test_a_player_joins_by_the_gms_link_once(live, pages, lang):
    server = live.start()
    s = table(live, server)
    words = WORDS[lang]
    gm = pages(viewport={"width": 1280, "height": 900})
    gm.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.url)
    with closing(s["http"]):
        open_with_token(gm, server.url, s["gm"], lang)
        invite = gm.get_by_role("button", name=words["invite"])
        invite.focus()
        gm.evaluate("() => { document.activeElement.jdrProbe = true; }")
        # a character's event redraws the list in place: the focus stays on the button
        r = s["http"].patch(f"/v1/characters/{s['aiko']['id']}", json={"name": "Aiko la Brave"})
        assert r.status_code == 200, r.text
        gm.locator("#player-list", has_text="Aiko la Brave").wait_for()
        assert gm.evaluate("() => Boolean(document.activeElement.jdrProbe)")
        gm.keyboard.press("Enter")
        qr = gm.locator("#invite-qr")
        qr.wait_for()
        url = gm.locator("#invite-url").input_value()
        assert url.startswith(f"{server.url}/join#") and len(url.split("#", 1)[1]) >= 43
        assert gm.get_by_role("heading", name=words["title"]).is_visible()
        assert gm.get_by_label(words["link"], exact=True).input_value() == url
        assert qr.get_attribute("alt") == words["qr"]
        # the server's SVG, drawn as an image (the page's CSP allows data: images, runs no script in them)
        gm.wait_for_function("() => document.getElementById('invite-qr').naturalWidth > 0")
        assert qr.get_attribute("src").startswith("data:image/svg+xml,")
        if lang == "fr":
            snap(gm.locator("#players"), "join")  # the README's picture of an invitation (JDR_SCREENSHOTS=1)
        gm.get_by_role("button", name=words["copy"]).click()
        gm.wait_for_function(
            "copied => document.getElementById('invite-copy').textContent === copied", arg=words["copied"]
        )
        assert gm.evaluate("navigator.clipboard.readText()") == url

        phone = speaking(pages(**PHONE), lang)
        phone.goto(url)
        phone.wait_for_selector(f"html[lang={lang}][data-ready=dashboard]")
        phone.wait_for_selector("#stream-state.live")
        assert phone.locator("#role").text_content() == words["role"]
        assert phone.url == f"{server.url}/"  # the code left the address bar
        token = phone.evaluate("sessionStorage.getItem('jdr.token')")
        assert token and token != s["player"]["token"]  # a credential of this device's own
        me = s["http"].get("/v1/me", headers={"Authorization": f"Bearer {token}"}).json()
        assert me == {"campaign_id": s["cid"], "role": "player", "player_id": s["player"]["id"]}
        phone.locator("article.character", has_text="Aiko la Brave").wait_for()
        no_overflow(phone)

        again = speaking(pages(**PHONE), lang)
        again.goto(url)
        alert = again.get_by_role("alert")
        alert.wait_for()
        assert alert.text_content() == words["spent"]
        assert again.evaluate("sessionStorage.getItem('jdr.token')") is None
        assert again.get_by_label(LOGIN[lang][0]).is_visible()  # the first screen, to paste a token
        no_overflow(again)
        for page in (gm, phone):
            clean(page)
