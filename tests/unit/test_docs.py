"""README.md and docs/: quick start first, a contents list, links that resolve, no absent docs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = sorted((REPO / "docs").glob("*.md"))
PAGES = [REPO / "README.md", REPO / "reports" / "README.md", *DOCS]
#: references to documents that are not in the repository (METHOD.md and its sections, the seeds)
ABSENT = re.compile(r"METHOD|\bseeds?\b|§")
LINK = re.compile(r"\]\(([^)#\s]+)(#[^)]*)?\)")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_link_names_a_file_of_the_repository_or_the_web(page: Path) -> None:
    for target, _ in LINK.findall(page.read_text()):
        if not target.startswith(("http://", "https://")):
            assert (page.parent / target).exists(), f"{page.name}: {target} is not there"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_no_page_cites_a_document_not_in_the_repository(page: Path) -> None:
    text = page.read_text()
    text = re.sub(r"`[^`]*seed[^`]*`|randseed|seeded|seeds job|job's seed|own seed", "", text)
    assert not ABSENT.findall(text), [ln for ln in text.splitlines() if ABSENT.search(ln)]


def test_the_readme_opens_with_the_quick_start_and_a_contents_list() -> None:
    lines = (REPO / "README.md").read_text().splitlines()
    first_screen = "\n".join(lines[:40])
    for needed in (
        "./run smoke",
        "./run tests",
        ".venv/bin/pytest",
        "source .venv/bin/activate",
        "--ssd-confirm=",
        "SERIAL",
    ):
        assert needed in first_screen, needed
    assert len(lines) <= 150, "a short README: the reference is in docs/"
    contents = lines.index("## Contents")
    linked = {target for target, _ in LINK.findall("\n".join(lines[contents:]))}
    docs = {f"docs/{p.name}" for p in DOCS}
    assert docs <= linked, f"every docs/ page is in the contents: {sorted(docs - linked)}"
    assert "**Lab**" in lines[contents:], "the lab's part of the contents"


def test_the_readme_speaks_of_the_product_not_of_its_issues() -> None:
    text = (REPO / "README.md").read_text()
    # another project's issue (pytest-xdist's) is a fact about the product; our own are not
    ours = re.findall(r"(?<!pytest-xdist )\bissue \d+", text)
    assert not ours, ours


def test_the_hosts_recipe_does_not_copy_a_key_with_a_root_password() -> None:
    # Debian's sshd refuses root's password (PermitRootLogin prohibit-password)
    recipe = (REPO / "docs" / "hosts.md").read_text()
    assert not re.search(r"^ssh-copy-id root@", recipe, re.M)
    assert "/root/.ssh/authorized_keys" in recipe and "BatchMode=yes" in recipe


def test_the_quick_start_commands_are_those_of_run_and_ci() -> None:
    run = (REPO / "run").read_text()
    assert re.search(r"^    smoke\)$", run, re.M) and re.search(r"^    tests\)$", run, re.M)
    assert "./run tests" in (REPO / ".ci" / "run").read_text()


#: a merge left unresolved: git's markers at the start of a line (built here, not written out)
CONFLICT = re.compile("^(" + "<" * 7 + " |" + "=" * 7 + "$|" + ">" * 7 + " )", re.MULTILINE)
TEXT_SUFFIXES = {".md", ".py", ".cfg", ".toml", ".pl", ".yml", ".sh", ""}


def test_no_file_holds_an_unresolved_merge() -> None:
    roots = [REPO / name for name in ("pytest_ssd", "suites", "tests", "docs", "examples")]
    files = [REPO / "README.md", REPO / "setup.cfg", REPO / "run", *PAGES]
    files += [p for root in roots for p in root.rglob("*") if p.is_file()]
    found = [
        str(p.relative_to(REPO))
        for p in sorted(set(files))
        if p.suffix in TEXT_SUFFIXES
        and "__pycache__" not in p.parts
        and CONFLICT.search(p.read_text(errors="replace"))
    ]
    assert not found, f"unresolved merge markers in {found}"
