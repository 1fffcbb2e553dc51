"""Rewrite the agents pages' keyword tables from the agents' declarations (`--check`: only say whether they agree).

The tables live in docs/agents/: the shared keywords on index.md, each agent's on its own page.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ajax.agents.keyword_tables import with_tables

PAGES = sorted((Path(__file__).resolve().parents[1] / "docs" / "agents").glob("*.md"))

if __name__ == "__main__":
    stale = [page for page in PAGES if with_tables(page.read_text()) != page.read_text()]
    if "--check" in sys.argv[1:]:
        sys.exit(f"keyword tables differ from the declarations in {[page.name for page in stale]}" if stale else 0)
    for page in stale:
        page.write_text(with_tables(page.read_text()))
