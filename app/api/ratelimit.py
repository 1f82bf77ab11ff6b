"""Rate limits (the `limits` library, moving windows), answered 429 with Retry-After:

- per token: RATE_LIMIT_PER_MINUTE requests a minute (0 = off);
- per client address, failed authentications: AUTH_FAILURES_PER_MINUTE (no
  token, an unknown token, a wrong admin token; 0 = off). Once an address is
  over it, its requests that need a token look-up are refused before any
  database access (a token this process has already authenticated still works);
- per client address, open campaign creation: CAMPAIGNS_PER_HOUR_PER_ADDRESS
  attempts of POST /v1/campaigns while ADMIN_TOKEN is unset (0 = off).

The counts are kept in this process's memory, or in Redis when REDIS_URL is set
(shared by every worker and instance; keys start with REDIS_KEY_PREFIX). If Redis
cannot be reached the limiter falls back to this process's memory, logs it, and
tries Redis again after a few seconds: the limits still hold per process (never
a 500, never a request waiting on a dead store, and brute-force throttling is
not switched off by taking Redis down)."""

from __future__ import annotations

import ipaddress
import logging
import math
import time
from collections.abc import AsyncIterator
from typing import Any

from fastapi import Request
from limits import RateLimitItem, RateLimitItemPerHour, RateLimitItemPerMinute
from limits.aio.strategies import MovingWindowRateLimiter
from limits.storage import storage_from_string

from app.core.config import Settings
from app.kit.errors import TooManyRequests, Unauthorized

log = logging.getLogger("app.ratelimit")

REDIS_RETRY_SECONDS = 5.0  # after a Redis failure, memory only for this long
REDIS_TIMEOUT_SECONDS = 0.5  # connect and reply timeout of the Redis client


def client_address(request: Request) -> str:
    """The peer's address (behind a proxy: uvicorn's --forwarded-allow-ips decides
    whether X-Forwarded-For is believed)."""
    return request.client.host if request.client else "unknown"


def _loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:  # "unknown", a test client's name
        return address == "localhost"


class RateLimiter:
    """The service's limits, over a shared (Redis) or per-process (memory) store."""

    def __init__(self, settings: Settings):
        per_token, failures, campaigns = (
            settings.rate_limit_per_minute,
            settings.auth_failures_per_minute,
            settings.campaigns_per_hour_per_address,
        )
        self.per_token = RateLimitItemPerMinute(per_token) if per_token else None
        self.auth_failures = RateLimitItemPerMinute(failures) if failures else None
        self.campaigns = RateLimitItemPerHour(campaigns) if campaigns and not settings.admin_token else None
        self.throttle_loopback = settings.campaign_throttle_loopback
        self.memory = MovingWindowRateLimiter(storage_from_string("async+memory://"))
        self.shared: MovingWindowRateLimiter | None = None
        if settings.redis_url:
            storage = storage_from_string(
                f"async+{settings.redis_url}",
                implementation="redispy",
                key_prefix=settings.redis_key_prefix,
                wrap_exceptions=True,
                socket_connect_timeout=REDIS_TIMEOUT_SECONDS,
                socket_timeout=REDIS_TIMEOUT_SECONDS,
            )
            self.shared = MovingWindowRateLimiter(storage)
        self._shared_down_until = 0.0

    # --- the three limits ------------------------------------------------------------

    async def hit_token(self, token_hash: str) -> None:
        if self.per_token:
            await self._hit(
                self.per_token,
                "token",
                token_hash,
                what=f"more than {self.per_token.amount} requests a minute with this token",
            )

    async def refuse_failing_address(self, address: str) -> None:
        """429 when `address` has failed to authenticate too often (counts nothing)."""
        if self.auth_failures and not await self._call("test", self.auth_failures, "auth-failure", address):
            await self._refuse(
                self.auth_failures,
                ("auth-failure", address),
                f"more than {self.auth_failures.amount} failed authentications a minute from this address",
            )

    async def count_failure(self, address: str) -> None:
        if self.auth_failures:
            await self._call("hit", self.auth_failures, "auth-failure", address)

    async def hit_campaign_creation(self, address: str) -> None:
        """Open creation, per address; a loopback address (a developer's `make run`) only if
        CAMPAIGN_THROTTLE_LOOPBACK (issue 25 item 12)."""
        if self.campaigns and (self.throttle_loopback or not _loopback(address)):
            await self._hit(
                self.campaigns,
                "campaign-create",
                address,
                what=f"more than {self.campaigns.amount} campaigns an hour from this address",
            )

    # --- the store ----------------------------------------------------------------------

    async def _hit(self, item: RateLimitItem, *key: str, what: str) -> None:
        if not await self._call("hit", item, *key):
            await self._refuse(item, key, what)

    async def _refuse(self, item: RateLimitItem, key: tuple[str, ...], what: str) -> None:
        reset, _ = await self._call("get_window_stats", item, *key)
        retry = min(item.get_expiry(), max(1, math.ceil(reset - time.time())))
        raise TooManyRequests(f"{what}; retry in {retry} s", retry_after=retry)

    async def _call(self, method: str, item: RateLimitItem, *key: str) -> Any:
        """`hit`, `test` or `get_window_stats` on Redis, or in memory when Redis is
        not configured or failed less than REDIS_RETRY_SECONDS ago."""
        if self.shared is not None and time.monotonic() >= self._shared_down_until:
            try:
                result = await getattr(self.shared, method)(item, *key)
            except Exception as exc:  # any store failure: memory, never a 500
                if not self._shared_down_until:
                    log.warning(
                        "rate limits: Redis unavailable (%s); counting in this process's memory, "
                        "retrying Redis every %.0f s",
                        exc,
                        REDIS_RETRY_SECONDS,
                    )
                self._shared_down_until = time.monotonic() + REDIS_RETRY_SECONDS
            else:
                if self._shared_down_until:
                    log.warning("rate limits: Redis is back; counts are shared again")
                    self._shared_down_until = 0.0
                return result
        return await getattr(self.memory, method)(item, *key)


async def limit_campaign_creation(request: Request) -> AsyncIterator[None]:
    """Dependency of POST /v1/campaigns: open creation is throttled per address,
    and admin-token guesses count as failed authentications (an address over that
    limit gets 429 before its token is even compared)."""
    limiter: RateLimiter = request.app.state.rate_limiter
    address = client_address(request)
    guarded = bool(request.app.state.settings.admin_token)
    if guarded:
        await limiter.refuse_failing_address(address)
    await limiter.hit_campaign_creation(address)
    try:
        yield
    except Unauthorized:
        if guarded:
            await limiter.count_failure(address)
        raise
