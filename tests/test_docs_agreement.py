"""The promises the pages make about the code, checked against the code so they cannot drift.

README's citation block, CITATION.cff and pyproject's license agree; LICENSE is MIT's text.
The architecture page's table of names from the original design names only what exists.
Every page's list of the agents that take `memory=` is the agents whose `supports_memory` is set.
"""

from __future__ import annotations

import importlib
import inspect
import re
import tomllib
from pathlib import Path

import pytest
import yaml  # PyYAML comes with flax, a dependency of Ajax

from ajax.agents.registry import AGENTS

ROOT = Path(__file__).resolve().parent.parent
DESIGN_NAMES = {
    "build_resumable_train",
    "explore_pipeline",
    "uniform_steps",
    "per_seed_update_counts",
    "maybe_eval_and_log",
}


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


def section(page: str, heading: str) -> str:
    text = (ROOT / page).read_text()
    match = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    assert match, f"{page} has no section '## {heading}'"
    return match.group(1)


def table_rows(text: str) -> list[list[str]]:
    """The cells of a markdown table's body rows."""
    lines = [line for line in text.splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines[2:]]


def resolve(module: str, name: str):
    """`name` (possibly dotted, `TrainLoop.train`) in `module`; AttributeError if it is not there."""
    value = importlib.import_module(module)
    for part in name.split("."):
        value = getattr(value, part)
    return value


def test_every_name_replacing_a_design_name_exists():
    rows = table_rows(section("docs/architecture.md", "Names from the original design"))
    assert {re.fullmatch(r"`(\w+)`", row[0]).group(1) for row in rows} == DESIGN_NAMES
    defined = "\n".join(path.read_text() for path in (ROOT / "src" / "ajax").rglob("*.py"))
    for design, ajax, changed in rows:
        design = design.strip("`")
        named = re.findall(r"`([A-Za-z_][\w.]*)` \(`(ajax[\w.]*)`\)", ajax)
        assert named, f"the row of {design} names no `name` (`module`)"
        argument = re.match(r"the `(\w+)` argument of", ajax)
        for name, module in named:
            value = resolve(module, name)
            if argument:
                assert argument.group(1) in inspect.signature(value).parameters, (design, name)
        for name, module in re.findall(r"`([A-Za-z_][\w.]*)` in `(ajax[\w.]*)`", changed):
            resolve(module, name)
        if design not in {name for name, _ in named}:
            # The design's name is gone: nothing in the package defines it.
            assert not re.search(rf"\b(def|class) {design}\b|^\s*{design}\s*[:=]", defined, re.M), design


# Where each page lists the agents that take `memory=`: the page, and a pattern whose group is the list.
MEMORY_LISTS = [
    ("README.md", r"^## Recurrent memory\n\n(.*?) take a memory for their actors"),
    ("docs/memory.md", r"for you\. (.*?) have it\."),
    ("docs/architecture.md", r"on an agent without memory \(all but (.*?)\)"),
    ("docs/agents.md", r"`memory` makes the networks of (.*?)\s+recurrent"),
]


def memory_agents() -> set[str]:
    return {name for name, agent in AGENTS.items() if agent.supports_memory}


def listed(page: str, pattern: str) -> str:
    match = re.search(pattern, (ROOT / page).read_text(), re.S | re.M)
    assert match, f"{page} no longer matches {pattern!r}: update the page or this test's MEMORY_LISTS"
    return " ".join(match.group(1).split())


@pytest.mark.parametrize(("page", "pattern"), MEMORY_LISTS, ids=[page for page, _ in MEMORY_LISTS])
def test_memory_lists_agree_with_supports_memory(page, pattern):
    names = re.split(r",\s*|\s+and\s+", listed(page, pattern))
    assert len(names) == len(set(names)), f"{page} names an agent twice: {names}"
    assert set(names) == memory_agents(), (
        f"{page} lists {sorted(names)} as taking memory=; the agents' flags say so of {sorted(memory_agents())}"
    )


def test_memory_page_names_every_agent_that_refuses_memory():
    paragraph = listed("docs/memory.md", r"^The other agents refuse `memory=` rather than ignore it: (.*?)\n\n")
    named = {name for name in AGENTS if re.search(rf"\b{name}\b", paragraph)}
    assert named == set(AGENTS) - memory_agents()


def test_the_agents_page_tables_every_agents_keywords_as_declared():
    from ajax.agents.keyword_tables import tabled, with_tables

    page = (ROOT / "docs" / "agents.md").read_text()
    assert tabled(page) == {*AGENTS, "shared"}, "docs/agents.md needs a marked keyword table per agent"
    assert with_tables(page) == page, (
        "the keyword tables differ from the declarations: python scripts/keyword_tables.py"
    )
