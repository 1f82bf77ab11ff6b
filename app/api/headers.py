"""The security headers of the pages the app serves: the dashboard, its
files, `/docs` and `/redoc`. Each page gets a Content-Security-Policy fitting what it loads
(everything from the app itself: no CDN, no inline script but the docs' own, allowed by its
hash), and every one `nosniff`, `X-Frame-Options: DENY` (with `frame-ancestors 'none'`) and
`Referrer-Policy: no-referrer`. All are static: built once, set where the response is built."""

from __future__ import annotations

import base64
import hashlib
import re
from typing import Any

from fastapi.staticfiles import StaticFiles
from starlette.responses import Response

BASE = {"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer"}

# what every page shares: nothing but what a directive below allows, never framed, no <base>
_STRICT = {"default-src": "'none'", "base-uri": "'none'", "form-action": "'self'", "frame-ancestors": "'none'"}


def policy(**directives: str) -> str:
    """A Content-Security-Policy: the strict base and `directives` (`script_src="'self'"`)."""
    merged = {**_STRICT, **{name.replace("_", "-"): value for name, value in directives.items()}}
    return "; ".join(f"{name} {value}" for name, value in merged.items())


def page_headers(csp: str) -> dict[str, str]:
    return {**BASE, "Content-Security-Policy": csp}


# the dashboard: ES modules and CSS of /web, its icon a data: URL, the API and event stream on this origin
DASHBOARD = page_headers(policy(script_src="'self'", style_src="'self'", img_src="'self' data:", connect_src="'self'"))

_INLINE_SCRIPT = re.compile(r"<script>(.*?)</script>", re.DOTALL)


def inline_script_hashes(html: str) -> str:
    """The CSP sources allowing exactly the page's inline scripts (`'sha256-…'`, CSP level 2)."""
    digests = (hashlib.sha256(body.encode()).digest() for body in _INLINE_SCRIPT.findall(html))
    return " ".join(f"'sha256-{base64.b64encode(d).decode()}'" for d in digests)


class Files(StaticFiles):
    """Static files with the base headers (and `extra` ones)."""

    def __init__(self, *args: Any, extra: dict[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.headers = {**BASE, **(extra or {})}

    def file_response(self, *args: Any, **kwargs: Any) -> Response:
        response = super().file_response(*args, **kwargs)
        response.headers.update(self.headers)
        return response
