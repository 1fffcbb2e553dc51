"""docs/results.md and its figures are what benchmarks/results_page.py writes from the recorded rows.

A new row in benchmarks/learning_checks.jsonl reaches the page only through the script: the
page's rows, each agent's section and every figure are compared with what it writes now.
"""

from __future__ import annotations

import subprocess
import sys

from tests.benchmark_scripts import BENCHMARKS, load_benchmark

from ajax.agents.registry import AGENTS

results = load_benchmark("results_page")
FIX = "python benchmarks/results_page.py"


def test_the_page_is_what_the_rows_give() -> None:
    page = results.PAGE.read_text()
    assert results.with_rows(page, results.read_rows()) == page, f"docs/results.md differs from its rows: {FIX}"


def test_every_figure_is_what_the_rows_draw_and_small() -> None:
    drawn = results.figures(results.read_rows())
    stale, extra = results.stale_figures(drawn)
    assert not stale and not extra, f"figures to redraw {stale}, figures of no agent {extra}: {FIX}"
    for name, data in drawn.items():
        assert len(data) <= results.MAX_FIGURE_BYTES, f"{name} is {len(data):,} bytes"


def test_every_agent_has_a_section_and_a_page() -> None:
    assert set(results.PAGES) == set(AGENTS)
    page = results.PAGE.read_text()
    for agent, name in results.PAGES.items():
        assert f"\n### {agent}\n" in page
        assert (results.ROOT / "docs" / "agents" / f"{name}.md").is_file()
    assert {row["agent"] for row in results.read_rows()} <= set(AGENTS)


def test_each_agent_page_links_its_rows_and_shows_its_figure() -> None:
    drawn = results.figures(results.read_rows())
    for agent, name in results.PAGES.items():
        text = (results.ROOT / "docs" / "agents" / f"{name}.md").read_text()
        assert f"../results.md#{agent.lower()}" in text, f"{name}.md does not link its rows"
        if f"{name}.png" in drawn:
            assert f"](../img/learning/{name}.png)" in text, f"{name}.md does not show its curves"


def test_a_row_names_its_machine_and_one_without_ran_on_the_cpu() -> None:
    rows = results.latest(results.read_rows())
    tpu = next(row for row in rows if row.get("machine"))
    cpu = next(row for row in rows if "machine" not in row)
    for row, machine in ((tpu, tpu.get("machine")), (cpu, results.CPU)):
        line = results.markdown_table([row]).splitlines()[2]
        assert line.endswith(f"| {machine} |"), line


def test_the_script_imports_no_jax() -> None:
    code = f"import sys; sys.path.insert(0, {str(BENCHMARKS)!r}); import results_page; print('jax' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
