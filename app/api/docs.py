"""`/docs` (Swagger UI) and `/redoc` served with their assets from the app itself,
so they work at a table with no internet: the pinned `fastapi-offline` package
ships the Swagger UI and ReDoc bundles; FastAPI's own pages point at them.

Each page is built once, with a Content-Security-Policy fitting it:
its scripts from the app (Swagger UI's inline start-up script allowed by its hash), the
OpenAPI document and "Try it out" on this origin only, never framed. ReDoc styles itself
with `<style>` elements it writes (styled-components), and searches in a `blob:` worker."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import fastapi_offline
from fastapi import FastAPI
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
from fastapi.responses import HTMLResponse

from app.api.headers import Files, inline_script_hashes, page_headers, policy

ASSETS = Path(fastapi_offline.__file__).resolve().parent / "static"
PREFIX = "/docs-assets"
PAGE_METHODS = ["GET", "HEAD"]


def _page(html: HTMLResponse, **directives: str) -> Callable[[], HTMLResponse]:
    """The page's responses: its HTML with its policy, both built once (`script_src` gets the
    hashes of the page's inline scripts); a response each time (middlewares add to its headers)."""
    body = bytes(html.body).decode()
    scripts = " ".join(filter(None, ("'self'", inline_script_hashes(body))))
    headers = page_headers(policy(script_src=scripts, **directives))
    return lambda: HTMLResponse(body, headers=headers)


def _swagger_ui(app: FastAPI, oauth2_redirect: str) -> Callable[[], HTMLResponse]:
    assert app.openapi_url is not None  # the app serves its document (create_app)
    return _page(
        get_swagger_ui_html(
            openapi_url=app.openapi_url,
            title=f"{app.title} — Swagger UI",
            swagger_js_url=f"{PREFIX}/swagger-ui-bundle.js",
            swagger_css_url=f"{PREFIX}/swagger-ui.css",
            swagger_favicon_url=f"{PREFIX}/favicon.png",
            oauth2_redirect_url=oauth2_redirect,
        ),
        style_src="'self'",
        img_src="'self' data:",
        connect_src="'self'",
    )


def _redoc(app: FastAPI) -> Callable[[], HTMLResponse]:
    assert app.openapi_url is not None  # the app serves its document (create_app)
    return _page(
        get_redoc_html(
            openapi_url=app.openapi_url,
            title=f"{app.title} — ReDoc",
            redoc_js_url=f"{PREFIX}/redoc.standalone.js",
            redoc_favicon_url=f"{PREFIX}/favicon.png",
            with_google_fonts=False,
        ),
        style_src="'self' 'unsafe-inline'",
        img_src="'self' data:",
        connect_src="'self'",
        worker_src="blob:",
    )


def install_docs(app: FastAPI, *, docs_url: str = "/docs", redoc_url: str = "/redoc") -> None:
    """Mount the assets and the two pages (the app is made with docs_url=None, redoc_url=None)."""
    app.mount(PREFIX, Files(directory=ASSETS), name="docs-assets")
    oauth2_redirect = f"{docs_url}/oauth2-redirect"
    swagger_ui_page, redoc_page = _swagger_ui(app, oauth2_redirect), _redoc(app)
    redirect_page = _page(get_swagger_ui_oauth2_redirect_html())

    @app.api_route(docs_url, methods=PAGE_METHODS, include_in_schema=False)
    async def swagger_ui() -> HTMLResponse:
        return swagger_ui_page()

    @app.api_route(oauth2_redirect, methods=PAGE_METHODS, include_in_schema=False)
    async def swagger_ui_redirect() -> HTMLResponse:
        return redirect_page()

    @app.api_route(redoc_url, methods=PAGE_METHODS, include_in_schema=False)
    async def redoc() -> HTMLResponse:
        return redoc_page()
