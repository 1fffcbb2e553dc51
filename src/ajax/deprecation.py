"""Keywords on their way out: accepted while callers move on, and said so.

A public keyword is removed in two steps: the new form is added and callers move to it,
then the old one goes. Meanwhile a keyword that no longer does anything stays accepted,
and `warn_inert` tells whoever still passes it, pointing at their line.
"""

from __future__ import annotations

import warnings
from typing import Any


def warn_inert(owner: str, reason: str, depth: int = 1, /, **keywords: Any) -> None:
    """A FutureWarning for each of `owner`'s keywords set to something other than None.

    Called from the constructor that accepts the keywords, so the warning points at the
    line that called that constructor; `depth` counts the frames between them (2 from a
    dataclass's `__post_init__`). `reason` says what to do instead.
    """
    for name, value in keywords.items():
        if value is not None:
            warnings.warn(
                f"{owner}'s {name} has no effect and will be removed: {reason}",
                FutureWarning,
                stacklevel=2 + depth,
            )
