"""The promises the pages make about the code, checked against the code so they cannot drift.

README's citation block, CITATION.cff and pyproject's license agree; LICENSE is MIT's text.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml  # PyYAML comes with flax, a dependency of Ajax

ROOT = Path(__file__).resolve().parent.parent


def readme_citation() -> dict[str, str]:
    """The fields of the README's bibtex block."""
    text = (ROOT / "README.md").read_text()
    block = re.search(r"^```bibtex\n(.*?)^```", text, re.S | re.M)
    assert block, "README.md has no ```bibtex block"
    return dict(re.findall(r"^\s*(\w+)\s*=\s*\{(.*)\},?\s*$", block.group(1), re.M))


def test_citation_file_agrees_with_the_readme_and_pyproject():
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    cited = readme_citation()
    assert cff["cff-version"] == "1.2.0"
    assert {"cff-version", "message", "title", "authors"} <= cff.keys()  # CFF 1.2.0's required keys
    assert cff["license"] == project["license"] == "MIT"
    assert cff["version"] == project["version"]
    for reference in (cff, cff["preferred-citation"]):
        assert reference["title"] == cited["title"]
        names = [f"{a['given-names']} {a['family-names']}" for a in reference["authors"]]
        assert " and ".join(names) == cited["author"]
    assert cff["repository-code"] == cff["url"] == cff["preferred-citation"]["url"] == cited["url"]
    assert str(cff["preferred-citation"]["year"]) == cited["year"]


def test_license_is_mit_with_the_citation_author():
    text = (ROOT / "LICENSE").read_text()
    cited = readme_citation()
    assert text.startswith("MIT License\n")
    assert f"Copyright (c) {cited['year']} {cited['author']}" in text
    assert "Permission is hereby granted, free of charge" in text
    assert "MIT. See [LICENSE](LICENSE)." in (ROOT / "README.md").read_text()
