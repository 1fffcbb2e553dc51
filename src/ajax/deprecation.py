"""Keywords on their way out: accepted while callers move on, and said so.

A public keyword is removed in two steps: the new form is added and callers move to it,
then the old one goes. Meanwhile a keyword that no longer does anything stays accepted,
and `warn_inert` tells whoever still passes it, pointing at their line.
"""

from __future__ import annotations

import warnings
from typing import Any


def warn_inert(reason: str, /, **keywords: Any) -> None:
    """A FutureWarning for each keyword set to something other than None.

    Called from the constructor that accepts the keywords, so the warning points at the
    line that called that constructor. `reason` says what to do instead.
    """
    for name, value in keywords.items():
        if value is not None:
            warnings.warn(
                f"{name}={value!r} no longer does anything and will be removed: {reason}",
                FutureWarning,
                stacklevel=3,
            )
