"""Keywords on their way out: accepted while callers move on, and said so.

A public keyword is removed in two steps: the new form is added and callers move to it,
then the old one goes. Meanwhile a keyword that no longer does anything stays accepted,
and `warn_inert` tells whoever still passes it, pointing at their line. A keyword known
under another name (`renamed_keywords`) is refused with the name to use, where Python's
own TypeError would only say that the keyword is unexpected.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

Class = TypeVar("Class", bound=type)


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


def renamed_keywords(**renames: str) -> Callable[[Class], Class]:
    """A class decorator: passing one of `renames`' old names (`old="new"`) raises a TypeError naming the new one.

    The class's signature is unchanged (`inspect.signature` follows the wrapper to it), so
    the old name is no argument of the class, only a mistake it explains.
    """

    def decorate(cls: Class) -> Class:
        init = cls.__init__

        @functools.wraps(init)
        def checked_init(self: Any, *args: Any, **kwargs: Any) -> None:
            for old, new in renames.items():
                if old in kwargs:
                    raise TypeError(f"{cls.__name__} has no {old}=; it is called {new}: pass {new}={kwargs[old]!r}.")
            init(self, *args, **kwargs)

        cls.__init__ = checked_init
        return cls

    return decorate
