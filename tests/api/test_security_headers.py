"""Issue 21 item 11: the dashboard, its files and the docs pages send security headers — a
Content-Security-Policy fitting each page, nosniff, no framing, no referrer — and `HEAD /` is a
200. (That the pages still work under their policies: tests/browser/test_dashboard.py and
test_docs_offline.py, in Chromium.)"""

from __future__ import annotations

import base64
import hashlib
import re

import pytest

BASE = {"x-content-type-options": "nosniff", "x-frame-options": "DENY", "referrer-policy": "no-referrer"}
STRICT = "default-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
DASHBOARD = f"{STRICT}; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'"
INLINE_SCRIPT = re.compile(r"<script>(.*?)</script>", re.DOTALL)


def _sent(response, names=(*BASE, "content-security-policy")) -> dict[str, str]:
    return {name: response.headers[name] for name in names if name in response.headers}


def _hash(script: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(script.encode()).digest()).decode() + "'"


@pytest.mark.parametrize("path", ["/", "/join"])  # /join: the page an invitation link opens
@pytest.mark.parametrize("method", ["GET", "HEAD"])
def test_issue21_item11_the_dashboard_has_its_policy_and_answers_head(client, method, path):
    r = client.request(method, path)
    assert r.status_code == 200, r.text
    assert _sent(r) == {**BASE, "content-security-policy": DASHBOARD}
    assert r.headers["cache-control"] == "no-cache"
    assert r.headers["content-type"] == "text/html; charset=utf-8"
    assert r.content == (b"" if method == "HEAD" else r.content)


def test_issue21_item11_the_dashboard_page_has_no_inline_script_style_or_handler(client):
    """What its policy forbids is not in the page (its scripts are /web modules)."""
    html = client.get("/").text
    assert INLINE_SCRIPT.findall(html) == []
    assert re.findall(r"<script\b[^>]*>", html) == ['<script type="module" src="/web/js/main.js">']
    assert re.findall(r"\s(on\w+|style)=", html) == []


@pytest.mark.parametrize(
    "path", ["/web/js/main.js", "/web/app.css", "/docs-assets/swagger-ui-bundle.js", "/docs-assets/redoc.standalone.js"]
)
def test_issue21_item11_the_pages_files_are_never_sniffed_framed_or_referred(client, path):
    r = client.get(path)
    assert r.status_code == 200
    assert _sent(r) == BASE


def test_issue21_item11_swagger_ui_allows_its_own_start_up_script_only(client):
    r = client.get("/docs")
    assert r.status_code == 200
    [start_up] = INLINE_SCRIPT.findall(r.text)
    assert "SwaggerUIBundle(" in start_up
    assert _sent(r) == {
        **BASE,
        "content-security-policy": (
            f"{STRICT}; script-src 'self' {_hash(start_up)}; style-src 'self'; img-src 'self' data:; connect-src 'self'"
        ),
    }


def test_issue21_item11_the_oauth2_redirect_page_allows_its_script_only(client):
    r = client.get("/docs/oauth2-redirect")
    [script] = INLINE_SCRIPT.findall(r.text)
    assert _sent(r) == {**BASE, "content-security-policy": f"{STRICT}; script-src 'self' {_hash(script)}"}


def test_issue21_item11_redoc_gets_its_styles_and_search_worker(client):
    """ReDoc writes its styles as <style> elements and searches in a blob: worker; no inline script."""
    r = client.get("/redoc")
    assert INLINE_SCRIPT.findall(r.text) == []
    assert _sent(r) == {
        **BASE,
        "content-security-policy": (
            f"{STRICT}; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
            "connect-src 'self'; worker-src blob:"
        ),
    }


@pytest.mark.parametrize("path", ["/docs", "/redoc"])
def test_issue21_item11_the_docs_pages_answer_head(client, path):
    r = client.head(path)
    assert (r.status_code, r.content) == (200, b"")
    assert _sent(r) == _sent(client.get(path))


def test_issue21_item11_a_page_response_is_not_shared_between_requests(client):
    """Each request gets its own response: a middleware's header is not added twice."""
    for _ in range(3):
        r = client.get("/docs")
        assert r.headers.get_list("x-request-id") == [r.headers["x-request-id"]]
