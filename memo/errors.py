"""One exception hierarchy for every caller-visible failure.

Each class carries an ``exit_code`` (CLI), an ``http_status`` (web) and a ``hint``
that tells the user what to do.  The CLI and the MCP server (and a future web UI) map these
1:1; nothing else is allowed to escape to a user as a traceback.
"""

from __future__ import annotations


class MemoError(Exception):
    """Base class. ``str(err)`` is a one-line message; ``hint`` says what to do."""

    exit_code = 1
    http_status = 500
    hint = ""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        if hint is not None:
            self.hint = hint

    @property
    def error_name(self) -> str:
        """The error's public class name, shown as ``error`` in JSON, MCP and web answers:
        a private subclass (``_Name``, an implementation detail) shows as its public base."""
        for cls in type(self).__mro__:
            if not cls.__name__.startswith("_"):
                return cls.__name__
        return "MemoError"

    def one_line(self) -> str:
        msg = str(self).replace("\n", " ")
        return f"{msg} ({self.hint})" if self.hint else msg

    def to_dict(self) -> dict[str, object]:
        return {"error": self.error_name, "message": str(self), "hint": self.hint,
                "exit_code": self.exit_code}


class ValidationError(MemoError):
    """The caller's input is wrong (bad field value, bad query, bad option)."""

    exit_code = 2
    http_status = 400
    hint = "check the value and try again; --help lists the accepted forms"


class QuerySyntaxError(ValidationError):
    """A query that cannot be compiled (empty after normalisation, too long...)."""

    hint = "use plain words; memo quotes operators itself"


class ProfileError(ValidationError):
    """A profile file is missing, unreadable, or holds unknown keys / bad values."""

    hint = "see docs/profiles.md for every key and its allowed range"


class NotFound(MemoError):
    exit_code = 3
    http_status = 404
    hint = "`memo list` shows the ids that exist"


class ConfirmationRequired(MemoError):
    """A destructive operation over several records was asked for without --yes."""

    exit_code = 4
    http_status = 409
    hint = "repeat with --yes (or confirm=N with the exact count) to proceed"


class ImportRejected(MemoError):
    """One input of an import was refused (outside root, too big, undecodable...)."""

    exit_code = 5
    http_status = 422
    hint = "the rest of the import went on; fix or remove the named file"


class StoreError(MemoError):
    exit_code = 6
    http_status = 503
    hint = "run `memo stats` to check the database; `memo reindex` rebuilds derived indexes"


class StoreBusy(StoreError):
    """The database stayed locked past busy_timeout (another long writer)."""

    hint = "another process holds the write lock; retry in a moment"


class StoreUnavailable(StoreBusy):
    """The database server cannot be reached (stopped, restarting, connection lost mid-way).

    A ``StoreBusy`` (exit 6): what was in flight was rolled back and may be retried once
    the server is back; nothing acknowledged before it is lost.  PostgreSQL only (a SQLite
    file is never "unreachable")."""

    hint = "the database server is down or restarting; retry once it is back (nothing acknowledged was lost)"


class DiskFull(StoreError):
    """The file system holding the database (a PostgreSQL tablespace, or a backup's
    destination) has no room left.  Not damage: the write in flight rolled back; every
    write acknowledged before is intact."""

    exit_code = 12
    http_status = 507
    hint = "disk full: free space; nothing acknowledged was lost"


class StoreCorrupt(StoreError):
    hint = "restore from `memo backup`, or run `memo reindex` if only derived indexes are damaged"


class StoreReadOnly(StoreError):
    """The database file or its folder cannot be written (a read-only mount, file modes,
    an immutable file).  Not damage: reads work; only writes are refused."""

    hint = "read-only: searches work, writes need write access (to the file and its folder)"


class SchemaTooNew(StoreError):
    hint = "this database was written by a newer memo; upgrade memo"


class ModelUnavailable(MemoError):
    """The embedding model is missing, corrupt or failed to load (search degrades)."""

    exit_code = 7
    http_status = 503
    hint = "search still runs without the semantic arm; `memo backfill` embeds queued passages later"


class DatasetError(MemoError):
    exit_code = 8
    http_status = 422
    hint = "check the data set path and format (docs/eval.md)"


class ExtraMissing(MemoError):
    """A command needs an optional extra that is not installed (``memo eval``: ``eval``)."""

    exit_code = 11
    http_status = 501
    hint = 'pip install "memo-kb[eval]"'
