"""Every doc stands alone: no reference outside the repository, every path it names exists."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tests.conftest import ROOT

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
OUTSIDE = [
    re.compile("DESIGN" + r"(\.md|\s*§)"),  # the product brief lives outside the repository
    re.compile("STYLE" + r"\.md"),
    re.compile(r"(?<![\w.])/" + "work/"),
    re.compile(r"\bissues? show\b"),
]
REPO_PATH = re.compile(r"`((?:studio|nodes|tests|docs|flows|bench)/[A-Za-z0-9_./\-]+)`")


def _tracked_text_files() -> list[Path]:
    names = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    return [ROOT / n for n in names if n.endswith((".md", ".py", ".yaml", ".toml")) and (ROOT / n).is_file()]


def test_nothing_cites_a_file_outside_the_repository() -> None:
    found = []
    for path in _tracked_text_files():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if any(p.search(line) for p in OUTSIDE):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert found == [], "\n".join(found)


def test_every_path_and_link_in_the_docs_exists() -> None:
    missing = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for match in REPO_PATH.finditer(text):
            path = match.group(1).rstrip("/")
            placeholder = any(c.isupper() for c in path.split("/")[-1].split(".")[0]) or ".venv" in path
            if not placeholder and not (ROOT / path).exists():
                missing.append(f"{doc.name}: `{path}`")
        for target in re.findall(r"\]\(([^)#\s]+)", text):
            if not target.startswith(("http://", "https://")) and not (doc.parent / target).exists():
                missing.append(f"{doc.name}: link {target}")
    assert missing == [], missing


def test_readme_says_how_to_reach_the_cli() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert ".venv/bin/flowstudio" in readme
    assert ". .venv/bin/activate" in readme


def test_docs_say_templates_drop_their_final_newline() -> None:
    for doc in (ROOT / "README.md", ROOT / "docs" / "design.md"):
        text = " ".join(doc.read_text(encoding="utf-8").split())
        assert "final newline" in text and "Jinja" in text, doc
