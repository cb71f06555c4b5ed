"""Where run folders and the results database live, for the plugin and ``pytest-ssd`` alike.

The lookup, first match wins:

1. ``--ssd-report-dir`` (the plugin) / ``--db`` (``pytest-ssd``), as given;
2. the ini option ``ssd_report_dir`` in the project's pytest configuration
   file, relative to that file's folder;
3. ``reports/`` beside that configuration file;
4. ``reports/`` in the working directory (no configuration file found).

The plugin gets the configuration file from pytest (``config.inipath``);
``pytest-ssd`` finds it as pytest does with no arguments: the first of
pytest's file names, from the working directory upwards, that holds a pytest
section.  So ``cd suites && pytest-ssd list`` reads the database the run at the
project's top wrote.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from pytest_ssd.documents import TooLarge, loads_toml, read_text_bounded

INI_OPTION = "ssd_report_dir"
#: the ini option naming the results database (a path from the file's folder, or a URL)
DB_OPTION = "ssd_db"
DEFAULT_REPORT_DIR = "reports"
DB_FILE = "results.sqlite"
#: the largest pytest configuration file looked into
MAX_CONFIG_BYTES = 16 << 20

#: pytest's configuration files, in its order, with the section that makes one pytest's
_CONFIG_FILES = (
    ("pytest.toml", ("pytest",)),
    (".pytest.toml", ("pytest",)),
    ("pytest.ini", ("pytest",)),
    (".pytest.ini", ("pytest",)),
    ("pyproject.toml", ("tool", "pytest", "ini_options")),
    ("tox.ini", ("pytest",)),
    ("setup.cfg", ("tool:pytest",)),
)


def report_dir(inifile: Path | None, configured: str | None, cwd: Path) -> Path:
    """The report folder from the configuration file and its ``ssd_report_dir`` (steps 2–4)."""
    if inifile is None:
        return (cwd / DEFAULT_REPORT_DIR).absolute()
    return (inifile.parent / (configured or DEFAULT_REPORT_DIR)).absolute()


def find_config(cwd: Path, option: str = INI_OPTION) -> tuple[Path | None, str | None]:
    """pytest's configuration file from *cwd* upwards, and its *option* if set."""
    for folder in (cwd.absolute(), *cwd.absolute().parents):
        for name, section in _CONFIG_FILES:
            path = folder / name
            if path.is_file():
                found, value = _read(path, section, option)
                if found:
                    return path, value
    return None, None


def default_db(cwd: Path) -> Path | str:
    """The results database ``pytest-ssd`` reads when no ``--db`` is given.

    The ini option ``ssd_db`` (a URL, or a path from the file's folder), else
    ``results.sqlite`` in the report folder.
    """
    inifile, db = find_config(cwd, DB_OPTION)
    if inifile is not None and db:
        return db if "://" in db else inifile.parent / db
    inifile, configured = find_config(cwd)
    return report_dir(inifile, configured, cwd) / DB_FILE


def _read(path: Path, section: tuple[str, ...], option: str) -> tuple[bool, str | None]:
    """(whether *path* has the pytest *section*, its *option*); unreadable: no."""
    try:
        text = read_text_bounded(path, MAX_CONFIG_BYTES)
    except (OSError, UnicodeDecodeError, TooLarge):
        return False, None
    if path.suffix == ".toml":
        try:
            table: object = loads_toml(text)
        except tomllib.TOMLDecodeError:
            return False, None
        for key in section:
            table = table.get(key) if isinstance(table, dict) else None
        if not isinstance(table, dict):
            return False, None
        value = table.get(option)
        return True, str(value) if value is not None else None
    # the command's (pytest reads its own ini): the plugin's processes never load configparser
    import configparser  # noqa: PLC0415

    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text, str(path))
    except configparser.Error:
        return False, None
    if not parser.has_section(section[0]):
        # pytest.ini is pytest's even without a [pytest] section
        return path.name in ("pytest.ini", ".pytest.ini"), None
    return True, parser.get(section[0], option, fallback=None)
