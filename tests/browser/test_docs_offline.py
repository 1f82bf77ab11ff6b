"""`/docs` (Swagger UI) and `/redoc` work with no network: their assets come from
the app itself (issue 14, item 2). The page may reach only the test's server."""

from __future__ import annotations

import re

import httpx

OPERATIONS = ("get", "put", "post", "patch", "delete")


def _operations(url: str) -> list[tuple[str, str]]:
    spec = httpx.get(f"{url}/openapi.json", timeout=10.0).json()
    return sorted((method, path) for path, item in spec["paths"].items() for method in item if method in OPERATIONS)


def test_swagger_ui_lists_every_operation_offline(live, page):
    server = live.start()
    expected = _operations(server.url)
    page.goto(f"{server.url}/docs")
    page.wait_for_selector(".opblock-summary-path", timeout=30_000)
    shown = page.eval_on_selector_all(
        ".opblock",
        "blocks => blocks.map(b => [b.querySelector('.opblock-summary-method').textContent.toLowerCase(),"
        " b.querySelector('.opblock-summary-path').getAttribute('data-path')])",
    )
    assert sorted(map(tuple, shown)) == expected
    assert page.outside == []


def test_redoc_shows_the_operations_offline(live, page):
    server = live.start()
    page.goto(f"{server.url}/redoc")
    heading = page.get_by_role("heading", name=re.compile("A one-use ticket to open the event stream"))
    heading.first.wait_for(timeout=30_000)
    assert page.get_by_role("heading", name=re.compile("Server-Sent Events: every change in the campaign")).count() >= 1
    # the one thing ReDoc asks its CDN for is the decorative logo of its "API docs by Redocly" credit
    assert [url for url in page.outside if not url.endswith("/redoc/logo-mini.svg")] == []


def test_the_docs_pages_name_no_other_host(client):
    """The HTML itself: every script, style and icon is served by the app."""
    for path in ("/docs", "/redoc"):
        r = client.get(path)
        assert r.status_code == 200, r.text
        assert not re.search(r"""(src|href)=["']?(https?:)?//""", r.text), r.text
        for asset in re.findall(r"""(?:src|href)=["']?(/[^"' >]+)""", r.text):
            assert client.get(asset).status_code == 200, asset
