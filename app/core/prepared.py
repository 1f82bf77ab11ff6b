"""The hot path's statements, run straight on the DBAPI cursor.

SQLAlchemy Core costs about ten times what SQLite itself spends on one of the hot
path's small statements (the execution context, the compiled-cache look-up, the
result's metadata). A `Prepared` statement is the same Core statement, compiled
once per dialect by SQLAlchemy, run on the connection's own cursor with SQLAlchemy's
own type processors (so what is written and read is exactly what Core would write
and read), inside the session's transaction. DBAPI errors are handed to SQLAlchemy,
which wraps them (OperationalError, IntegrityError…) and invalidates a dead
connection, as for any statement.

On PostgreSQL the statements go through `_Lane` (below): libpq's pipeline API on
psycopg's connection, each statement prepared once per connection, its values dumped
and loaded by psycopg's own adapters. `batch`: the statements of one block are sent in
ONE round trip, in order, each still its own statement (its own snapshot); checks on
their row counts run when the block ends. On SQLite a block runs as it goes (no round
trip to save)."""

from __future__ import annotations

import asyncio
import inspect
import select
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, cast

import psycopg
from psycopg import errors, pq
from psycopg.adapt import PyFormat, Transformer
from psycopg.pq.abc import PGconn, PGresult
from sqlalchemy import event
from sqlalchemy.engine import AdaptedConnection, Connection, Dialect, Engine
from sqlalchemy.sql import ClauseElement, Executable
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.util import await_

from app.core.db import ANSWER_WITHIN, raise_dbapi_error
from app.kit.errors import Unavailable

_Processor = Callable[[Any], Any]  # a type's bind or result processor
_Driver = psycopg.Connection[Any] | psycopg.AsyncConnection[Any]  # under SQLAlchemy's connection
_Wait = Callable[[PGconn, int, float | None], None]
# the placeholders each driver takes: sqlite3's `?`, libpq's `$1`… (the lane sends the SQL itself)
_PARAMSTYLE = {"sqlite": "qmark", "postgresql": "numeric_dollar"}


class _Plan:
    """A statement compiled once for a dialect, by SQLAlchemy's public compiler API: its SQL with
    positional placeholders (`?` for SQLite, `$1`… for libpq), the bind names in their order
    (`SQLCompiler.positiontup`, names as the statement knows them: `SQLCompiler.binds`' keys), each
    one's type processor (`TypeEngine.bind_processor` of the dialect's implementation) or its value
    when the statement carries it (a literal: `coalesce(max(n), 0) + 1`), and the processor of each
    result column (`TypeEngine.result_processor`). Values written and read are exactly Core's."""

    __slots__ = ("binds", "results", "sql", "sql_bytes")

    def __init__(self, statement: Executable, dialect: Dialect):
        style = _PARAMSTYLE[dialect.name]
        # the dialect itself when it takes these placeholders (sqlite3), else one of its class that does
        # (`create_engine(paramstyle=…)`'s argument: `$1`… on PostgreSQL, what asyncpg's dialect uses;
        # not initialized on a server, which changes nothing these DML and SELECTs render)
        positional = dialect if dialect.paramstyle == style else cast(Any, type(dialect))(paramstyle=style)
        compiled = cast(ClauseElement, statement).compile(dialect=positional)
        assert isinstance(compiled, SQLCompiler) and compiled.positiontup is not None
        self.sql: str = compiled.string
        self.sql_bytes = self.sql.encode()
        self.binds: list[tuple[str, _Processor | None, Any]] = []  # (name, processor, the statement's own value)
        for name in compiled.positiontup:  # each `?` in order; each `$n` once, numbered in this order
            bind = compiled.binds[name]
            if bind.expanding or bind.literal_execute:
                raise ValueError(f"{name}: a parameter rendered at execution is not prepared once")
            processor = bind.type.dialect_impl(dialect).bind_processor(dialect)
            self.binds.append((bind.key, processor, _GIVEN if bind.required else bind.effective_value))
        # a SELECT's columns, a statement's RETURNING; none for plain text (its rows are not read)
        columns = getattr(statement, "selected_columns", None) or getattr(statement, "exported_columns", None) or ()
        self.results: list[_Processor | None] = [
            c.type.dialect_impl(dialect).result_processor(dialect, None) for c in columns
        ]

    def parameters(self, params: dict[str, Any]) -> tuple:
        values = []
        for name, processor, own in self.binds:
            value = params[name] if own is _GIVEN else params.get(name, own)
            values.append(value if processor is None else processor(value))
        return tuple(values)

    def row(self, raw: tuple) -> tuple:
        return tuple(raw[i] if p is None else p(raw[i]) for i, p in enumerate(self.results))


_GIVEN = object()  # a bind whose value the caller gives


class Prepared:
    """A Core statement run on the DBAPI cursor (see the module)."""

    __slots__ = ("_plans", "by_dialect", "statement")

    def __init__(self, statement: Executable, **by_dialect: Executable) -> None:
        """`by_dialect`: another statement for a dialect (by name: `postgresql=…`)."""
        self.statement = statement
        self.by_dialect = by_dialect
        self._plans: dict[str, _Plan] = {}

    def _plan(self, dialect: Dialect) -> _Plan:
        plan = self._plans.get(dialect.name)
        if plan is None:
            statement = self.by_dialect.get(dialect.name, self.statement)
            plan = self._plans[dialect.name] = _Plan(statement, dialect)
        return plan

    def run(self, conn: Connection, params: dict[str, Any]) -> Any:
        """Execute (on PostgreSQL: queued when a `batch` is open, sent at its end); returns
        the DBAPI cursor or the lane's result (its `rowcount`; rows through `all`/`first`)."""
        plan = self._plan(conn.dialect)
        lane = _lane(conn)
        if lane is not None:
            result = lane.add(plan, params)
            if lane.batching == 0:
                lane.send(conn)
            return result
        args = plan.parameters(params)
        dbapi = conn.connection.dbapi_connection
        assert dbapi is not None  # a connection in use holds its DBAPI connection
        cursor = dbapi.cursor()
        try:
            cursor.execute(plan.sql, args)
        except conn.dialect.loaded_dbapi.Error as e:
            raise_dbapi_error(conn, e, plan.sql, args, cursor)
        return cursor

    def all(self, conn: Connection, params: dict[str, Any]) -> list[tuple]:
        plan = self._plan(conn.dialect)
        cursor = self.run(conn, params)
        if isinstance(cursor, _Result):
            return [plan.row(r) for r in cursor.rows]
        try:
            return [plan.row(r) for r in cursor.fetchall()]
        except conn.dialect.loaded_dbapi.Error as e:
            raise_dbapi_error(conn, e, plan.sql, None, cursor)
        finally:
            cursor.close()

    def first(self, conn: Connection, params: dict[str, Any]) -> tuple | None:
        rows = self.all(conn, params)
        return rows[0] if rows else None


def fetch_together(conn: Connection, queries: list[tuple[Prepared, dict[str, Any]]]) -> list[list[tuple]]:
    """The rows of each query, run in order; on PostgreSQL all in ONE round trip (pipeline
    mode), the transaction's BEGIN included when it is the first thing the connection sends.
    Each is still its own statement (its own snapshot, its own locks, in order); a failing
    one aborts the rest (the error is raised, as for any statement)."""
    lane = _lane(conn)
    if lane is None:
        return [query.all(conn, params) for query, params in queries]
    plans = [query._plan(conn.dialect) for query, _params in queries]
    sent = [lane.add(plan, params) for plan, (_query, params) in zip(plans, queries)]
    lane.send(conn)
    return [[plan.row(r) for r in result.rows] for plan, result in zip(plans, sent)]


class Batch:
    """Statements sent together (see the module); `expect_one(cursor, fail)` checks at the end
    that the statement on `cursor` changed one row, else calls `fail()` (which raises)."""

    def __init__(self) -> None:
        self.checks: list[tuple[Any, Callable[[], None]]] = []

    def expect_one(self, cursor: Any, fail: Callable[[], None]) -> None:
        self.checks.append((cursor, fail))


@contextmanager
def batch(conn: Connection, *, commit: bool = False) -> Iterator[Batch]:
    """One round trip on PostgreSQL for the statements run in the block (`Prepared` ones
    only: they are queued, and sent when it ends). `commit`: on PostgreSQL the transaction's
    COMMIT goes in the same round trip, after them, when the block ends without an exception
    (the caller's own commit then finds the transaction committed); a failing statement
    aborts the transaction, so the COMMIT does not run (the error is raised, the caller rolls
    back). On SQLite the statements run as they come and the caller commits as usual."""
    b = Batch()
    lane = _lane(conn)
    if lane is not None:
        lane.batching += 1
        try:
            yield b
        except BaseException:
            lane.queue.clear()
            raise
        finally:
            lane.batching -= 1
        if commit:
            lane.add_command(b"COMMIT")
        lane.send(conn)
    else:
        yield b
    for cursor, fail in b.checks:
        if cursor.rowcount != 1:
            fail()


# --- PostgreSQL: libpq's pipeline straight on psycopg's connection --------------------------
#
# psycopg's cursor and pipeline layer costs about 60 µs of Python a statement (measured:
# 5 SELECTs and a COMMIT in one pipeline, 345 µs of CPU through cursors against 50 µs
# through `pgconn`), about as much as the rest of a request's database work. `_Lane` sends
# the hot path's statements with libpq's pipeline API (psycopg's `pq` wrapper, public), their
# parameters dumped and their rows loaded by psycopg's own `Transformer` (so values are
# exactly what a psycopg cursor writes and reads), each statement prepared once per
# connection, as psycopg's cursors would after a few runs. It leaves the connection as it
# found it (out of pipeline mode, no result pending), so psycopg and SQLAlchemy go on using
# it; its transaction state is libpq's, which psycopg reads.


class _Result:
    """One statement's outcome in a lane: `rows` (psycopg's values), `rowcount`."""

    __slots__ = ("rowcount", "rows")

    def __init__(self) -> None:
        self.rows: list[tuple] = []
        self.rowcount = -1


class _Lane:
    """The statements queued on one psycopg connection, sent in one pipeline by `send`."""

    __slots__ = (
        "__weakref__",
        "answer_within",
        "batching",
        "dumper",
        "loader",
        "names",
        "pgconn",
        "prepared",
        "queue",
        "raw",
        "wait",
    )

    def __init__(self, raw: _Driver, answer_within: float | None = None) -> None:
        """`raw`: psycopg's Connection, or its AsyncConnection (SQLAlchemy's async adapter):
        then the lane waits for the server on the event loop, from SQLAlchemy's greenlet.
        `answer_within`: seconds the server may stay silent before it is taken for dead (None:
        no bound; app.core.db.Bounds)."""
        self.raw, self.pgconn, self.answer_within = raw, raw.pgconn, answer_within
        self.wait = _wait if isinstance(raw, psycopg.Connection) else _wait_on_loop
        self.prepared: dict[tuple[bytes, tuple[int, ...]], bytes] = {}  # (sql, parameter types) → name
        self.queue: list[tuple[bytes | None, bytes | None, tuple, _Result | None]] = []  # (sql, command, args, result)
        self.batching = 0
        self.names = 0  # statement names given on this connection
        # psycopg's adapters of this connection, made once and reused statement after statement (as
        # psycopg's own cursor reuses its Transformer): one dumps each statement's values (its types
        # and formats are read at once, before the next dump), one loads each result's rows as it
        # is read (one result at a time)
        self.dumper, self.loader = Transformer(raw), Transformer(raw)

    def add(self, plan: _Plan, params: dict[str, Any]) -> _Result:
        result = _Result()
        self.queue.append((plan.sql_bytes, None, plan.parameters(params), result))
        return result

    def add_command(self, command: bytes) -> None:
        self.queue.append((None, command, (), None))

    def send(self, conn: Connection) -> None:
        """Send the queue with the BEGIN it needs, in one round trip; fill each `_Result`;
        raise the first statement's error (wrapped by SQLAlchemy) once all are read.

        Statements prepared on this connection that the server no longer knows (a pooler's
        DISCARD ALL, a DEALLOCATE from elsewhere, a plan a migration changed the columns of)
        are prepared again: at once when this round trip began the transaction (nothing else
        was lost with it: it is rolled back and sent again), else the error is raised and the
        next transaction prepares them again."""
        queue, self.queue = self.queue, []
        pg = self.pgconn
        if pg.pipeline_status != pq.PipelineStatus.OFF or pg.transaction_status in _BUSY:
            raise RuntimeError("the connection is busy: a lane's statements cannot be sent now")
        began = not self.raw.autocommit and pg.transaction_status == pq.TransactionStatus.IDLE
        # the parameters as psycopg sends them (a value it cannot adapt fails here, before any I/O)
        dumped: list[tuple[Any, ...]] = []
        tx = self.dumper
        for sql, command, args, result in queue:
            if command is None:
                values = tx.dump_sequence(args, [PyFormat.AUTO] * len(args))
                dumped.append((sql, None, (tuple(tx.types or ()), tuple(tx.formats or ())), values, result))
            else:
                dumped.append((None, command, ((), ()), None, None))
        try:
            error = self._exchange(dumped, began)
            if error is not None and _lost_statement(error):
                self.prepared.clear()
                if began:
                    _call(self.raw.rollback)
                    error = self._exchange(dumped, began)
        except Silent:  # never a hang; the connection is not given back
            conn.invalidate()
            raise Unavailable(
                f"the database did not answer within {self.answer_within:g} s; retry shortly",
                retry_after=1,
                code="timeout",
            ) from None
        except errors.Error as e:  # the connection failed under us: it is not given back as it is
            _call(self.raw.close)
            raise_dbapi_error(conn, e, None, None)
        except BaseException:
            _call(self.raw.close)
            raise
        if error is not None:
            raise_dbapi_error(conn, error, None, None)

    def _exchange(self, queue: list, begin: bool) -> errors.Error | None:
        """One pipeline: (BEGIN,) the queue's commands and dumped statements, sync; returns
        the first statement's error."""
        pg, loader = self.pgconn, self.loader
        expected: list[tuple[str, Any]] = []  # what each result answers, in order
        preparing: dict[tuple[bytes, tuple[int, ...]], bytes] = {}  # prepared by this pipeline
        pg.enter_pipeline_mode()

        def send(sql: bytes, types: tuple[int, ...], values: Any, formats: Any, result: _Result | None) -> None:
            # every statement, BEGIN and COMMIT included, prepared once per connection (no parse each time)
            key = (sql, types)
            name = self.prepared.get(key) or preparing.get(key)
            if name is None:
                self.names += 1
                name = preparing[key] = b"jdr_%d" % self.names
                pg.send_prepare(name, sql, types)
                expected.append(("prepare", (key, name)))
            pg.send_query_prepared(name, values, formats)
            expected.append(("rows", result) if result is not None else ("command", None))

        if begin:
            send(_begin_command(self.raw), (), None, None, None)
        for sql, command, (types, formats), values, result in queue:
            if command is not None:
                send(command, (), None, None, None)
            else:
                send(sql, types, values, formats, result)
        pg.pipeline_sync()
        _flush(pg, self.wait, self.answer_within)
        error = None
        for kind, what in expected:
            res = _next_result(pg, self.wait, self.answer_within)
            if res is None or _next_result(pg, self.wait, self.answer_within) is not None:
                raise RuntimeError("a lane's statement returned no result or more than one")
            status = res.status
            if status == pq.ExecStatus.FATAL_ERROR:
                error = error or errors.error_from_result(res, encoding=self.raw.info.encoding)
            elif status == pq.ExecStatus.PIPELINE_ABORTED:
                pass
            elif kind == "prepare":
                self.prepared[what[0]] = what[1]
            elif kind == "rows":
                result = what
                if status == pq.ExecStatus.TUPLES_OK:
                    loader.set_pgresult(res)
                    result.rows = loader.load_rows(0, res.ntuples, tuple)
                    result.rowcount = res.ntuples
                else:
                    result.rowcount = res.command_tuples if res.command_tuples is not None else -1
        sync = _next_result(pg, self.wait, self.answer_within)
        if sync is None or sync.status != pq.ExecStatus.PIPELINE_SYNC:
            raise RuntimeError("a lane's pipeline did not end with its sync")
        pg.exit_pipeline_mode()
        return error


_BUSY = (pq.TransactionStatus.ACTIVE, pq.TransactionStatus.UNKNOWN)


def _lost_statement(error: errors.Error) -> bool:
    """The server no longer has a statement prepared here, or its plan's columns changed."""
    return isinstance(error, errors.InvalidSqlStatementName) or (
        isinstance(error, errors.FeatureNotSupported) and "cached plan" in str(error)
    )


_LANES: weakref.WeakKeyDictionary[Any, _Lane] = weakref.WeakKeyDictionary()


def _lane(conn: Connection) -> _Lane | None:
    """The lane of a PostgreSQL connection (psycopg's), None on SQLite."""
    if conn.dialect.name != "postgresql":
        return None
    driver = _driver(conn)
    lane = _LANES.get(driver)
    if lane is None:
        if not isinstance(driver, (psycopg.Connection, psycopg.AsyncConnection)):
            raise RuntimeError(f"prepared statements run on psycopg's connection, not {type(driver).__name__}")
        lane = _LANES[driver] = _Lane(driver, conn.get_execution_options().get(ANSWER_WITHIN))
    return lane


def _driver(conn: Connection) -> Any:
    """psycopg's own connection under SQLAlchemy's (and under its async adapter)."""
    raw = conn.connection.dbapi_connection
    return raw.driver_connection if isinstance(raw, AdaptedConnection) else raw


def _call(method: Callable[[], Any]) -> None:
    """A method of psycopg's connection, awaited (from the greenlet) when it is a coroutine's."""
    result = method()
    if inspect.isawaitable(result):
        await_(result)


def _begin_command(raw: _Driver) -> bytes:
    """The BEGIN psycopg itself would send (`Connection._get_tx_start_command`)."""
    parts = [b"BEGIN"]
    if raw.isolation_level is not None:
        parts += [b"ISOLATION LEVEL", psycopg.IsolationLevel(raw.isolation_level).name.replace("_", " ").encode()]
    if raw.read_only is not None:
        parts.append(b"READ ONLY" if raw.read_only else b"READ WRITE")
    if raw.deferrable is not None:
        parts.append(b"DEFERRABLE" if raw.deferrable else b"NOT DEFERRABLE")
    return b" ".join(parts)


class Silent(Exception):
    """The server said nothing for the lane's `answer_within` seconds."""


def _wait(pg: PGconn, events: int, within: float | None) -> None:
    poller = select.poll()
    poller.register(pg.socket, events)
    if not poller.poll(None if within is None else within * 1000):  # the GIL is released while the server answers
        raise Silent()


def _wait_on_loop(pg: PGconn, events: int, within: float | None) -> None:
    """`_wait` from SQLAlchemy's greenlet: the event loop runs other work meanwhile."""
    if not await_(_socket_ready(pg.socket, events, within)):
        raise Silent()


async def _socket_ready(fd: int, events: int, within: float | None) -> bool:
    """Whether the socket became ready (False: not within `within` seconds)."""
    loop = asyncio.get_running_loop()
    ready = loop.create_future()

    def wake(is_ready: bool = True) -> None:
        if not ready.done():
            ready.set_result(is_ready)

    if events & select.POLLIN:
        loop.add_reader(fd, wake)
    if events & select.POLLOUT:
        loop.add_writer(fd, wake)
    timer = None if within is None else loop.call_later(within, wake, False)
    try:
        return await ready
    finally:
        if timer is not None:
            timer.cancel()
        if events & select.POLLIN:
            loop.remove_reader(fd)
        if events & select.POLLOUT:
            loop.remove_writer(fd)


def _flush(pg: PGconn, wait: _Wait, within: float | None) -> None:
    """Everything queued is written (libpq's non-blocking flush: read when the server talks meanwhile)."""
    while pg.flush():
        wait(pg, select.POLLIN | select.POLLOUT, within)
        pg.consume_input()


def _next_result(pg: PGconn, wait: _Wait, within: float | None) -> PGresult | None:
    while pg.is_busy():
        wait(pg, select.POLLIN, within)
        pg.consume_input()
    return pg.get_result()


@event.listens_for(Engine, "before_cursor_execute")
def _not_inside_a_batch(conn: Connection, _cursor: Any, statement: str, *_args: Any) -> None:
    """A statement that is not `Prepared` would run before the queued ones of an open batch."""
    lane = _LANES.get(_driver(conn)) if conn.dialect.name == "postgresql" else None
    if lane is not None and lane.batching:
        raise RuntimeError(f"only Prepared statements may run inside a batch, not {statement[:80]!r}")
