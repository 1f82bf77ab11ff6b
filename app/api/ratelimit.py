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
not switched off by taking Redis down).

A response subject to a limit carries the IETF fields
(draft-ietf-httpapi-ratelimit-headers, structured fields): `RateLimit-Policy:
"per-token";q=120;w=60` (its quota and window) and `RateLimit: "per-token";r=57;t=30`
(what is left, and the seconds until the oldest request of the window leaves it).
The count comes back from the hit itself: one Lua script on Redis (the `limits`
library's moving window, plus the count and oldest entry it already reads), an
in-memory read otherwise; never a second round trip on the hot path."""

from __future__ import annotations

import ipaddress
import logging
import math
import time
from collections.abc import AsyncIterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, cast

from fastapi import Request
from limits import RateLimitItem, RateLimitItemPerHour, RateLimitItemPerMinute
from limits.aio.strategies import MovingWindowRateLimiter
from limits.storage import storage_from_string

from app.core.config import Settings
from app.kit.errors import TooManyRequests, Unauthorized

log = logging.getLogger("app.ratelimit")

REDIS_RETRY_SECONDS = 5.0  # after a Redis failure, memory only for this long
REDIS_TIMEOUT_SECONDS = 0.5  # connect and reply timeout of the Redis client

# the `limits` library's moving window (acquire_moving_window.lua, one entry), returning besides
# whether it was acquired the entries in the window and the oldest one's time: the RateLimit field
ACQUIRE_AND_COUNT = """
local now = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local expiry = tonumber(ARGV[3])
local acquired = 0
local entry = redis.call('lindex', KEYS[1], limit - 1)
if not (entry and tonumber(entry) >= now - expiry) then
    redis.call('lpush', KEYS[1], ARGV[1])
    redis.call('ltrim', KEYS[1], 0, limit - 1)
    redis.call('expire', KEYS[1], expiry)
    acquired = 1
end
local count = 0
local oldest = ARGV[1]
for _, value in ipairs(redis.call('lrange', KEYS[1], 0, limit - 1)) do
    if tonumber(value) < now - expiry then break end
    count = count + 1
    oldest = value
end
return {acquired, count, oldest}
"""


@dataclass(frozen=True)
class Quota:
    """One limit's state after a request: its policy's name, quota and window, what is left, and
    the seconds until the window's oldest request leaves it."""

    policy: str
    quota: int
    window: int
    remaining: int
    reset: int


# the quotas a request met, collected for its response's fields (a list set by `watch_quotas`
# around the request: handlers append to it, whatever context they run in)
_QUOTAS: ContextVar[list[Quota] | None] = ContextVar("jdr_quotas", default=None)


def watch_quotas() -> list[Quota]:
    """Start collecting the quotas of the current request (its middleware calls this)."""
    quotas: list[Quota] = []
    _QUOTAS.set(quotas)
    return quotas


def quota_fields(quotas: list[Quota]) -> list[tuple[bytes, bytes]]:
    """The `RateLimit-Policy` and `RateLimit` fields (structured-field lists, one item a policy)."""
    if not quotas:
        return []
    policy = ", ".join(f'"{q.policy}";q={q.quota};w={q.window}' for q in quotas)
    state = ", ".join(f'"{q.policy}";r={q.remaining};t={q.reset}' for q in quotas)
    return [(b"ratelimit-policy", policy.encode()), (b"ratelimit", state.encode())]


def _met(quota: Quota) -> None:
    quotas = _QUOTAS.get()
    if quotas is not None:
        quotas[:] = [q for q in quotas if q.policy != quota.policy] + [quota]


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
        self._counted: Any = None  # the Redis script of ACQUIRE_AND_COUNT, registered on first use

    # --- the three limits ------------------------------------------------------------

    async def hit_token(self, token_hash: str) -> None:
        if self.per_token:
            await self._hit(
                self.per_token,
                "token",
                token_hash,
                what=f"more than {self.per_token.amount} requests a minute with this token",
                policy="per-token",
            )

    async def refuse_failing_address(self, address: str) -> None:
        """429 when `address` has failed to authenticate too often (counts nothing)."""
        if self.auth_failures and not await self._call("test", self.auth_failures, "auth-failure", address):
            await self._refuse(
                self.auth_failures,
                ("auth-failure", address),
                f"more than {self.auth_failures.amount} failed authentications a minute from this address",
                "auth-failures",
            )

    async def count_failure(self, address: str) -> None:
        if self.auth_failures:
            await self._call("hit", self.auth_failures, "auth-failure", address)

    async def hit_campaign_creation(self, address: str) -> None:
        """Open creation, per address; a loopback address (a developer's `make run`) only if
        CAMPAIGN_THROTTLE_LOOPBACK."""
        if self.campaigns and (self.throttle_loopback or not _loopback(address)):
            await self._hit(
                self.campaigns,
                "campaign-create",
                address,
                what=f"more than {self.campaigns.amount} campaigns an hour from this address",
                policy="campaign-creation",
            )

    # --- the store ----------------------------------------------------------------------

    async def _hit(self, item: RateLimitItem, *key: str, what: str, policy: str) -> None:
        acquired, count, oldest = await self._hit_counted(item, *key)
        window = item.get_expiry()
        reset = max(0, min(window, math.ceil(oldest + window - time.time())))
        _met(Quota(policy, item.amount, window, max(0, item.amount - count), reset))
        if not acquired:
            await self._refuse(item, key, what, policy, reset=reset)

    async def _hit_counted(self, item: RateLimitItem, *key: str) -> tuple[bool, int, float]:
        """A hit, and then the window's count and oldest entry: on Redis one script (one round
        trip), else the memory's own window (no I/O)."""
        if self.shared is not None and time.monotonic() >= self._shared_down_until:
            try:
                bridge = cast(Any, self.shared.storage).bridge  # the Redis storage's client (limits' RedisStorage)
                if self._counted is None:
                    self._counted = bridge.get_connection().register_script(ACQUIRE_AND_COUNT)
                args = [time.time(), item.amount, item.get_expiry()]
                acquired, count, oldest = await self._counted(keys=[bridge.prefixed_key(item.key_for(*key))], args=args)
            except Exception as exc:  # any store failure: memory, never a 500
                self._shared_failed(exc)
            else:
                self._shared_back()
                return bool(acquired), int(count), float(oldest)
        acquired = await self.memory.hit(item, *key)
        oldest, count = await cast(Any, self.memory.storage).get_moving_window(
            item.key_for(*key), item.amount, item.get_expiry()
        )
        return acquired, count, oldest

    async def _refuse(
        self, item: RateLimitItem, key: tuple[str, ...], what: str, policy: str, *, reset: int | None = None
    ) -> None:
        if reset is None:
            at, _ = await self._call("get_window_stats", item, *key)
            reset = max(1, math.ceil(at - time.time()))
            _met(Quota(policy, item.amount, item.get_expiry(), 0, min(item.get_expiry(), reset)))
        retry = min(item.get_expiry(), max(1, reset))
        raise TooManyRequests(f"{what}; retry in {retry} s", retry_after=retry, extra={"policy": policy})

    def _shared_failed(self, exc: Exception) -> None:
        if not self._shared_down_until:
            log.warning(
                "rate limits: Redis unavailable (%s); counting in this process's memory, retrying Redis every %.0f s",
                exc,
                REDIS_RETRY_SECONDS,
            )
        self._shared_down_until = time.monotonic() + REDIS_RETRY_SECONDS

    def _shared_back(self) -> None:
        if self._shared_down_until:
            log.warning("rate limits: Redis is back; counts are shared again")
            self._shared_down_until = 0.0

    async def _call(self, method: str, item: RateLimitItem, *key: str) -> Any:
        """`hit`, `test` or `get_window_stats` on Redis, or in memory when Redis is
        not configured or failed less than REDIS_RETRY_SECONDS ago."""
        if self.shared is not None and time.monotonic() >= self._shared_down_until:
            try:
                result = await getattr(self.shared, method)(item, *key)
            except Exception as exc:  # any store failure: memory, never a 500
                self._shared_failed(exc)
            else:
                self._shared_back()
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
