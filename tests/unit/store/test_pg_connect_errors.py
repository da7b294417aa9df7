"""Why a PostgreSQL connection failed, whatever language the server speaks
(``memo.store.postgres.connection.connect_error``): a wrong password, an unknown role or
database is a configuration mistake (``ValidationError``, exit 2); a server that is down,
starting up or full is ``StoreUnavailable`` (exit 6, retry).

Before, the server's English message text decided; a server with ``lc_messages`` in German
answers "Passwort-Authentifizierung für Benutzer »alice« fehlgeschlagen" and a wrong password
came out as exit 6, "retry once it is up", forever.  Now an error's SQLSTATE decides when
it has one, and a refused connection (psycopg gives it none) is read from what libpq keeps
of the attempt in any language (``pgconn.needs_password`` / ``used_password``).

No server is needed: the exceptions are psycopg's own classes, built as psycopg builds them
(tests/integration/test_pg_connect_localized.py runs the same against a German server).
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from memo.errors import StoreUnavailable, ValidationError
from memo.store.postgres.connection import connect_error

psycopg = pytest.importorskip("psycopg")

SOCKET = 'connection failed: connection to server on socket "/run/postgresql/.s.PGSQL.5432" failed: '
AUTH_HINT = "check the user name and password"
DB_HINT = "check the database name"
LOGIN_HINT = "the server asked for a password and then refused the connection"


def _with_state(sqlstate: str, message: str) -> Exception:
    """An error as psycopg raises it for a server result: its class carries the SQLSTATE."""
    exc = psycopg.errors.lookup(sqlstate)(message)
    assert exc.sqlstate == sqlstate
    return exc


def _refused(message: str, *, needs_password: bool = False, used_password: bool = False) -> Exception:
    """A refused connection as psycopg 3.3 raises it (psycopg/generators.py ``_connect``):
    an OperationalError from libpq's text, no SQLSTATE, the finished attempt as ``pgconn``."""
    attempt = SimpleNamespace(needs_password=needs_password, used_password=used_password)
    exc = psycopg.OperationalError(SOCKET + message, pgconn=attempt)
    assert exc.sqlstate is None and exc.diag.sqlstate is None
    return exc


@pytest.mark.parametrize(("sqlstate", "message", "hint"), [
    ("28P01", "FATAL:  Passwort-Authentifizierung für Benutzer »alice« fehlgeschlagen", AUTH_HINT),
    ("28000", 'FATAL:  kein pg_hba.conf-Eintrag für Host »[local]«, Benutzer »alice«, Datenbank »memo«',
     AUTH_HINT),
    ("28000", "FATAL:  la autentificación Peer falló para el usuario «alice»", AUTH_HINT),
    ("3D000", "FATAL:  Datenbank »memo« existiert nicht", DB_HINT),
    ("3D000", "FATAL:  la base de données « memo » n'existe pas", DB_HINT),
    ("42501", "FATAL:  keine Berechtigung für Datenbank »memo«", AUTH_HINT),
])
def test_a_configuration_sqlstate_is_exit_2_in_any_language(sqlstate: str, message: str, hint: str) -> None:
    err = connect_error(_with_state(sqlstate, message))
    assert isinstance(err, ValidationError) and err.exit_code == 2, err
    assert hint in err.hint and "retrying will not help" in err.hint
    assert str(err) == f"cannot connect to PostgreSQL: {message}"


@pytest.mark.parametrize(("sqlstate", "message"), [
    ("57P03", "FATAL:  das Datenbanksystem startet"),
    ("53300", "FATAL:  zu viele Verbindungen für Rolle »alice«"),
    ("57P01", "FATAL:  Verbindung wird abgebrochen aufgrund von Befehl des Administrators"),
    ("08006", "server closed the connection unexpectedly"),
    # the SQLSTATE decides, not English words that happen to be in the text
    ("57P03", 'FATAL:  the database system is starting up (role "alice" does not exist yet)'),
])
def test_another_sqlstate_is_retryable(sqlstate: str, message: str) -> None:
    err = connect_error(_with_state(sqlstate, message))
    assert isinstance(err, StoreUnavailable) and err.exit_code == 6, err


@pytest.mark.parametrize(("message", "flags", "hint"), [
    # the server asked for a password, got one, and refused: wrong password ...
    ("FATAL:  Passwort-Authentifizierung für Benutzer »alice« fehlgeschlagen", {"used_password": True},
     LOGIN_HINT),
    ("FATAL:  échec de l'authentification par mot de passe pour l'utilisateur « alice »",
     {"used_password": True}, LOGIN_HINT),
    # ... or the right one and then an unknown database
    ("FATAL:  Datenbank »memo« existiert nicht", {"used_password": True}, LOGIN_HINT),
    # the server asked for a password and none was given (libpq's own text, in the client's language)
    ("fe_sendauth: kein Passwort angegeben", {"needs_password": True, "used_password": True}, AUTH_HINT),
])
def test_a_refused_login_without_sqlstate_is_exit_2_in_any_language(message: str, flags: dict[str, bool],
                                                                   hint: str) -> None:
    err = connect_error(_refused(message, **flags))
    assert isinstance(err, ValidationError) and err.exit_code == 2, err
    assert hint in err.hint and "retrying will not help" in err.hint, err.hint


@pytest.mark.parametrize(("message", "flags"), [
    # no server: libpq's text, no SQLSTATE, nothing asked
    ("Verbindungsaufbau abgelehnt\n\tLäuft der Server auf diesem Host und akzeptiert er TCP/IP-Verbindungen?", {}),
    ('No such file or directory\n\tIs the server running locally and accepting connections on that socket?', {}),
    ("FATAL:  das Datenbanksystem startet", {}),
    # after the password, a connection limit: full now, free later (English text says so)
    ('FATAL:  too many connections for role "alice"', {"used_password": True}),
])
def test_an_unreachable_or_busy_server_is_retryable(message: str, flags: dict[str, bool]) -> None:
    err = connect_error(_refused(message, **flags))
    assert isinstance(err, StoreUnavailable) and err.exit_code == 6, err
    assert "retry once it is up" in err.hint


def test_an_english_refusal_without_flags_is_still_read() -> None:
    """A server on trust or peer authentication asks for no password: its English text is
    what tells a missing database from a server starting up."""
    err = connect_error(_refused('FATAL:  database "memo" does not exist'))
    assert isinstance(err, ValidationError) and DB_HINT in err.hint
    err = connect_error(_refused('FATAL:  role "bob" does not exist'))
    assert isinstance(err, ValidationError) and AUTH_HINT in err.hint


def test_an_error_without_pgconn_or_text() -> None:
    assert isinstance(connect_error(psycopg.OperationalError()), StoreUnavailable)
    assert isinstance(connect_error(OSError("boom")), StoreUnavailable)
