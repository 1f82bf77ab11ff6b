"""Browser tests: Playwright for Python driving Debian's Chromium
(`apt-get install -y chromium`; Playwright's own browser download cannot work
here) against a real uvicorn (the hardening suite's `live` fixture).

They are skipped only when /usr/bin/chromium is missing and JDR_REQUIRE_BROWSER
is unset; CI sets it (.ci/run), so there a missing browser fails."""
from __future__ import annotations

import os
from typing import Iterator

import pytest

from tests.hardening.conftest import live, server_database_url  # noqa: F401 (fixtures, re-exported)

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def browser() -> Iterator:
    if not os.path.exists(CHROMIUM):
        if os.environ.get("JDR_REQUIRE_BROWSER"):
            pytest.fail(f"{CHROMIUM} is missing and JDR_REQUIRE_BROWSER is set (apt-get install -y chromium)")
        pytest.skip(f"{CHROMIUM} is missing (apt-get install -y chromium; JDR_REQUIRE_BROWSER=1 makes this a failure)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def page(browser) -> Iterator:
    """A fresh page that may reach only the test's own servers (127.0.0.1): every
    other request is aborted and listed in `page.outside`."""
    from urllib.parse import urlsplit

    context = browser.new_context()
    outside: list[str] = []

    def only_local(route) -> None:
        url = route.request.url
        if urlsplit(url).hostname in ("127.0.0.1", "localhost") or url.startswith("data:"):
            route.continue_()
        else:
            outside.append(url)
            route.abort()

    context.route("**/*", only_local)
    page = context.new_page()
    page.outside = outside
    try:
        yield page
    finally:
        context.close()
