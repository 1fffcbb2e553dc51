"""MkDocs hooks of the documentation site (mkdocs.yml's `hooks:`).

Two jobs, both on each page's Markdown before MkDocs reads it:

- A link to a repository file outside docs/ (`../README.md`, `../benchmarks/agent_bench.py`)
  becomes a link to that file in the repository (mkdocs.yml's `repo_url`), since the site holds
  only docs/. A link to a file that does not exist fails the build, as MkDocs fails one inside docs/.
- A marker line `<!-- site: WHAT ARGUMENT -->` is replaced by what the code says, so the page
  cannot drift from it; an unknown marker fails the build:
    - `keywords NAME`: agent NAME's keyword table (or the `shared` one), from its declaration
      (`ajax.agents.keyword_tables`);
    - `agents`: every registered agent's entry (its docstring) with its keyword table;
    - `cli COMMAND`: the usage and options of `ajax COMMAND` (`ajax` itself: its subcommands),
      from `ajax.cli.build_parser()`;
    - `public-names`: the names `from ajax import *` gives, each linked to its entry.
"""

from __future__ import annotations

import argparse
import html
import re
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError

REPOSITORY = Path(__file__).resolve().parents[1]
BRANCH = "main"
IMAGES = (".png", ".jpg", ".jpeg", ".gif", ".svg")

MARKER = re.compile(r"^<!-- site: ([\w-]+)(?: ([\w-]+))? -->$", re.M)
FENCE = re.compile(r"^\s*(```|~~~)")
# An inline code span (left as it is), an inline link's target, or a reference definition's target.
LINK = re.compile(
    r"(?P<code>`+)(?:(?!\n[ \t]*\n)[\s\S])+?(?P=code)"
    r"|(?P<inline>\]\(\s*)(?P<target>[^)\s]+)"
    r"|^(?P<reference>\s{0,3}\[[^\]]+\]:\s*)(?P<defined>\S+)",
    re.M,
)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    source = Path(page.file.abs_src_path)
    markdown = MARKER.sub(lambda match: generated(match[1], match[2], page.file.src_uri), markdown)
    return outside_links(markdown, source, Path(config["docs_dir"]), config["repo_url"])


# Links outside docs/ ---------------------------------------------------------------------------


def outside_links(markdown: str, source: Path, docs: Path, repo_url: str) -> str:
    """`markdown` with each link to a repository file outside `docs` pointed at the repository
    (fenced code is left as it is)."""
    chunks: list[list[str]] = [[]]  # prose and fenced code in turn, prose first
    fenced = None
    for line in markdown.split("\n"):
        fence = FENCE.match(line)
        if fenced is None and fence:
            fenced = fence[1]
            chunks.append([])
        chunks[-1].append(line)
        if fenced is not None and fence and len(chunks[-1]) > 1 and fence[1] == fenced:
            fenced = None
            chunks.append([])
    return "\n".join(
        rewrite("\n".join(chunk), source, docs, repo_url) if i % 2 == 0 else "\n".join(chunk)
        for i, chunk in enumerate(chunks)
        if chunk
    )


def rewrite(text: str, source: Path, docs: Path, repo_url: str) -> str:
    def replace(match: re.Match) -> str:
        if match["code"]:
            return match[0]
        lead, target = (match["inline"], match["target"]) if match["inline"] else (match["reference"], match["defined"])
        return lead + repository_link(target, source, docs, repo_url)

    return LINK.sub(replace, text)


def repository_link(target: str, source: Path, docs: Path, repo_url: str) -> str:
    """`target` as the page should link it: unchanged inside docs/ or off-site, else the repository's URL."""
    if re.match(r"^([a-z][a-z0-9+.-]*:|#|/)", target, re.I):
        return target
    path, _, anchor = target.partition("#")
    resolved = (source.parent / path).resolve()
    if resolved.is_relative_to(docs.resolve()):
        return target  # MkDocs checks it
    page = source.relative_to(REPOSITORY)
    if not resolved.is_relative_to(REPOSITORY):
        raise PluginError(f"{page} links to {target}, outside the repository.")
    if not resolved.exists():
        raise PluginError(f"{page} links to {target}, and the repository has no {resolved.relative_to(REPOSITORY)}.")
    kind = "raw" if resolved.suffix.lower() in IMAGES else "tree" if resolved.is_dir() else "blob"
    where = f"{repo_url.rstrip('/')}/{kind}/{BRANCH}/{resolved.relative_to(REPOSITORY).as_posix()}"
    return where + (f"#{anchor}" if anchor else "")


# Tables written from the code ------------------------------------------------------------------


def generated(what: str, argument: str | None, page: str) -> str:
    makers = {"keywords": keywords, "agents": agents, "cli": cli_options, "public-names": public_names}
    if what not in makers:
        raise PluginError(f"{page}: unknown marker '<!-- site: {what} -->' (known: {', '.join(makers)}).")
    try:
        return makers[what](argument)
    except (KeyError, ValueError) as error:
        raise PluginError(f"{page}: the marker '<!-- site: {what} {argument} -->' names nothing: {error}") from None


def keywords(name: str | None) -> str:
    """An agent's keyword table (keyword, default, accepts, sweep, meaning), or the shared keywords'."""
    from ajax.agents.keyword_tables import keyword_table
    from ajax.agents.registry import AGENTS

    if name != "shared" and name not in AGENTS:
        raise KeyError(f"no agent {name!r}")
    return keyword_table(name) + "\n"


def agents(_: str | None) -> str:
    """Each registered agent's entry: its docstring (mkdocstrings) and its own keywords' table."""
    from ajax.agents.registry import AGENTS

    sections = []
    for name in AGENTS:
        guide = REPOSITORY / "docs" / "agents" / f"{agent_page(name)}.md"
        agent = AGENTS[name]
        sections += [
            f"::: {agent.__module__}.{agent.__qualname__}",
            "    options:",
            "      members: false",
            "      show_signature: false",
            "      separate_signature: false",
            "",
            (
                f"The [{name} page](../agents/{guide.name}) has its paper, its choices and its results. "
                if guide.exists()
                else ""
            )
            + f"Its keywords, besides the [shared ones](#shared-keywords) (`{name}.hyperparameters`):",
            "",
            keywords(name),
        ]
    return "\n".join(sections)


def agent_page(name: str) -> str:
    """The file name of an agent's guide page under docs/agents/: `sac` for SAC, `tdmpc2_multitask`."""
    return name.lower().replace("multitask", "_multitask")


def cli_options(command: str | None) -> str:
    """`ajax COMMAND`'s usage and a table of its arguments and options (`ajax` alone: its subcommands)."""
    from ajax.cli import build_parser

    parser = build_parser()
    subcommands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    if command == "ajax":
        rows = [(f"`{name}`", subparser.description or "") for name, subparser in subcommands.choices.items()]
        return usage_and_table(parser, ("subcommand", "what it does"), rows)
    if command not in subcommands.choices:
        raise KeyError(f"ajax has no subcommand {command!r}")
    subparser = subcommands.choices[command]
    rows = []
    for action in subparser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        if action.option_strings:
            name = ", ".join(f"`{option}`" for option in action.option_strings)
            value = "" if action.nargs == 0 else f"`{argument_shape(action)}`"
        else:
            name, value = f"`{action.metavar or action.dest}`", "positional" + (", optional" * (action.nargs == "?"))
        rows.append((name, value, action.help or ""))
    return usage_and_table(subparser, ("option", "value", "meaning"), rows)


def argument_shape(action: argparse.Action) -> str:
    if action.choices:
        return "{" + ",".join(map(str, action.choices)) + "}"
    return str(action.metavar or action.dest.upper())


def usage_and_table(parser: argparse.ArgumentParser, header: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    """The usage block (wrapped at 80 columns, whatever the terminal), the description, then the table;
    the last column is the help's plain text, the others are already Markdown."""
    formatter = parser.formatter_class(prog=parser.prog, width=80)
    formatter.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups)
    lines = ["```text", formatter.format_help().strip(), "```", ""]
    if parser.description:
        lines += [markdown_text(parser.description), ""]
    lines += ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join([*row[:-1], markdown_text(row[-1])]) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def markdown_text(text: str) -> str:
    """Plain help text as Markdown: `<` and `>` kept as characters outside code, `|` escaped for a table."""
    parts = re.split(r"(`[^`]*`)", " ".join(text.split()))
    return "".join(part if part.startswith("`") else html.escape(part, quote=False) for part in parts).replace(
        "|", "\\|"
    )


def public_names(_: str | None) -> str:
    """The names `from ajax import *` gives, each with its summary line, linked to its entry in the reference."""
    import inspect

    import ajax

    rows = ["| name | what it is |", "| --- | --- |"]
    for name in ajax.__all__:
        value = getattr(ajax, name)
        summary = (inspect.getdoc(value) or "").split("\n\n")[0]
        # The entry's anchor is where the name is defined (`ajax.SAC` is also a package's name).
        rows.append(f"| [`{name}`][{value.__module__}.{value.__qualname__}] | {markdown_text(summary)} |")
    return "\n".join(rows) + "\n"
