"""A web page opens the event stream with `EventSource` (no headers: a one-use
ticket) and receives a test rolled through the API (issue 14, item 1)."""

from __future__ import annotations

import httpx

from tests.hardening.conftest import bearer

OPEN_STREAM = """async ([cid, token]) => {
    const r = await fetch(`/v1/campaigns/${cid}/events/tickets`,
                          {method: "POST", headers: {Authorization: `Bearer ${token}`}});
    if (r.status !== 201) return `ticket: ${r.status} ${await r.text()}`;
    const {ticket} = await r.json();
    window.received = [];
    return await new Promise(resolve => {
        const source = new EventSource(`/v1/campaigns/${cid}/events?ticket=${encodeURIComponent(ticket)}`);
        for (const type of ["character.updated", "log.created"])
            source.addEventListener(type, e => window.received.push({type, id: e.lastEventId, data: JSON.parse(e.data)}));
        source.onopen = () => resolve("open");
        source.onerror = () => resolve(`error (readyState ${source.readyState})`);
        window.source = source;
    });
}"""


def test_a_page_receives_a_test_through_event_source(live, page):
    server = live.start()
    cid, gm, character_id = live.campaign(server, "great-cosmos")  # event 1: character.created
    # a page of the app's origin: the dashboard's first screen, its CSP allowing `connect-src 'self'`
    # (not /docs: Swagger UI rendering the whole openapi.json cost ~5 s of CPU before the stream opened)
    page.goto(f"{server.url}/")
    assert page.evaluate(OPEN_STREAM, [cid, gm]) == "open"
    r = httpx.post(
        f"{server.url}/v1/characters/{character_id}/tests",
        json={"stat": "force", "dice": [42]},
        headers=bearer(gm),
        timeout=10.0,
    )
    assert r.status_code == 201, r.text
    page.wait_for_function("() => window.received.length > 1", timeout=15_000)
    # a super critical success moves karma (GC-K1): the sheet's change comes first, then its entry
    updated, event = page.evaluate("window.received")
    assert (updated["type"], updated["id"]) == ("character.updated", "2")
    assert (updated["data"]["id"], updated["data"]["version"]) == (character_id, 2)
    assert updated["data"]["sheet"]["karma"] == r.json()["effects"]["karma"]["after"]
    assert event["type"] == "log.created"
    assert event["data"]["entry"] == r.json()
    assert event["data"]["entry"]["outcome"] == "super_critical_success"
    assert event["id"] == "3"  # the campaign's third event
    assert page.outside == []
