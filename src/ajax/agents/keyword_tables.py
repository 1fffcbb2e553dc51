"""The agents pages' keyword tables, written from the agents' declarations.

The pages under docs/agents/ mark each table `<!-- keywords: NAME -->` ... `<!-- /keywords -->`,
NAME an agent (on its own page) or `shared` (the keywords every agent declares alike, tabled once
on index.md). A test holds the pages to the declarations; `python scripts/keyword_tables.py`
rewrites the tables after a change.
"""

from __future__ import annotations

import re

from ajax.agents.base import SHARED_KEYWORDS
from ajax.agents.registry import AGENTS

TABLE = re.compile(r"(<!-- keywords: (\w+) -->\n).*?(<!-- /keywords -->)", re.S)


def keyword_table(name: str) -> str:
    """The table for agent `name` (its keywords declared otherwise than the shared ones), or for `shared`."""
    if name == "shared":
        return SHARED_KEYWORDS.table()
    return AGENTS[name].hyperparameters.table(SHARED_KEYWORDS)


def with_tables(page: str) -> str:
    """`page` with every marked table rewritten from the declarations."""
    return TABLE.sub(lambda match: f"{match[1]}{keyword_table(match[2])}\n{match[3]}", page)


def tabled(page: str) -> set[str]:
    """The names whose tables `page` marks."""
    return {match[2] for match in TABLE.finditer(page)}
