"""The browser tests' pages reach only the tests' own servers (tests/browser/conftest.py
`only_local`): anything else is aborted before it leaves and listed in `page.outside`."""

from __future__ import annotations


def test_a_page_reaches_its_server_and_nothing_else(live, page):
    server = live.start()
    page.goto(f"{server.url}/healthz")  # the server itself: let through
    assert "ok" in page.content()
    away = [
        "https://example.org/away.png",
        "http://127.0.0.1.example.org/lookalike.png",
        "http://localhost.example.org:8080/lookalike.png",
    ]
    page.goto("about:blank")
    images = "".join(f'<img src="{url}">' for url in [*away, f"{server.url}/healthz?img"])
    page.set_content(images)
    page.wait_for_function("() => [...document.images].every(i => i.complete)")
    assert sorted(page.outside) == sorted(away)
