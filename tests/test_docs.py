"""Every code block in README.md and docs/ runs, so no page can drift from the code.

A page's python blocks run in order in one namespace. Markers on a block's first line:
`# doc: skip (why)` never runs it; `# doc: example examples/<file>.py` never runs it either,
but the block must be that example's code, which tests/test_examples.py runs;
`# doc: slow (why)` runs it as written under `-m slow` and, in the default suite, with every
literal `n_timesteps=` budget cut to
`CUT_BUDGET` (its output is then not compared); `# doc: heavy (why)`, for a block whose
program takes minutes even at a cut budget (the paper-size contextual controller), runs
it with its budgets cut under `-m slow` only, and the default suite only compiles it. An
```output block right after a python block is that block's exact stdout; a line `...` in it
matches any number of lines.
Every `ajax ...` line of a bash block must parse with the command line's own parser.
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import sys
import traceback
import types
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest

from ajax.agents.base import BudgetWarning
from ajax.cli import build_parser
from tests.conftest import cut_budgets

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
CUT_BUDGET = 1_000
FENCE = re.compile(r"^```(\w*)\s*$")


@dataclass(frozen=True)
class Block:
    page: str
    line: int  # the line of the opening fence, 1-based
    language: str
    text: str
    output: str | None = None

    @property
    def marker(self) -> str | None:
        first = self.text.lstrip().splitlines()[0] if self.text.strip() else ""
        match = re.match(r"#\s*doc:\s*(skip|slow|heavy|example)\b", first)
        return match.group(1) if match else None

    @property
    def where(self) -> str:
        return f"{self.page}, the {self.language} block at line {self.line}"


def read_blocks(path: Path, root: Path = ROOT) -> list[Block]:
    """The fenced blocks of a page, each python block paired with the output block after it."""
    page = str(path.relative_to(root))
    blocks: list[Block] = []
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        start, body = i + 1, []
        i += 1
        while i < len(lines) and lines[i].strip() != "```":
            body.append(lines[i])
            i += 1
        if i == len(lines):
            raise ValueError(f"{page}: the block opened at line {start} is never closed")
        i += 1
        language, text = opening.group(1), "\n".join(body) + "\n"
        if language == "output" and blocks and blocks[-1].language == "python" and blocks[-1].output is None:
            last = blocks[-1]
            blocks[-1] = Block(last.page, last.line, last.language, last.text, text)
        elif language == "output":
            raise ValueError(f"{page}: the output block at line {start} follows no python block")
        else:
            blocks.append(Block(page, start, language, text))
    return blocks


def output_matches(expected: str, actual: str) -> bool:
    """Line-by-line equality, where a line `...` stands for any number of lines."""
    pattern = "".join(
        r"(?:.*\n)*" if line.strip() == "..." else re.escape(line) + r"\n" for line in expected.splitlines()
    )
    return re.fullmatch(pattern, actual if actual.endswith("\n") or not actual else actual + "\n") is not None


def run_page(blocks: list[Block], full: bool) -> None:
    # A module of its own, registered, so that classes a page defines (dataclasses) find it.
    module = types.ModuleType("ajax_doc_page")
    sys.modules[module.__name__] = module
    try:
        run_blocks(blocks, full, module.__dict__)
    finally:
        del sys.modules[module.__name__]


def run_blocks(blocks: list[Block], full: bool, namespace: dict) -> None:
    for block in blocks:
        if block.language != "python" or block.marker in ("skip", "example"):
            continue
        if block.marker == "heavy" and not full:
            compile(block.text, f"{block.page}:{block.line}", "exec")
            continue
        cut = (block.marker == "slow" and not full) or block.marker == "heavy"
        source = cut_budgets(block.text, CUT_BUDGET) if cut else block.text
        stdout = io.StringIO()
        try:
            with contextlib.redirect_stdout(stdout), warnings.catch_warnings():
                if cut:  # the suite's budget, not the page's: what it warns of says nothing of the page
                    warnings.simplefilter("ignore", BudgetWarning)
                exec(compile(source, f"{block.page}:{block.line}", "exec"), namespace)
        except Exception:
            pytest.fail(f"{block.where} raised:\n{traceback.format_exc(limit=-3)}", pytrace=False)
        if block.output is not None and not cut and not output_matches(block.output, stdout.getvalue()):
            pytest.fail(f"{block.where} printed\n{stdout.getvalue()}\ninstead of\n{block.output}", pytrace=False)


def page_blocks() -> dict[str, list[Block]]:
    return {str(path.relative_to(ROOT)): read_blocks(path) for path in PAGES}


BLOCKS = page_blocks()
RUNNABLE = [page for page, blocks in BLOCKS.items() if any(b.language == "python" for b in blocks)]
SLOW = [page for page in RUNNABLE if any(b.marker in ("slow", "heavy") for b in BLOCKS[page])]


@pytest.mark.parametrize("page", RUNNABLE)
def test_page_runs(page):
    run_page(BLOCKS[page], full=False)


@pytest.mark.slow
@pytest.mark.parametrize("page", SLOW)
def test_page_runs_as_written(page):
    run_page(BLOCKS[page], full=True)


def example_code(path: Path) -> str:
    """An example file's code, without the docstring or comment lines that open it."""
    text = path.read_text()
    if text.startswith('"""'):
        text = text[text.index('"""', 3) + 3 :]
    lines = text.lstrip("\n").splitlines()
    while lines and lines[0].startswith("#"):
        lines.pop(0)
    return "\n".join(lines).strip()


EXAMPLE_BLOCKS = [block for blocks in BLOCKS.values() for block in blocks if block.marker == "example"]


@pytest.mark.parametrize("block", EXAMPLE_BLOCKS, ids=lambda block: f"{block.page}:{block.line}")
def test_example_blocks_are_their_files(block):
    marker, _, code = block.text.lstrip().partition("\n")
    path = ROOT / marker.split("example", 1)[1].strip()
    assert path.is_file(), f"{block.where} names {path}, which does not exist"
    assert code.strip() == example_code(path), f"{block.where} differs from {path.relative_to(ROOT)}"


@pytest.mark.parametrize("page", sorted(BLOCKS))
def test_every_command_line_parses(page):
    parser = build_parser()
    for block in BLOCKS[page]:
        if block.language not in ("bash", "sh", "console"):
            continue
        for offset, line in enumerate(block.text.splitlines(), start=1):
            command = line.split("#", 1)[0].strip().removeprefix("$ ")
            if not command.startswith("ajax "):
                continue
            with contextlib.redirect_stderr(io.StringIO()) as err:
                try:
                    parser.parse_args(shlex.split(command)[1:])
                except SystemExit:
                    pytest.fail(
                        f"{block.where}, line {block.line + offset}: `{command}` does not parse: {err.getvalue()}",
                        pytrace=False,
                    )


def test_a_failing_block_names_its_page_and_line(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("Intro.\n\n```python\nx = 1\n```\n\n```python\nraise RuntimeError('drifted')\n```\n")
    blocks = read_blocks(page, root=tmp_path)
    with pytest.raises(pytest.fail.Exception, match=r"page\.md, the python block at line 7 raised:(.|\n)*drifted"):
        run_page(blocks, full=True)


def test_output_blocks_are_compared_with_ellipsis_lines():
    assert output_matches("a\n...\nd\n", "a\nb\nc\nd\n")
    assert output_matches("a\n...\n", "a\n")
    assert not output_matches("a\nb\n", "a\nc\n")
    assert cut_budgets("train(n_timesteps=50_000); train(n_timesteps=10)", CUT_BUDGET) == (
        "train(n_timesteps=1000); train(n_timesteps=10)"
    )


def test_an_example_block_is_compared_without_the_files_header(tmp_path):
    example = tmp_path / "demo.py"
    example.write_text('"""What the demo shows."""\n\n# a comment\nx = 1\nprint(x)\n')
    assert example_code(example) == "x = 1\nprint(x)"
