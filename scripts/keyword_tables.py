"""Rewrite docs/agents.md's keyword tables from the agents' declarations (`--check`: only say whether they agree)."""

from __future__ import annotations

import sys
from pathlib import Path

from ajax.agents.keyword_tables import with_tables

PAGE = Path(__file__).resolve().parents[1] / "docs" / "agents.md"

if __name__ == "__main__":
    page = PAGE.read_text()
    fresh = with_tables(page)
    if "--check" in sys.argv[1:]:
        sys.exit(0 if fresh == page else "docs/agents.md's keyword tables differ from the declarations.")
    PAGE.write_text(fresh)
