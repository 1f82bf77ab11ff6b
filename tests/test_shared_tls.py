"""tests/conftest.py gives the test process's httpx clients one TLS context per kind (issue 22 item
1: building one parsed certifi's bundle, ~25 ms of CPU, for each of the suite's hundreds of clients
of plain-HTTP loopback servers); a client given a context of its own keeps it."""

from __future__ import annotations

import ssl

import httpx


def _context(client: httpx.Client | httpx.AsyncClient) -> ssl.SSLContext:
    return client._transport._pool._ssl_context  # type: ignore[attr-defined]


def test_clients_share_one_tls_context_per_kind_and_keep_their_own():
    with httpx.Client() as a, httpx.Client(base_url="http://127.0.0.1:1") as b, httpx.Client(verify=False) as c:
        assert _context(a) is _context(b)
        assert _context(a).verify_mode == ssl.CERT_REQUIRED and _context(a).check_hostname
        assert _context(c) is not _context(a) and _context(c).verify_mode == ssl.CERT_NONE
        with httpx.Client(verify=False) as d:
            assert _context(d) is _context(c)
    own = ssl.create_default_context()
    with httpx.Client(verify=own) as e:
        assert _context(e) is own


async def _async_context() -> ssl.SSLContext:
    async with httpx.AsyncClient() as client:
        return _context(client)


def test_async_clients_share_it_too():
    import asyncio

    with httpx.Client() as sync:
        assert asyncio.run(_async_context()) is _context(sync)
