"""Where the results database is: an SQLite file (the default) or a lab's PostgreSQL server.

``--ssd-db`` / ``ssd_db`` / ``PYTEST_SSD_DB`` and ``pytest-ssd --db`` take a
path, ``sqlite:///relative/file``, ``sqlite:////absolute/file`` (SQLAlchemy's
spelling) or ``postgresql://user@host/database`` (``postgres://`` too, with
anything libpq takes after ``?``, e.g. ``?host=/run/postgresql`` for a socket).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from pytest_ssd.errors import ConfigError
from pytest_ssd.secret import masked_text

#: the environment variable naming the database (after the command line, before the ini file)
ENV = "PYTEST_SSD_DB"
_SQLITE = "sqlite:///"
_POSTGRES = ("postgresql://", "postgres://")
_SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*)://")


@dataclass(frozen=True)
class DbUrl:
    """A results database: *path* for SQLite, *url* (libpq's) for PostgreSQL."""

    url: str
    path: Path | None = None

    @property
    def sqlite(self) -> bool:
        return self.path is not None

    @property
    def file(self) -> Path:
        """The SQLite file (ConfigError for a server: the caller wanted a file)."""
        if self.path is None:
            raise ConfigError(f"{self}: a database server, not a file")
        return self.path

    def __str__(self) -> str:
        """As shown in messages: the path, or the URL without its password."""
        return str(self.path) if self.path is not None else masked_text(self.url)


def db_url(given: str | Path | DbUrl, base: Path | None = None) -> DbUrl:
    """*given* as a :class:`DbUrl`; a relative path is taken from *base* (the working folder).

    A URL of another scheme is a one-line :class:`ConfigError`.
    """
    if isinstance(given, DbUrl):
        return given
    text = str(given)
    folder = base or Path.cwd()
    if isinstance(given, Path) or not _SCHEME.match(text):
        path = Path(text).expanduser()
        return DbUrl(str(path), folder / path if not path.is_absolute() else path)
    if text.startswith(_SQLITE):
        path = Path(text.removeprefix(_SQLITE))
        return DbUrl(text, folder / path if not path.is_absolute() else path)
    if text.startswith(_POSTGRES):
        return DbUrl(text)
    scheme = text.split("://", 1)[0]
    raise ConfigError(
        f"results database {DbUrl(text)}: {scheme}:// is not supported:"
        " give a file, sqlite:///FILE or postgresql://USER@HOST/DATABASE"
    )


def configured(option: str | None, ini: str | None) -> str | None:
    """The database asked for: the command line's, else ``PYTEST_SSD_DB``'s, else the ini's."""
    return option or os.environ.get(ENV) or ini or None


def session_db(option: str | None, ini: str | None, inifile: Path | None, default: Path) -> DbUrl:
    """A session's database: ``--ssd-db``, ``PYTEST_SSD_DB``, ``ssd_db`` (from its file's folder).

    Without any, *default* (``results.sqlite`` in the report folder).
    """
    if option or os.environ.get(ENV):
        return db_url(configured(option, None) or "")
    if ini:
        return db_url(ini, inifile.parent if inifile is not None else None)
    return db_url(default)
