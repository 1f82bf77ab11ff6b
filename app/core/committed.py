"""This process's own commits that added events: they wake its event streams and webhook loop at once.

PostgreSQL tells every process when a commit adds events (LISTEN/NOTIFY, app.core.notify). SQLite
has no such channel: the streams polled every 0.5 s, so a table saw its own dice up to half a second
late. Here a session of the app (`AppSession`: every session `app.core.db` opens) keeps the campaigns
that `app.services.events.record` gave events in its transaction (`noted`) and, once that transaction
is committed, tells whoever listens on the same database in this process (`listen`), on the listener's
own event loop. A rolled-back transaction tells nothing.

Other processes are not told (they still poll), and a notice only says "look now": the outbox stays
the truth, and a lost notice delays a delivery by at most one poll. On PostgreSQL, where the database
notifies every process anyway, a process's own notice is only the first of the two to arrive.

The callbacks are `app.core.notify`'s (`callback(channel, payload)`, here always `EVENTS` and the
campaign's id)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from functools import lru_cache

from sqlalchemy import event
from sqlalchemy.engine import URL
from sqlmodel import Session

EVENTS = "jdr_events"  # the channel the callbacks are told (app.core.notify.EVENTS)
_NEW_EVENTS = "jdr.events_of"  # session.info: the campaigns given events in the open transaction

Callback = Callable[[str, str | None], None]

_lock = threading.Lock()
# database (`database_of`) -> the callbacks listening there, each with its event loop
_listening: dict[str, dict[Callback, asyncio.AbstractEventLoop]] = {}


@lru_cache(maxsize=64)
def database_of(url: URL) -> str:
    """Which database an engine's URL names, whatever its driver (PostgreSQL's writers on the event
    loop use psycopg's async driver, the others its sync one). Remembered by URL (an immutable
    value): every commit that added events asks it."""
    return url.set(drivername=url.get_backend_name()).render_as_string(hide_password=False)


class AppSession(Session):
    """The app's ORM session: a `Session` whose commit tells this process's listeners which
    campaigns got new events (see the module)."""


def noted(session: Session, campaign_id: str) -> None:
    """The campaign got an event in `session`'s open transaction (app.services.events.record)."""
    session.info.setdefault(_NEW_EVENTS, set()).add(campaign_id)


def listen(database: str, callback: Callback) -> None:
    """Call `callback(EVENTS, campaign_id)` on the running loop after each commit of this process
    on `database` (`database_of` an engine's URL) that gave the campaign events."""
    loop = asyncio.get_running_loop()
    with _lock:
        _listening.setdefault(database, {})[callback] = loop


def unlisten(database: str, callback: Callback) -> None:
    with _lock:
        listeners = _listening.get(database)
        if listeners is not None:
            listeners.pop(callback, None)
            if not listeners:
                del _listening[database]


@event.listens_for(AppSession, "after_commit")
def _told(session: Session) -> None:
    campaigns = session.info.pop(_NEW_EVENTS, None)
    if not campaigns or not _listening or session.bind is None:
        return
    with _lock:
        listeners = list(_listening.get(database_of(session.bind.engine.url), {}).items())
    try:
        here = asyncio.get_running_loop()  # a commit on the event loop (its writers' greenlet)
    except RuntimeError:
        here = None  # a commit in a worker thread
    for callback, loop in listeners:
        # on the listener's own loop, a plain `call_soon`: no wake-up of the loop from another thread
        schedule = loop.call_soon if loop is here else loop.call_soon_threadsafe
        for campaign_id in campaigns:
            try:
                schedule(callback, EVENTS, campaign_id)
            except RuntimeError:  # that loop is closed: its listener is gone
                break


@event.listens_for(AppSession, "after_rollback")
def _forgotten(session: Session) -> None:
    session.info.pop(_NEW_EVENTS, None)
