"""benchmarks/studies/: each study still finds, from its folder, the modules and files it reads,
and every benchmark file the pages name is where they say.

The studies are run by hand (minutes to hours each); here each is only imported, which runs
its imports of the shared modules one folder up and computes the paths it writes to.
"""

from __future__ import annotations

import re

import pytest
from tests.benchmark_scripts import BENCHMARKS, STUDIES, load_benchmark

ROOT = BENCHMARKS.parent
NAMES = sorted(path.stem for path in STUDIES.glob("*.py"))

# A path under benchmarks/ as the pages and docstrings write it: from the checkout's root, or
# relative to the page (`../benchmarks/...`, a link); not tests/benchmarks/... nor /tmp/.../benchmarks.
NAMED = re.compile(r"(?<![\w/.-])((?:\.\./)*benchmarks/[\w/]+\.(?:py|jsonl|md))\b")
PAGES = [
    ROOT / "README.md",
    ROOT / "CONTRIBUTING.md",
    ROOT / "PERFORMANCE_REPORT.md",
    *sorted((ROOT / "docs").rglob("*.md")),
    *sorted(BENCHMARKS.rglob("*.py")),
    *sorted(BENCHMARKS.rglob("*.md")),
]


@pytest.mark.parametrize("name", NAMES)
def test_a_study_imports_from_its_folder_and_writes_where_its_rows_are(name):
    study = load_benchmark(f"studies/{name}")
    if hasattr(study, "ROOT"):
        assert study.ROOT == ROOT
    if hasattr(study, "OUT"):
        assert study.OUT.exists(), f"{name} appends to {study.OUT}, which is not there"


def test_each_study_s_rows_sit_beside_it():
    for rows in STUDIES.glob("*.jsonl"):
        assert rows.with_suffix(".py").exists(), f"{rows.name} has no study beside it"


def test_every_benchmark_file_a_page_names_exists():
    missing = [
        f"{page.relative_to(ROOT)}: {named}"
        for page in PAGES
        for named in sorted(set(NAMED.findall(page.read_text())))
        if not ((page.parent if named.startswith("../") else ROOT) / named).exists()
    ]
    assert not missing, "\n".join(missing)


def test_the_benchmarks_readme_lists_every_script():
    readme = (BENCHMARKS / "README.md").read_text()
    scripts = sorted(path.relative_to(BENCHMARKS) for path in BENCHMARKS.rglob("*.py"))
    unlisted = [str(path) for path in scripts if f"]({path.as_posix()})" not in readme]
    assert not unlisted, f"benchmarks/README.md does not link {unlisted}"


def heading_anchors(markdown: str) -> set[str]:
    """The anchors GitHub gives a page's headings: lower case, punctuation dropped, spaces to
    hyphens, a repeated one numbered from -1."""
    anchors: set[str] = set()
    for heading in re.findall(r"^#+ (.+)$", markdown, flags=re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        anchor, n = slug, 0
        while anchor in anchors:
            n += 1
            anchor = f"{slug}-{n}"
        anchors.add(anchor)
    return anchors


def test_the_benchmarks_readme_links_land_on_a_file_and_a_heading():
    readme = BENCHMARKS / "README.md"
    report = heading_anchors((ROOT / "PERFORMANCE_REPORT.md").read_text())
    for target in re.findall(r"\]\(([^)\s]+)\)", readme.read_text()):
        path, _, anchor = target.partition("#")
        assert (BENCHMARKS / path).resolve().exists(), target
        if anchor:
            assert path == "../PERFORMANCE_REPORT.md" and anchor in report, target
