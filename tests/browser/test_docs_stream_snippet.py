"""docs/clients.md's browser stream snippet, run as written in Chromium: it receives the events,
and after a drop (its server killed, events committed meanwhile by another server on the same
database, the server started again) it resumes with a new ticket and `after=` the last id it
handled: every event once, none missed, and never `after=undefined`."""

from __future__ import annotations

import re
import time
from pathlib import Path

import httpx

from tests.hardening.conftest import bearer

CLIENTS = Path(__file__).resolve().parents[2] / "docs" / "clients.md"
MARKER = "<!-- browser stream snippet"
NAMES = ["character.created", "character.updated", "log.created"]


def snippet() -> str:
    """The ```js block that follows the marker in docs/clients.md."""
    text = CLIENTS.read_text()
    found = re.search(r"```js\n(.*?)```", text[text.index(MARKER) :], re.DOTALL)
    assert found, "no js block after the marker in docs/clients.md"
    return found[1]


def roll(url: str, gm: str, character_id: str) -> None:
    r = httpx.post(
        f"{url}/v1/characters/{character_id}/tests",
        json={"stat": "force", "dice": [42]},  # GC-T2: a super-critical success, karma moves (GC-K1)
        headers=bearer(gm),
        timeout=10.0,
    )
    assert r.status_code == 201, r.text


def event_ids(url: str, cid: str, gm: str) -> list[int]:
    r = httpx.get(f"{url}/v1/campaigns/{cid}/events?after=0&follow=false", headers=bearer(gm), timeout=10.0)
    return [int(line[4:]) for line in r.text.splitlines() if line.startswith("id: ")]


def wait_until(page, done, timeout: float = 30.0) -> None:
    """Let the page run (and Playwright deliver its events) until `done()`."""
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, "timed out"
        page.wait_for_timeout(50)


def test_the_docs_stream_snippet_receives_and_resumes_without_a_gap(live, page):
    server = live.start(own=True)  # killed and started again here
    other = live.start()  # the pool's, on the same database: writes while the first one is down
    cid, gm, character_id = live.campaign(server, "great-cosmos")  # event 1, before the page follows
    urls: list[str] = []
    opened: list[str] = []  # the streams whose answer (its headers) arrived: the stream is open
    page.on("request", lambda request: urls.append(request.url))
    page.on("response", lambda response: opened.append(response.url) if "/events?" in response.url else None)
    page.goto(f"{server.url}/")  # a page of the app's origin (`connect-src 'self'`)
    page.evaluate("() => {\n" + snippet() + "\nwindow.followEvents = followEvents;\n}")
    page.evaluate(
        """([api, cid, token, names]) => {
            window.got = [];
            window.resyncs = 0;
            window.follow = followEvents(api, cid, token, names, (name, data, id) => window.got.push([name, id]),
                                         () => { window.resyncs += 1; });
        }""",
        [server.url, cid, gm, NAMES],
    )
    wait_until(page, lambda: opened)  # it starts at the present: event 1 is not sent
    roll(server.url, gm, character_id)  # events 2 (character.updated) and 3 (log.created)
    page.wait_for_function("() => window.got.length >= 2", timeout=15_000)

    server.kill()
    roll(other.url, gm, character_id)  # events 4 and 5, while the page's server is down
    server.start()
    page.wait_for_function("() => window.got.length >= 4", timeout=60_000)
    roll(server.url, gm, character_id)  # 6 and 7, live again
    page.wait_for_function("() => window.got.length >= 6", timeout=15_000)
    page.wait_for_timeout(300)  # nothing more comes (no duplicate)

    got = page.evaluate("window.got")
    page.evaluate("window.follow.close()")
    assert [id_ for _, id_ in got] == [2, 3, 4, 5, 6, 7] == event_ids(server.url, cid, gm)[1:]
    assert [name for name, _ in got] == ["character.updated", "log.created"] * 3
    streams = [url for url in urls if "/events?" in url]
    assert len(streams) >= 2 and all("undefined" not in url for url in urls)
    assert "after=" not in streams[0]  # the first connection starts at the present
    resumed = [url for url in streams[1:] if "after=3" in url]
    assert resumed, streams  # the reconnection resumes after the last event handled
    tickets = [re.search(r"ticket=([^&]+)", url)[1] for url in streams]
    assert len(set(tickets)) == len(tickets)  # a new ticket for every connection
    assert page.evaluate("window.resyncs") == 0  # it had an id to resume from
    assert page.outside == []
