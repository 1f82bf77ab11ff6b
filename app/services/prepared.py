"""The hot path's statements, run straight on the DBAPI cursor (issue 16).

SQLAlchemy Core costs about ten times what SQLite itself spends on one of the hot
path's small statements (the execution context, the compiled-cache look-up, the
result's metadata). A `Prepared` statement is the same Core statement, compiled
once per dialect by SQLAlchemy, run on the connection's own cursor with SQLAlchemy's
own type processors (so what is written and read is exactly what Core would write
and read), inside the session's transaction. DBAPI errors are handed to SQLAlchemy,
which wraps them (OperationalError, IntegrityError…) and invalidates a dead
connection, as for any statement.

`Batch` (PostgreSQL): the statements of one block are sent in ONE round trip
(psycopg's pipeline mode), in order, each still its own statement (its own snapshot);
checks on their row counts run when the block ends. On SQLite a block runs as it
goes (no round trip to save)."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy.engine import Connection, Dialect


class _Plan:
    __slots__ = ("constants", "keys", "names", "processors", "results", "sql")

    def __init__(self, statement, dialect: Dialect):
        compiled = statement.compile(dialect=dialect)
        self.sql: str = compiled.string
        processors = compiled._bind_processors
        escaped = compiled.escaped_bind_names or {}
        # a literal of the statement (`coalesce(max(n), 0) + 1`) is a bind with its own value
        self.constants = {name: b.effective_value for name, b in compiled.binds.items() if not b.required}
        if compiled.positional:
            self.names: list[str] | None = list(compiled.positiontup)
            self.keys = None
            self.processors = [processors.get(n) for n in self.names]
        else:
            self.names = None
            self.keys = [(name, escaped.get(name, name), processors.get(name)) for name in compiled.binds]
            self.processors = None
        self.results: list[Callable | None] = [
            col.type._cached_result_processor(dialect, None) for col in compiled._result_columns
        ]

    def parameters(self, params: dict[str, Any]) -> Any:
        if self.constants:
            params = {**self.constants, **params}
        if self.names is not None:
            return tuple(params[n] if p is None else p(params[n]) for n, p in zip(self.names, self.processors))
        return {key: params[name] if p is None else p(params[name]) for name, key, p in self.keys}

    def row(self, raw: tuple) -> tuple:
        return tuple(raw[i] if p is None else p(raw[i]) for i, p in enumerate(self.results))


class Prepared:
    """A Core statement run on the DBAPI cursor (see the module)."""

    __slots__ = ("_plans", "by_dialect", "statement")

    def __init__(self, statement, **by_dialect):
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

    def run(self, conn: Connection, params: dict[str, Any]):
        """Execute; returns the DBAPI cursor (its `rowcount`; rows through `all`/`first`)."""
        plan = self._plan(conn.dialect)
        args = plan.parameters(params)
        cursor = conn.connection.dbapi_connection.cursor()
        try:
            cursor.execute(plan.sql, args)
        except conn.dialect.loaded_dbapi.Error as e:
            conn._handle_dbapi_exception(e, plan.sql, args, cursor, None)
        return cursor

    def all(self, conn: Connection, params: dict[str, Any]) -> list[tuple]:
        plan = self._plan(conn.dialect)
        cursor = self.run(conn, params)
        try:
            return [plan.row(r) for r in cursor.fetchall()]
        except conn.dialect.loaded_dbapi.Error as e:
            conn._handle_dbapi_exception(e, plan.sql, None, cursor, None)
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
    if conn.dialect.name != "postgresql":
        return [query.all(conn, params) for query, params in queries]
    raw = conn.connection.dbapi_connection
    sent = []
    try:
        with raw.pipeline():
            for query, params in queries:
                plan = query._plan(conn.dialect)
                cursor = raw.cursor()
                cursor.execute(plan.sql, plan.parameters(params))
                sent.append((plan, cursor))
        return [[plan.row(r) for r in cursor.fetchall()] for plan, cursor in sent]
    except conn.dialect.loaded_dbapi.Error as e:
        conn._handle_dbapi_exception(e, None, None, None, None)
    finally:
        for _plan, cursor in sent:
            cursor.close()


class Batch:
    """Statements sent together (see the module); `expect_one(cursor, fail)` checks at the end
    that the statement on `cursor` changed one row, else calls `fail()` (which raises)."""

    def __init__(self) -> None:
        self.checks: list[tuple[Any, Callable[[], None]]] = []

    def expect_one(self, cursor, fail: Callable[[], None]) -> None:
        self.checks.append((cursor, fail))


@contextmanager
def batch(conn: Connection, *, commit: bool = False) -> Iterator[Batch]:
    """One round trip on PostgreSQL for the statements run in the block (psycopg pipeline
    mode). `commit`: on PostgreSQL the transaction's COMMIT goes in the same round trip,
    after them, when the block ends without an exception (the caller's own commit then
    finds the transaction committed); a failing statement aborts the transaction, so the
    COMMIT does not run (the error is raised, the caller rolls back). On SQLite the
    caller commits as usual."""
    b = Batch()
    if conn.dialect.name == "postgresql":
        raw = conn.connection.dbapi_connection
        try:
            with raw.pipeline():
                yield b
                if commit:
                    raw.cursor().execute("COMMIT")
        except conn.dialect.loaded_dbapi.Error as e:
            conn._handle_dbapi_exception(e, None, None, None, None)
    else:
        yield b
    for cursor, fail in b.checks:
        if cursor.rowcount != 1:
            fail()
