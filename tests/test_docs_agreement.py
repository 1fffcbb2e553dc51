"""The promises the pages make about the code, checked against the code so they cannot drift.

README's citation block, CITATION.cff and pyproject's license agree; LICENSE is MIT's text.
The architecture page's table of names from the original design names only what exists.
Every page's list of the agents that take `memory=` is the agents whose `supports_memory` is set.
Every agent has a page under docs/agents/ with its keyword table, and the index's table to choose
from names each with the actions it takes. Every relative link in README.md and docs/ reaches its
file, and its anchor a heading there.
"""

from __future__ import annotations

import importlib
import inspect
import re
import tomllib
import unicodedata
from pathlib import Path

import pytest
import yaml  # PyYAML comes with flax, a dependency of Ajax

from ajax.agents.registry import AGENTS
from tests.benchmark_scripts import load_script

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
    ("docs/agents/index.md", r"`memory` makes the networks of (.*?)\s+recurrent"),
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


AGENT_PAGES = ROOT / "docs" / "agents"
SITE_HOOKS = load_script(ROOT / "scripts" / "site_hooks.py")


def agent_page(name: str) -> Path:
    """The page of agent `name` under docs/agents/, by the rule the site's links follow."""
    return AGENT_PAGES / f"{SITE_HOOKS.agent_page(name)}.md"


def test_every_agent_has_a_page_and_every_page_an_agent():
    assert {agent_page(name) for name in AGENTS} | {AGENT_PAGES / "index.md"} == set(AGENT_PAGES.glob("*.md"))
    for name in AGENTS:
        assert agent_page(name).read_text().startswith(f"# {name}\n"), f"{agent_page(name)} is not {name}'s page"


def test_the_agents_pages_table_every_agents_keywords_as_declared():
    from ajax.agents.keyword_tables import tabled, with_tables

    assert tabled((AGENT_PAGES / "index.md").read_text()) == {"shared"}, "index.md tables the shared keywords alone"
    for name in AGENTS:
        assert tabled(agent_page(name).read_text()) == {name}, f"{agent_page(name)} needs {name}'s table alone"
    for page in AGENT_PAGES.glob("*.md"):
        assert with_tables(page.read_text()) == page.read_text(), (
            f"{page.name}'s keyword tables differ from the declarations: python scripts/keyword_tables.py"
        )


def test_the_table_to_choose_an_agent_from_agrees_with_the_registry():
    rows = table_rows(section("docs/agents/index.md", "Choosing an agent"))
    actions = {True: "continuous", False: "discrete", None: "discrete, continuous"}
    linked = {}
    for row in rows:
        match = re.fullmatch(r"\[(\w+)\]\(([\w.]+)\)", row[0])
        assert match, f"the row {row} does not link its agent's page"
        linked[match[1]] = (match[2], row[1])
    assert sorted(linked) == sorted(AGENTS), "the table names every agent once"
    for name, (page, acts) in linked.items():
        assert AGENT_PAGES / page == agent_page(name), f"{name} links {page}"
        assert acts == actions[AGENTS[name].continuous], f"{name} acts in {actions[AGENTS[name].continuous]}"


FENCE = re.compile(r"^```.*?^```", re.S | re.M)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def slug(heading: str) -> str:
    """A heading's anchor as MkDocs writes it (python-markdown's toc), which GitHub's agrees with here."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors(page: Path) -> set[str]:
    """The anchors of a page's headings, outside its code blocks; a repeated heading gets _1, _2, ..."""
    found: set[str] = set()
    for heading in re.findall(r"^#{1,6} +(.+?) *#*$", FENCE.sub("", page.read_text()), re.M):
        anchor, count = slug(heading), 0
        while (anchor if count == 0 else f"{anchor}_{count}") in found:
            count += 1
        found.add(anchor if count == 0 else f"{anchor}_{count}")
    return found


def has_anchor(page: Path, anchor: str) -> bool:
    """A heading's anchor, or an object a mkdocstrings block (`::: ajax.name`) renders there, or its member."""
    objects = re.findall(r"^::: *([\w.]+)", page.read_text(), re.M)
    return anchor in anchors(page) or any(anchor == name or anchor.startswith(f"{name}.") for name in objects)


LINKED_PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


@pytest.mark.parametrize("page", LINKED_PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_relative_link_reaches_its_file_and_anchor(page):
    text = re.sub(r"`[^`\n]*`", "", FENCE.sub("", page.read_text()))  # links in code are not links
    broken = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue  # http:, https:, mailto:
        path, _, anchor = target.partition("#")
        reached = (page.parent / path).resolve() if path else page
        if not reached.exists():
            broken.append(f"{target}: no {path}")
        elif anchor and reached.suffix == ".md" and not has_anchor(reached, anchor):
            broken.append(f"{target}: {reached.relative_to(ROOT)} has no heading #{anchor}")
    assert not broken, f"{page.relative_to(ROOT)} links to what is not there: {broken}"


# The installation page's extras, the README's agents, the environments page's backends and the command
# line page's flags, each against what the code declares.


def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def requirement_name(requirement: str) -> str:
    """`jax[cuda12]>=0.10` -> `jax[cuda12]`; `ajax[brax,navix]` -> `ajax[brax,navix]`."""
    return re.match(r"[\w.-]+(\[[\w,-]+\])?", requirement)[0]


def backticked(cell: str) -> list[str]:
    """The `code` of a cell, leaving out what a parenthesis adds (`playground` (imported as ...))."""
    return re.findall(r"`([^`]+)`", re.sub(r"\([^)]*\)", "", cell))


def test_the_installation_pages_extras_are_pyprojects():
    extras = pyproject()["optional-dependencies"]
    rows = table_rows(section("docs/installation.md", "The lock file and the extras"))
    tabled: dict[str, list[str]] = {}
    for row in rows:
        names, installs = backticked(row[0]), backticked(row[1])
        assert names, f"the extras table's row {row} names no extra"
        for name in names:
            assert name not in tabled, f"the extras table lists {name} twice"
            tabled[name] = installs
    assert sorted(tabled) == sorted(extras), "the extras table lists other extras than pyproject.toml"
    for name, installs in tabled.items():
        if name == "all":
            inner = re.fullmatch(r"ajax\[([\w,-]+)\]", requirement_name(extras["all"][0]))[1].split(",")
            assert installs == inner, f"the table says `all` installs {installs}, pyproject.toml {inner}"
        elif len(installs) == len(extras[name]):
            assert installs == [requirement_name(r) for r in extras[name]], f"the table's {name} row"
        else:  # one row for several extras (cuda12, cuda13): each extra's one requirement, in order
            together = [n for n, i in tabled.items() if i is installs]
            assert installs == [requirement_name(r) for n in together for r in extras[n]], f"the {together} row"


def test_the_installation_pages_direct_dependencies_are_pyprojects():
    said = re.search(r"direct dependencies \(([^)]*)\)", (ROOT / "docs" / "installation.md").read_text())
    assert said, "docs/installation.md no longer lists the direct dependencies in parentheses"
    named = [name.lower() for name in re.split(r",\s*", said[1])]
    declared = [requirement_name(r).lower() for r in pyproject()["dependencies"]]
    assert named == declared, f"docs/installation.md names {named} as direct dependencies, pyproject.toml {declared}"


def test_the_readmes_agent_table_is_the_registry():
    text = (ROOT / "README.md").read_text()
    table = re.search(r"^\| Agent \| Paper \| Actions \|\n(?:\|.*\n)+", text, re.M)
    assert table, "README.md has no | Agent | Paper | Actions | table"
    rows = table_rows(table[0])
    assert sorted(row[0] for row in rows) == sorted(AGENTS), "README's agent table names other agents"
    acts = {True: "continuous", False: "discrete", None: "discrete, continuous"}
    for name, _, actions in rows:
        assert actions == acts[AGENTS[name].continuous], f"README says {name} acts in {actions}"


NUMBERS = {"nine": 9, "ten": 10, "eighteen": 18, "nineteen": 19, "twenty": 20, "twenty-one": 21, "twenty-two": 22}
COUNTED = re.compile(r"\b(eighteen|nineteen|twenty|twenty-one|twenty-two)\b", re.I)  # on these pages, the agents


@pytest.mark.parametrize("page", ["docs/cli.md", "docs/architecture.md", "docs/agents/index.md", "docs/api/index.md"])
def test_a_page_counting_the_agents_counts_the_registry(page):
    said = COUNTED.findall((ROOT / page).read_text())
    assert said, f"{page} no longer counts the agents; drop it from this test"
    counts = {NUMBERS[word.lower()] for word in said}
    assert counts == {len(AGENTS)}, f"{page} counts {said} agents; the registry has {len(AGENTS)}"


def test_the_environments_pages_backends_route_their_ids():
    from ajax.environments.ids import backend_of

    extras = pyproject()["optional-dependencies"]
    text = section("docs/environments.md", "Ids and their backends")
    rows = table_rows(text)
    backends = set()
    for backend, ids, package in rows:
        extra = re.search(r"`ajax\[(\w+)\]`", package)
        expected = extra[1] if extra else "gymnax"
        assert extra is None or expected in extras, f"the {backend} row names no extra of pyproject.toml"
        examples = [i for i in re.findall(r"`([^`]+)`", ids) if not i.endswith(":")]
        assert examples, f"the {backend} row gives no example id"
        for env_id in examples:
            assert backend_of(env_id) == expected, f"{env_id} routes to {backend_of(env_id)}, not {expected}"
        backends.add(expected)
    said = re.search(r"An id routes to one of (\w+) backends", text)
    assert said and NUMBERS.get(said[1]) == len(backends), f"the page counts {said and said[1]} backends"


def cli_options() -> dict[str, set[str]]:
    """Each subcommand's options (its own `-h`, `--help` included)."""
    from ajax.cli import build_parser

    parser = build_parser()
    commands = next(action for action in parser._actions if isinstance(action.choices, dict))
    return {
        name: {option for action in sub._actions for option in action.option_strings}
        for name, sub in commands.choices.items()
    }


# Flags the command line page names only as what the parser refuses (an abbreviation); the test checks they are.
REFUSED_ON_THE_CLI_PAGE = {"--seed"}


def test_every_flag_on_the_cli_page_is_the_parsers():
    options = cli_options()
    page = (ROOT / "docs" / "cli.md").read_text()
    sections = re.split(r"^## `ajax (\w+)", page, flags=re.M)
    every = set().union(*options.values())
    assert not REFUSED_ON_THE_CLI_PAGE & every, "a flag the page calls refused is an option"
    for flag in set(re.findall(r"(?<![\w-])--[a-z][\w-]*", sections[0])) - REFUSED_ON_THE_CLI_PAGE:
        assert flag in every, f"docs/cli.md's introduction names {flag}, which no subcommand takes"
    for command, text in zip(sections[1::2], sections[2::2], strict=True):
        for flag in set(re.findall(r"(?<![\w-])--[a-z][\w-]*", text)) - REFUSED_ON_THE_CLI_PAGE:
            assert flag in options[command], f"docs/cli.md's ajax {command} section names {flag}, not an option of it"


def test_the_cli_pages_train_table_is_the_train_parsers_options():
    from ajax.cli import build_parser

    parser = build_parser()
    train = next(action for action in parser._actions if isinstance(action.choices, dict)).choices["train"]
    rows = table_rows(section("docs/cli.md", "`ajax train`"))
    tabled = {}
    for row in rows:
        shape = re.fullmatch(r"`(--[\w-]+)(?: (\{[\w,]+\}|[A-Z=_]+))?`", row[0])
        assert shape, f"the train table's row {row[0]} is not `--option [VALUE]`"
        tabled[shape[1]] = (shape[2], row[1])
    actions = {action.option_strings[0]: action for action in train._actions if action.option_strings}
    assert set(tabled) == set(actions) - {"-h"}, "docs/cli.md's train table lists other options than the parser's"
    for option, (value, default) in tabled.items():
        action = actions[option]
        if action.choices:
            assert value == "{" + ",".join(action.choices) + "}", f"{option}'s choices"
            assert default == action.default, f"{option}'s default is {action.default}"
        elif action.nargs == 0:
            assert value is None and default in {"off", ""}, f"{option} takes no value and is off by default"
        else:
            assert value is not None, f"{option} takes a value"
            if isinstance(action.default, int) and not isinstance(action.default, bool):
                assert default == str(action.default), f"{option}'s default is {action.default}"
