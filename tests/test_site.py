"""The documentation site builds with `mkdocs build --strict`, and its API pages hold what the code declares.

One build (about ten seconds) serves every check of the built pages; scripts/site_hooks.py's link
rewriting and markers are also checked directly, without a build.
"""

from __future__ import annotations

import html
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from mkdocs.exceptions import PluginError

import ajax
from ajax.agents.base import SHARED_KEYWORDS
from ajax.agents.registry import AGENTS
from ajax.cli import build_parser
from tests.benchmark_scripts import load_script

ROOT = Path(__file__).resolve().parent.parent


hooks = load_script(ROOT / "scripts" / "site_hooks.py")


def mkdocs_build(config: Path, site: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config), "--site-dir", str(site)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    site = tmp_path_factory.mktemp("site")
    built = mkdocs_build(ROOT / "mkdocs.yml", site)
    assert built.returncode == 0, f"mkdocs build --strict failed:\n{built.stdout}\n{built.stderr}"
    return site


def page_text(site: Path, page: str) -> str:
    """A built page's HTML with the tags taken out and the entities read, spaces collapsed."""
    text = re.sub(r"<[^>]+>", " ", (site / page / "index.html").read_text())
    return " ".join(html.unescape(text).split())


def built(site: Path, source: Path) -> Path:
    """Where the site puts a page of docs/: `sac.md` at `sac/index.html`, a README or index at its folder's."""
    parts = source.relative_to(ROOT / "docs").with_suffix("").parts
    if parts[-1] in {"README", "index"}:
        parts = parts[:-1]
    return site.joinpath(*parts, "index.html")


def test_every_page_of_docs_is_in_the_site(site):
    for source in (ROOT / "docs").rglob("*.md"):
        assert built(site, source).exists(), f"{source.relative_to(ROOT)} is not in the built site"


def test_each_agents_api_entry_tables_its_declared_keywords(site):
    page = (site / "api" / "agents" / "index.html").read_text()
    starts = {page.find(f'id="{agent.__module__}.{agent.__qualname__}"'): name for name, agent in AGENTS.items()}
    assert -1 not in starts, f"{starts[-1]} has no entry on the API's agents page"
    bounds = sorted(starts) + [len(page)]
    for start, end in zip(bounds, bounds[1:], strict=False):
        declared = AGENTS[starts[start]].hyperparameters.declared
        for keyword, entry in declared.items():
            if SHARED_KEYWORDS.declared.get(keyword) != entry:
                assert f"<code>{keyword}</code>" in page[start:end], f"{starts[start]}'s entry does not table {keyword}"
    for keyword in SHARED_KEYWORDS.declared:
        assert f"<code>{keyword}</code>" in page[: bounds[0]], f"the shared keywords' table lacks {keyword}"


def test_sacs_api_entry_has_its_table_rows_as_declared(site):
    text = page_text(site, "api/agents")
    for name in ("learning_starts", "tau", "target_entropy"):
        declared = AGENTS["SAC"].hyperparameters.declared[name]
        row = f"{name} {declared.default!r} {declared.accepts} {'yes ' if declared.sweepable else ''}{declared.doc}"
        assert row in text, f"no row '{row}' for SAC's {name} on the API page"


def test_the_cli_page_has_every_option_of_every_subcommand(site):
    page = (site / "api" / "cli" / "index.html").read_text()
    parser = build_parser()
    subcommands = next(a for a in parser._actions if isinstance(a.choices, dict))
    for name, subparser in subcommands.choices.items():
        section = page.split(f'<h2 id="ajax-{name}">')[1].split("<h2 ")[0]
        text = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", section)).split())
        assert f"usage: ajax {name}" in text
        for action in subparser._actions:
            for option in set(action.option_strings) - {"-h", "--help"}:
                assert f"<code>{option}</code>" in section, f"api/cli lacks ajax {name}'s {option}"
            if action.help and action.option_strings != ["-h", "--help"]:
                said = " ".join(action.help.replace("`", "").split())  # `code` in a help is set as code
                assert said in text, f"api/cli lacks the help of ajax {name}'s {action.dest}"


def test_the_api_index_links_every_public_name(site):
    page = (site / "api" / "index.html").read_text()
    for name in ajax.__all__:
        value = getattr(ajax, name)
        anchor = f"{value.__module__}.{value.__qualname__}"
        assert re.search(rf'href="[^"]*#{re.escape(anchor)}"', page), f"api/index.md does not link {name} to its entry"


@pytest.mark.parametrize(
    ("link", "named"), [("missing.md", "missing.md"), ("#no-such-heading", "no-such-heading")], ids=["page", "anchor"]
)
def test_a_broken_link_fails_the_build(tmp_path, link, named):
    """The site's own configuration, over a page whose one link is broken."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "README.md").write_text(f"# Home\n\nSee [this]({link}).\n")
    config = tmp_path / "mkdocs.yml"
    config.write_text(
        f"INHERIT: {ROOT / 'mkdocs.yml'}\ndocs_dir: {docs}\nhooks: [{ROOT / 'scripts' / 'site_hooks.py'}]\n"
        "nav: [README.md]\nextra_css: []\n"
    )
    built = mkdocs_build(config, tmp_path / "site")
    assert built.returncode != 0
    assert named in built.stdout + built.stderr


def test_a_link_outside_docs_points_at_the_repository_and_a_missing_file_fails():
    docs, page = ROOT / "docs", ROOT / "docs" / "agents" / "sac.md"
    url = "https://example.org/owner/repo"
    text = "[a](../../README.md#set-up) `[b](../../absent.py)` [c](../results.md) [d](../../src/ajax)"
    text += "\n[e]: ../../LICENSE"
    assert hooks.outside_links(text, page, docs, url) == (
        f"[a]({url}/blob/main/README.md#set-up) `[b](../../absent.py)` [c](../results.md) [d]({url}/tree/main/src/ajax)"
        f"\n[e]: {url}/blob/main/LICENSE"
    )
    assert hooks.outside_links("```\n[x](../../absent.py)\n```", page, docs, url) == "```\n[x](../../absent.py)\n```"
    with pytest.raises(PluginError, match="absent.py"):
        hooks.outside_links("[x](../../absent.py)", page, docs, url)


def test_an_unknown_marker_or_name_fails():
    with pytest.raises(PluginError, match="unknown marker"):
        hooks.generated("keyword", "SAC", "api/agents.md")
    with pytest.raises(PluginError, match="NotAnAgent"):
        hooks.generated("keywords", "NotAnAgent", "api/agents.md")
    with pytest.raises(PluginError, match="serve"):
        hooks.generated("cli", "serve", "api/cli.md")


def test_the_site_links_to_the_cited_repository():
    import yaml

    config = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=yaml.Loader)  # its slugify tag names a function
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert config["repo_url"] == citation["repository-code"]
