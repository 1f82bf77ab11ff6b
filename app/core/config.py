"""Settings from the environment, built once by a cached function (never at import)."""

from __future__ import annotations

from functools import lru_cache
from urllib.parse import urlsplit

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_file=".env", extra="ignore")

    database_url: str = Field(
        "sqlite:///./jdr.db", description="sqlite:///path.db, postgresql://user@host:5432/db or postgres://…"
    )
    admin_token: str | None = Field(None, description="When set, POST /v1/campaigns needs it as Bearer token.")
    cors_origins: list[str] = Field(default_factory=list, description="Origins allowed for browser frontends.")
    max_body_bytes: int = Field(1_000_000, ge=1024)
    rate_limit_per_minute: int = Field(0, ge=0, description="Requests a token may make per minute; 0 = off.")
    auth_failures_per_minute: int = Field(
        60,
        ge=0,
        description="Failed authentications (no, unknown or wrong admin token) an "
        "address may make per minute before 429; 0 = off.",
    )
    campaigns_per_hour_per_address: int = Field(
        20, ge=0, description="POST /v1/campaigns an address may make per hour while ADMIN_TOKEN is unset; 0 = off."
    )
    campaign_throttle_loopback: bool = Field(
        False,
        description="Throttle POST /v1/campaigns from loopback addresses too (off: `make run` is a developer's "
        "machine; behind a reverse proxy on the same host, let uvicorn believe X-Forwarded-For "
        "(--forwarded-allow-ips) or set this).",
    )
    public_url: str | None = Field(
        None,
        description="The address players reach this service at (https://table.example or https://example.org/jdr) "
        "for the links it makes (invitations); unset = the request's own (its Host header): set it behind a "
        "reverse proxy.",
    )
    max_players_per_campaign: int = Field(100, ge=1, description="Players a campaign may have (409 beyond).")
    redis_url: str | None = Field(
        None, description="redis://host:6379/0: rate limits shared by every worker and instance; unset = per process."
    )
    redis_key_prefix: str = Field("jdr", min_length=1, description="Prefix of the rate-limit keys in Redis.")
    max_in_flight: int = Field(
        64, ge=0, description="Requests a process serves at once (event streams and /healthz aside); 0 = no limit."
    )
    max_waiting: int = Field(256, ge=0, description="Requests that may wait for a slot; beyond, 503 at once.")
    admission_wait_seconds: float = Field(
        2.0, ge=0, le=60, description="How long a request waits for a slot before a 503."
    )
    event_streams_per_token: int = Field(
        5, ge=1, description="Event streams a token may hold open at once per process (429 beyond)."
    )
    event_streams_per_process: int = Field(
        2000, ge=1, description="Event streams a process holds open at once (503 beyond)."
    )
    db_lock_timeout_seconds: float = Field(
        3.0,
        ge=0,
        le=600,
        description="PostgreSQL: how long a statement waits for a lock "
        "(lock_timeout) before the request is a 503; 0 = no limit.",
    )
    db_statement_timeout_seconds: float = Field(
        30.0,
        ge=0,
        le=3600,
        description="PostgreSQL: how long a statement may run "
        "(statement_timeout) before the request is a 503; 0 = no "
        "limit.",
    )
    db_max_connections: int = Field(
        10,
        ge=3,
        le=500,
        description="PostgreSQL: connections one worker process opens at most, all pools and its LISTEN "
        "connection included (workers × instances × this must stay under the server's max_connections); "
        "a request that finds none free within 5 s is a 503.",
    )
    db_synchronous_commit: bool = Field(
        True,
        description="PostgreSQL: a write is answered once its commit is on disk (synchronous_commit on). "
        "false: answered at once, the commit reaching the disk within 3 × the server's wal_writer_delay "
        "(0.6 s by default): a crash of the PostgreSQL server or of its machine may then lose the writes "
        "of that last moment, all of each or none (never half of one); the app's own crash loses nothing. "
        "It shortens the time a character's row stays locked (a popular character's tests queue less).",
    )
    event_notify: bool = Field(
        True,
        description="PostgreSQL: new events and revoked credentials wake the event streams and the webhook "
        "loop of every worker and instance at once (LISTEN/NOTIFY); polling goes on as the fallback. "
        "false: this process neither listens nor has its commits notify new events (it polls).",
    )
    event_fallback_poll_seconds: float = Field(
        5.0,
        gt=0,
        le=300,
        description="PostgreSQL with EVENT_NOTIFY: how often the event streams and the webhook loop poll "
        "anyway while notifications are heard (a lost one is caught up within this); without "
        "notifications they poll every 0.5 s (streams) and WEBHOOK_POLL_SECONDS (webhooks).",
    )
    import_max_body_bytes: int = Field(
        50_000_000,
        ge=1024,
        description="The largest bundle the import routes accept (a 10,000-entry campaign is about 5 MB); "
        "every other route keeps MAX_BODY_BYTES.",
    )
    webhook_max_attempts: int = Field(
        8, ge=1, le=50, description="Attempts at delivering one event to one webhook before it is marked failed."
    )
    webhook_allow_private: bool = Field(
        False,
        description="Let webhooks target private, loopback and link-local addresses (SSRF guard off: tests, a LAN).",
    )
    webhook_timeout_seconds: float = Field(
        5.0, gt=0, le=60, description="How long one delivery may take (connect, send, answer) before it is a failure."
    )
    webhook_concurrency: int = Field(
        8,
        ge=1,
        le=256,
        description="Deliveries a process makes at once (one attempt per webhook at a time); while campaigns "
        "wait, each gets an equal share of them, served in turn.",
    )
    webhook_poll_seconds: float = Field(
        1.0, gt=0, le=60, description="How often a process looks for events to deliver; 0 < s."
    )
    webhook_backoff_seconds: float = Field(
        2.0, gt=0, le=3600, description="The first retry's delay; each next one doubles (with jitter), capped at 1 h."
    )
    webhook_disable_after_hours: float = Field(
        72.0,
        gt=0,
        le=8760,
        description="A webhook whose every attempt failed for this long (no delivery since its first failure) "
        "is disabled, and the GM told by a `webhook.disabled` event; the GM enables it again with PATCH.",
    )
    webhook_delivery: bool = Field(True, description="Run the webhook delivery loop in this process.")
    sqlite_checkpoint_seconds: float = Field(
        0.5,
        ge=0,
        le=60,
        description="SQLite: how often this process copies the write-ahead log back into the database, in a "
        "thread (app/core/wal.py); 0 = in the commit that fills it past 1,000 pages, as SQLite does by default.",
    )
    sql_echo: bool = False

    @field_validator("admin_token", "redis_url")
    @classmethod
    def _empty_is_none(cls, v: str | None) -> str | None:
        return v or None

    @field_validator("public_url")
    @classmethod
    def _public_url(cls, v: str | None) -> str | None:
        """An absolute http(s) address with a host, no query nor fragment; kept without its last `/`."""
        if not v:
            return None
        parts = urlsplit(v)
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
            raise ValueError("an http:// or https:// address with a host and no query nor fragment")
        return v.rstrip("/")


@lru_cache
def get_settings() -> Settings:
    return Settings()
