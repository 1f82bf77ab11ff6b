"""Browser tests: Playwright for Python driving Debian's Chromium
(`apt-get install -y chromium`; Playwright's own browser download cannot work
here) against a real uvicorn (the `live` fixture of tests/conftest.py).

They are skipped only when /usr/bin/chromium is missing and JDR_REQUIRE_BROWSER
is unset; CI sets it (.ci/run), so there a missing browser fails."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


class _Chromium:
    """One Chromium (and one Playwright driver) for a run of browser tests in a row, not one per
    module (a launch took 2-4 s here): launched by the first test that needs it, closed after the
    last one of the run (`pytest_runtest_teardown` below), so no sync Playwright (an asyncio loop
    on the main thread) outlives the browser tests into a later test's `asyncio.run`."""

    def __init__(self) -> None:
        self.playwright: Any = None
        self.browser: Any = None

    def get(self) -> Any:
        if self.browser is None:
            from playwright.sync_api import sync_playwright

            self.playwright = sync_playwright().start()
            self.browser = self.playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        return self.browser

    def close(self) -> None:
        browser, playwright, self.browser, self.playwright = self.browser, self.playwright, None, None
        try:
            if browser is not None:
                browser.close()
        finally:
            if playwright is not None:
                playwright.stop()


CHROMIUM_RUN = _Chromium()


@pytest.fixture(scope="module")
def browser() -> Any:
    if not os.path.exists(CHROMIUM):
        if os.environ.get("JDR_REQUIRE_BROWSER"):
            pytest.fail(f"{CHROMIUM} is missing and JDR_REQUIRE_BROWSER is set (apt-get install -y chromium)")
        pytest.skip(f"{CHROMIUM} is missing (apt-get install -y chromium; JDR_REQUIRE_BROWSER=1 makes this a failure)")
    return CHROMIUM_RUN.get()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """After a browser test's own teardown (its pages' contexts closed): the Chromium is closed
    unless the next test of this process uses it too."""
    yield
    if nextitem is None or "browser" not in getattr(nextitem, "fixturenames", ()):
        CHROMIUM_RUN.close()


def pytest_sessionfinish() -> None:
    CHROMIUM_RUN.close()


# every URL but the test's own servers' (127.0.0.1, localhost) and inline data: what `only_local`
# intercepts. A pattern, not a function: Playwright's driver matches it in the browser's process,
# so the page's own requests go straight to the server (a function would be asked of every one of
# them through the Python driver, a round trip each).
NOT_LOCAL = re.compile(r"^(?!(?:https?|wss?)://(?:127\.0\.0\.1|localhost)(?::\d+)?(?:[/?#]|$)|data:|blob:)")


def only_local(context: Any, outside: list[str]) -> None:
    """Let `context` reach only the test's own servers (127.0.0.1): every other request is
    aborted and listed in `outside`."""

    def handle(route) -> None:
        outside.append(route.request.url)
        route.abort()

    context.route(NOT_LOCAL, handle)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    """Each phase's report on its item (`item.rep_call`): the screens' check below runs after a passed test."""
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"rep_{report.when}", report)


def _fits_screens(request: pytest.FixtureRequest, open_pages: list[Any]) -> None:
    """Every page a passed test leaves on one of the test's servers is checked on a TV (1920×1080) and
    then at each phone width (`dash_support.at_phone_widths`) as a touch screen: nothing scrolls
    sideways in any state a test reaches, not only in the phone and TV tests' (a TV's page included: a
    phone may open it too, and any page may be cast to the TV). The page is not used afterwards, so the
    sizes and the touch emulation are not undone."""
    from tests.browser.dash_support import TV, at_phone_widths, no_overflow

    report = getattr(request.node, "rep_call", None)
    if report is None or not report.passed:
        return
    for page in open_pages:
        if page.is_closed() or not re.match(r"^https?://(127\.0\.0\.1|localhost)", page.url):
            continue
        if page.evaluate("() => document.contentType") != "text/html":
            continue  # a JSON or text answer the test opened, not a page of the dashboard
        page.set_viewport_size(TV)
        page.wait_for_timeout(50)  # a layout after the resize
        no_overflow(page)
        # a phone's touch screen: `(pointer: coarse)` matches and navigator.maxTouchPoints > 0, as on
        # the phones the widths stand for (a context's `has_touch` cannot be set once it is open)
        touch = page.context.new_cdp_session(page)
        touch.send("Emulation.setTouchEmulationEnabled", {"enabled": True, "maxTouchPoints": 5})
        assert page.evaluate("() => matchMedia('(pointer: coarse)').matches && navigator.maxTouchPoints === 5")
        at_phone_widths(page)


@pytest.fixture
def page(browser, request) -> Iterator:
    """A fresh page that may reach only the test's own servers (127.0.0.1): every
    other request is aborted and listed in `page.outside`."""
    context = browser.new_context()
    outside: list[str] = []
    only_local(context, outside)
    page = context.new_page()
    page.outside = outside
    try:
        yield page
        _fits_screens(request, [page])
    finally:
        context.close()


# the browser's own notice of an HTTP error answer (a 422 the page asked for on purpose) is not a script error
BROWSER_NOTICE = re.compile(r"^Failed to load resource: the server responded with a status of 4\d\d\b")


@pytest.fixture
def pages(browser, request) -> Iterator[Callable[..., Any]]:
    """`pages()` opens a page in a browser context of its own (a GM's, a player's…), reaching only
    127.0.0.1 (`page.outside`), and records what its JavaScript logged as an error or threw
    (`page.js_errors`) and the server's 5xx answers (`page.server_errors`)."""
    contexts = []

    def new_page(**options: Any):
        context = browser.new_context(**options)
        contexts.append(context)
        outside: list[str] = []
        only_local(context, outside)
        page = context.new_page()
        page.outside, page.js_errors, page.server_errors = outside, [], []
        page.on(
            "console",
            lambda m: (
                page.js_errors.append(f"console.{m.type}: {m.text}")
                if m.type == "error" and not BROWSER_NOTICE.match(m.text)
                else None
            ),
        )
        page.on("pageerror", lambda exc: page.js_errors.append(f"uncaught: {exc}"))
        page.on("response", lambda r: page.server_errors.append(f"{r.status} {r.url}") if r.status >= 500 else None)
        return page

    try:
        yield new_page
        _fits_screens(request, [p for context in contexts for p in context.pages])
    finally:
        for context in contexts:
            context.close()
