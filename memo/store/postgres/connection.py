"""A PostgreSQL connection that memo's store code can use as it uses a SQLite one.

memo's canonical SQL (records, passages, tags, facts, mentions, vectors' bookkeeping) is
plain SQL both engines run; what differs is written twice, behind ``is_postgres``
(``memo.store.dialect``): full-text search, vector search, transactions, migrations.  This
class carries the small, mechanical differences in one place, so the shared statements
are not copied:

* ``?`` placeholders become ``%s`` (and a literal ``%`` becomes ``%%``); statements are
  memo's constant text, never user input, so no ``?`` ever sits inside a quoted literal
  (``translate`` still skips quoted text);
* ``INSERT OR IGNORE INTO`` -> ``INSERT INTO ... ON CONFLICT DO NOTHING``;
  ``ifnull(`` -> ``coalesce(``; a JSON pk list ``SELECT value FROM json_each(?)`` ->
  ``json_array_elements_text``; the mentions upsert names its conflict target
  (PostgreSQL needs one for DO UPDATE);
* rows answer to both ``row[0]`` and ``row["name"]`` (as ``sqlite3.Row``);
* ``total_changes`` and ``in_transaction`` mean what they mean on SQLite;
* every driver error comes out as memo's typed ``StoreError`` family (``StoreBusy`` for
  lock and serialization failures, ``StoreUnavailable`` when the server is gone,
  ``DiskFull`` for SQLSTATE 53100), never a psycopg traceback; a connection refused for
  its credentials or database name is a ``ValidationError`` (``connect_error``);
* a session the server dropped (a restart, a crash) is reconnected by the next statement
  that runs outside a transaction (the ``BEGIN`` of the next ``write_tx`` / ``read_tx``
  included): a long-lived process (memo-mcp, memo web) keeps working once the server is
  back.  Inside a transaction it is never reconnected: the statements after the break
  would run in autocommit on a new session and commit half a transaction.  Those get
  ``StoreUnavailable``, the transaction's caller rolls back, and the next one reconnects.

Transactions are explicit (``BEGIN`` / ``COMMIT``, as on SQLite): the driver runs in
autocommit mode and ``memo.store.connect.write_tx`` / ``read_tx`` open them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from functools import lru_cache
from typing import Any

from memo.errors import DiskFull, StoreBusy, StoreError, StoreUnavailable, ValidationError


def _driver() -> Any:
    try:
        import psycopg
    except ImportError:  # pragma: no cover - depends on the install
        raise StoreError("PostgreSQL needs the psycopg driver, which is not installed",
                         hint='pip install "memo-kb[postgres]"') from None
    return psycopg


# Whole statements or fragments rewritten as they are (memo's own statement text).
_REWRITES = (
    ("SELECT value FROM json_each(?)", "SELECT value::bigint FROM json_array_elements_text(?::json) AS t(value)"),
    ("ON CONFLICT DO UPDATE SET count = count + excluded.count",
     "ON CONFLICT (passage_pk, entity_pk, (coalesce(fact_pk, 0))) DO UPDATE SET count = mentions.count + excluded.count"),
    # a record's tags, sorted, joined by the unit separator (memo.ops.records.list_records)
    ("(SELECT group_concat(tag, char(31)) FROM (SELECT tag FROM record_tags t "
     " WHERE t.record_id = r.id ORDER BY tag))",
     "(SELECT string_agg(tag, chr(31) ORDER BY tag) FROM record_tags t WHERE t.record_id = r.id)"),
    # rebuild the fact keyword index (memo.store.derived): facts.tsv is written by the row's
    # trigger, so rewriting the text recomputes it (as passages' rebuild does)
    ("INSERT INTO facts_fts(facts_fts) VALUES ('rebuild')", "UPDATE facts SET text = text"),
    # is there a table named ...: the catalogue of the connection's schema
    ("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ",
     "SELECT 1 FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = "),
    ("SELECT name FROM sqlite_schema WHERE type = 'table'",
     "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema()"),
)
# A row inserted without its pk: the statement returns the pk the trigger gave it
# (SQLite's cursor.lastrowid).
_RETURNS_PK = re.compile(r"^\s*INSERT\s+INTO\s+(facts|entities|passages)\s*\((?![^)]*\bpk\b)", re.IGNORECASE)
_IFNULL = re.compile(r"\bifnull\(", re.IGNORECASE)
_INDEXED_BY = re.compile(r"\s+INDEXED\s+BY\s+\w+", re.IGNORECASE)   # SQLite's planner hint: the server plans itself
_OR_IGNORE = re.compile(r"^\s*INSERT\s+OR\s+IGNORE\s+INTO\b", re.IGNORECASE)
# SQLite's ``x IS ?`` / ``x IS NOT ?`` (NULL-safe comparison with a parameter);
# ``instr(haystack, needle)`` is PostgreSQL's ``strpos`` (same arguments, same 1-based answer).
_IS_PARAM = re.compile(r"\bIS\s+(NOT\s+)?\?")
_INSTR = re.compile(r"\binstr\(", re.IGNORECASE)
# SQLite's ``CROSS JOIN t x ON ...`` (an inner join whose order the planner keeps):
# PostgreSQL's CROSS JOIN takes no ON, its plain JOIN is the same join.
_CROSS_JOIN_ON = re.compile(r"\bCROSS\s+JOIN\s+(\w+(?:\s+(?!ON\b)\w+)?)\s+ON\b", re.IGNORECASE)


@lru_cache(maxsize=4096)
def translate(sql: str) -> str:
    """memo's SQLite-flavoured statement -> the same statement for PostgreSQL."""
    for old, new in _REWRITES:
        sql = sql.replace(old, new)
    sql = _IFNULL.sub("coalesce(", sql)
    sql = _CROSS_JOIN_ON.sub(r"JOIN \1 ON", sql)
    sql = _IS_PARAM.sub(lambda m: "IS DISTINCT FROM ?" if m.group(1) else "IS NOT DISTINCT FROM ?", sql)
    sql = _INSTR.sub("strpos(", sql)
    sql = _INDEXED_BY.sub("", sql)
    if _OR_IGNORE.match(sql):
        sql = _OR_IGNORE.sub("INSERT INTO", sql, count=1).rstrip().rstrip(";") + " ON CONFLICT DO NOTHING"
    elif _RETURNS_PK.match(sql) and "RETURNING" not in sql.upper():
        sql = sql.rstrip().rstrip(";") + " RETURNING pk"
    out: list[str] = []
    quote: str | None = None
    for ch in sql:
        if quote is not None:
            out.append("%%" if ch == "%" else ch)
            if ch == quote:
                quote = None
            continue
        if ch in ("'", '"'):
            quote = ch
            out.append(ch)
        elif ch == "?":
            out.append("%s")
        elif ch == "%":
            out.append("%%")
        else:
            out.append(ch)
    return "".join(out)


class Row(tuple):
    """A result row readable by position and by column name (like ``sqlite3.Row``)."""

    _names: dict[str, int] = {}

    def __getitem__(self, key: Any) -> Any:  # type: ignore[override]
        if isinstance(key, str):
            return tuple.__getitem__(self, self._names[key])
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        return list(self._names)


@lru_cache(maxsize=1024)
def _row_class(names: tuple[str, ...]) -> type[Row]:
    return type("Row", (Row,), {"_names": {n: i for i, n in enumerate(names)}})


@lru_cache(maxsize=1)
def _idle() -> Any:
    from psycopg.pq import TransactionStatus

    return TransactionStatus.IDLE


def _row_factory(cursor: Any) -> Any:
    desc = cursor.description
    if desc is None:
        return tuple
    cls = _row_class(tuple(d.name for d in desc))
    return lambda values: cls(values)


# SQLSTATEs meaning "the server is going away or not there yet": admin_shutdown (an
# immediate or fast shutdown), crash_shutdown (another backend crashed, the server resets),
# cannot_connect_now (starting up, in recovery); class 08 is "connection exception".
_GONE = ("57P01", "57P02", "57P03")
# psycopg's own message for a str holding U+0000 (PostgreSQL's text type cannot store it);
# raised by the driver before anything reaches the server, so it carries no SQLSTATE.
_NUL_TEXT = "cannot contain NUL"


def typed_error(exc: BaseException, action: str, *, broken: bool = False) -> StoreError | ValidationError:
    """A psycopg error as memo's typed error: lock waits, deadlocks and serialization
    failures are ``StoreBusy`` (retry later); a lost or refused connection
    ``StoreUnavailable`` (``broken``: the driver says the session is gone, which a
    server killed mid-statement reports with no SQLSTATE at all); a full disk or
    tablespace (53100) ``DiskFull``; a NUL character in a text value ``ValidationError``
    (PostgreSQL's text cannot hold one); the rest ``StoreError``."""
    code = getattr(exc, "sqlstate", None) or ""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if code == "53100":
        return DiskFull(f"{action}: disk full, the write was rolled back: {text}")
    if broken or code in _GONE or code.startswith("08"):
        return StoreUnavailable(f"{action}: the server is unreachable, the statement was rolled back: {text}")
    if code in ("40001", "40P01", "55P03", "57014"):
        return StoreBusy(f"{action}: {text}", hint="the server is busy or unreachable: try again")
    if not code and _NUL_TEXT in text:
        return ValidationError(f"{action}: a text value holds a NUL character (U+0000), which PostgreSQL "
                               "cannot store", hint="remove the NUL characters (\\x00) from the input")
    return StoreError(f"{action}: {text}")


# A connection the server refused for who is asking or what is asked for: a wrong user
# name or password (28P01, 28000: also "no pg_hba.conf entry" and failed peer / ident
# authentication), a database that does not exist (3D000), no CONNECT privilege (42501).
# A configuration mistake: unlike a server that is down, retrying never fixes it.  Every
# other SQLSTATE (57P03 starting up, 53300 too many clients, class 08...) is the server
# not serving now: retry.
_CONFIG_SQLSTATES = {"28000": "auth", "28P01": "auth", "3D000": "database", "42501": "auth"}
# The SQLSTATE decides whenever the error carries one.  A refused *connection* carries
# none: psycopg (3.3) raises it as a bare OperationalError built from libpq's error text
# (no result, so ``sqlstate`` and ``diag.sqlstate`` are None), and the server's FATAL in
# that text is in the server's lc_messages language ("Passwort-Authentifizierung für
# Benutzer »x« fehlgeschlagen").  What libpq keeps of the attempt regardless of language
# is on ``exc.pgconn``: ``needs_password`` (the server asked for a password and none was
# given) and ``used_password`` (the server asked for one, was given one, and the
# connection still failed: a wrong password, or, after a right one, an unknown database or
# role).  The English text is read first: it names the mistake more precisely, and
# ``_BUSY_MESSAGES`` recognises the one retryable failure that comes after the password (a
# role's or a database's connection limit, 53300), which the flags alone would call a
# mistake.  A server on trust or peer authentication answering in another language stays
# StoreUnavailable: no password was asked for, so nothing but the text tells an unknown
# database from "the database system is starting up".
_CONFIG_MESSAGES = (
    (re.compile(r'database "[^"]*" does not exist'), "database"),
    (re.compile(r'(?i)authentication failed for user|role "[^"]*" does not exist|no pg_hba\.conf entry'
                r"|no password supplied|permission denied for database"), "auth"),
)
_BUSY_MESSAGES = re.compile(r"too many (connections|clients)|remaining connection slots"
                            r"|the database system is (starting up|shutting down|in recovery|not yet accepting)")
_CONFIG_HINTS = {
    "auth": "the server refused these credentials: check the user name and password in the URL "
            "(postgresql://user:password@host/dbname), PGPASSWORD or ~/.pgpass, and the server's "
            "pg_hba.conf; retrying will not help",
    "database": "no database of that name on this server: check the database name in the URL "
                "(postgresql://user@host/dbname) or create it (createdb dbname); retrying will not help",
    "login": "the server asked for a password and then refused the connection: check the user name, "
             "password and database name in the URL (postgresql://user:password@host/dbname), PGPASSWORD "
             "or ~/.pgpass; retrying will not help",
}


def _refused_kind(exc: BaseException) -> str | None:
    """Which configuration mistake refused the connection (a ``_CONFIG_HINTS`` key), or
    None when the server is down or busy; the comment above says why in this order."""
    code = getattr(exc, "sqlstate", None)
    if code:
        return _CONFIG_SQLSTATES.get(code)
    for pattern, name in _CONFIG_MESSAGES:
        if pattern.search(str(exc)):
            return name
    if _BUSY_MESSAGES.search(str(exc)):
        return None
    attempt = getattr(exc, "pgconn", None)
    if attempt is not None and getattr(attempt, "needs_password", False):
        return "auth"
    if attempt is not None and getattr(attempt, "used_password", False):
        return "login"
    return None


def connect_error(exc: BaseException) -> ValidationError | StoreUnavailable:
    """Why a connection could not be opened, as memo's typed error: a configuration
    mistake (credentials, database name: ``_refused_kind``) is a ``ValidationError``
    (exit 2: the ``--db`` / ``MEMO_DB`` value is wrong, a retry loop must stop); anything
    else (refused, no socket, timed out, "the database system is starting up") means the
    server is down or coming back, or the URL names the wrong host or port:
    ``StoreUnavailable`` (exit 6, retry)."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    kind = _refused_kind(exc)
    if kind is not None:
        return ValidationError(f"cannot connect to PostgreSQL: {text}", hint=_CONFIG_HINTS[kind])
    return StoreUnavailable(f"cannot connect to PostgreSQL: {text}",
                            hint="check that the server runs and the URL's host and port; "
                                 "retry once it is up, nothing acknowledged was lost")


class Cursor:
    """The few cursor behaviours memo's store code relies on."""

    __slots__ = ("_cur", "_pk")

    def __init__(self, cur: Any, returned_pk: bool = False) -> None:
        self._cur = cur
        self._pk = None
        if returned_pk:
            row = cur.fetchone()
            self._pk = None if row is None else int(row[0])

    def fetchone(self) -> Any:
        return self._cur.fetchone() if self._cur.description is not None else None

    def fetchall(self) -> list[Any]:
        return self._cur.fetchall() if self._cur.description is not None else []

    def __iter__(self) -> Iterator[Any]:
        return iter(self.fetchall())

    @property
    def rowcount(self) -> int:
        return self._cur.rowcount

    @property
    def lastrowid(self) -> int | None:
        """The pk of a row just inserted into facts, entities or passages without one."""
        return self._pk


class PgConnection:
    """One PostgreSQL session used the way memo uses a SQLite connection."""

    memo_dialect = "postgresql"

    def __init__(self, url: str, *, application: str = "memo") -> None:
        self.url = url
        self._application = application
        self._pg = self._connect()
        # Was a transaction open when the last statement ended?  Kept because a dropped
        # session can no longer say (psycopg reports its status as UNKNOWN): a break inside
        # a transaction must fail its remaining statements, not reconnect under them.
        self._tx_open = False
        self.total_changes = 0
        self.snapshot_generation: int | None = None   # inside read_tx: the snapshot's generation (tx.py)
        self.memo_guarded = False

    def _connect(self) -> Any:
        psycopg = _driver()
        from psycopg.types.numeric import FloatLoader

        try:
            pg = psycopg.connect(self.url, autocommit=True, application_name=self._application,
                                 connect_timeout=10)
        except psycopg.Error as exc:
            raise connect_error(exc) from None
        # numeric (sum/avg of integers) reads as float, as SQLite's REAL would.
        pg.adapters.register_loader("numeric", FloatLoader)
        return pg

    def _session(self) -> Any:
        """The live session: a dropped one is replaced outside a transaction (see the
        module's docstring), refused inside one."""
        if not self._pg.closed:
            return self._pg
        if self._tx_open:
            raise StoreUnavailable("PostgreSQL: the connection to the server was lost inside a transaction; "
                                   "nothing of it was committed")
        self._pg = self._connect()
        return self._pg

    def _run(self, run: Any, *, begins: bool = False) -> Any:
        """``run(session)`` with psycopg's errors typed.  ``begins``: the statement opens a
        transaction (``BEGIN ...``), so it is retried once on a new session when the old
        one turns out to be dead: a BEGIN changes nothing, so running it twice cannot
        double a write, and the first search or write after a server restart works
        instead of failing once (the dead session is only noticed when used)."""
        psycopg = _driver()
        pg = self._session()
        try:
            return run(pg)
        except psycopg.Error as exc:
            broken = bool(pg.broken or pg.closed)
            if not (broken and begins):
                raise typed_error(exc, "PostgreSQL", broken=broken) from exc
            first = exc
        finally:
            if not pg.closed:
                self._tx_open = pg.info.transaction_status != _idle()
        self._tx_open = False
        pg = self._session()
        try:
            return run(pg)
        except psycopg.Error as exc:
            raise typed_error(exc, "PostgreSQL", broken=bool(pg.broken or pg.closed)) from first
        finally:
            if not pg.closed:
                self._tx_open = pg.info.transaction_status != _idle()

    # -- the sqlite3.Connection surface memo uses ------------------------------------
    def execute(self, sql: str, params: Sequence[Any] | None = ()) -> Cursor:
        text = translate(sql)

        def run(pg: Any) -> Any:
            cur = pg.cursor(row_factory=_row_factory)
            cur.execute(text, tuple(params or ()))
            return cur

        cur = self._run(run)
        returned_pk = text.endswith(" RETURNING pk")
        if (cur.description is None or returned_pk) and cur.rowcount > 0:
            self.total_changes += cur.rowcount
        return Cursor(cur, returned_pk)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> Cursor:
        rows = [tuple(r) for r in rows]

        def run(pg: Any) -> Any:
            cur = pg.cursor(row_factory=_row_factory)
            if rows:
                cur.executemany(translate(sql), rows)
            return cur

        cur = self._run(run)
        if rows and cur.rowcount > 0:
            self.total_changes += cur.rowcount
        return Cursor(cur)

    def execute_native(self, sql: str, params: Sequence[Any] | dict[str, Any] | None = ()) -> Cursor:
        """A statement written for PostgreSQL (``%s`` placeholders; no translation).
        ``params=None``: no placeholders at all, several statements allowed (migrations)."""
        def run(pg: Any) -> Any:
            cur = pg.cursor(row_factory=_row_factory)
            cur.execute(sql, params)
            return cur

        cur = self._run(run, begins=sql.lstrip()[:5].upper() == "BEGIN")
        if cur.description is None and cur.rowcount > 0:
            self.total_changes += cur.rowcount
        return Cursor(cur)

    @property
    def in_transaction(self) -> bool:
        if self._pg.closed:
            return self._tx_open       # dropped inside a transaction: open until rolled back
        return self._pg.info.transaction_status != _idle()

    def commit(self) -> None:
        if self.in_transaction:
            self.execute("COMMIT")

    def rollback(self) -> None:
        if self.in_transaction:
            try:
                self._pg.execute("ROLLBACK")
            except Exception:  # noqa: BLE001 - a broken session: nothing left to roll back
                pass
        # A dropped session's transaction died with it on the server: the next statement
        # may reconnect.
        self._tx_open = False

    def close(self) -> None:
        try:
            self._pg.close()
        except Exception:  # noqa: BLE001
            pass

    @property
    def closed(self) -> bool:
        return bool(self._pg.closed)

    def __enter__(self) -> PgConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<PgConnection {redact(self.url)}>"


def redact(url: str) -> str:
    """The URL without its password (for messages and traces): in its user part
    (``user:pw@``) and as a parameter (``?password=pw``, ``&password=pw``, which libpq
    takes too)."""
    url = re.sub(r"(://[^:/@]*):[^@]*@", r"\1:***@", url)
    return re.sub(r"([?&]password=)[^&#]*", r"\1***", url, flags=re.IGNORECASE)
