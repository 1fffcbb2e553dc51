"""Keywords on their way out: accepted while callers move on, and said so.

A public keyword is removed in two steps: the new form is added and callers move to it,
then the old one goes. Meanwhile a keyword that no longer does anything stays accepted,
and `warn_inert` tells whoever still passes it, pointing at their line. A keyword known
under another name (`renamed_keywords`) is refused with the name to use, where Python's
own TypeError would only say that the keyword is unexpected; so is a keyword that went
(`removed_keywords`), with what to write instead, and one that design pages name but Ajax never
took (`absent_keywords`), with what to do instead.
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


# Keywords that went, and what to write instead (docs/architecture.md, "Keywords on their way out").
REMOVED_KEYWORDS = {
    "pre_train_n_steps": "extensions=(CloningPretrain(expert, n_steps=...),)",
    "actor_cloning_epochs": "CloningPretrain(expert, epochs=...)",
    "actor_cloning_batch_size": "CloningPretrain(expert, batch_size=...)",
    "actor_cloning_lr": "nothing: CloningPretrain clones at the actor's learning rate",
    "skip_actor_pretrain": "leave CloningPretrain out of extensions=: cloning the actor is all it does",
    "reset_log_std_after_bc": "nothing: the cloning fits the actor's mode and never moves a log-std parameter",
    "reset_actor_head_after_bc": "CloningPretrain(expert, reset_actor_head=True)",
    "pid_actor_config": "actor_architecture=PIDPolicy(...)",
    "use_expert_guidance": "extensions=(ExpertValueMetrics(expert),), which logs the critic's view of the expert",
}
CLONING_KEYWORDS = tuple(name for name in REMOVED_KEYWORDS if name not in ("pid_actor_config", "use_expert_guidance"))


def _refusing(messages: dict[str, Callable[[str, Any], str]]) -> Callable[[Class], Class]:
    """Wrap a class's __init__ so that a keyword in `messages` raises a TypeError with its message.

    The class's signature is unchanged (`inspect.signature` follows the wrapper to it), so
    a refused name is no argument of the class, only a mistake it explains.
    """

    def decorate(cls: Class) -> Class:
        init = cls.__init__

        @functools.wraps(init)
        def checked_init(self: Any, *args: Any, **kwargs: Any) -> None:
            for name, message in messages.items():
                if name in kwargs:
                    raise TypeError(message(cls.__name__, kwargs[name]))
            init(self, *args, **kwargs)

        cls.__init__ = checked_init
        return cls

    return decorate


def removed_keywords(*names: str) -> Callable[[Class], Class]:
    """A class decorator: passing one of `names` (keys of REMOVED_KEYWORDS) raises a TypeError
    saying what to write instead."""
    unknown = set(names) - set(REMOVED_KEYWORDS)
    if unknown:
        raise ValueError(
            f"removed_keywords: no replacement recorded for {sorted(unknown)}; add it to REMOVED_KEYWORDS."
        )
    return _refusing(
        {
            name: lambda owner, _, name=name: (
                f"{owner} no longer takes {name}=; instead: {REMOVED_KEYWORDS[name]} "
                "(docs/architecture.md, 'Keywords on their way out')."
            )
            for name in names
        }
    )


def absent_keywords(explanations: dict[str, str]) -> Callable[[Class], Class]:
    """A class decorator: passing a keyword of `explanations`, one that write-ups of the class name but
    it never took, raises a TypeError naming it with its explanation (what to do instead)."""
    return _refusing(
        {name: lambda owner, _, name=name: f"{owner} takes no {name}=: {explanations[name]}" for name in explanations}
    )


def renamed_keywords(**renames: str) -> Callable[[Class], Class]:
    """A class decorator: passing one of `renames`' old names (`old="new"`) raises a TypeError naming the new one."""
    return _refusing(
        {
            old: lambda owner, value, old=old, new=new: (
                f"{owner} has no {old}=; it is called {new}: pass {new}={value!r}."
            )
            for old, new in renames.items()
        }
    )
