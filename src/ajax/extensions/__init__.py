"""Research features as extensions folded into the shared loop.

An `Extension` is a frozen, hashable dataclass that implements some of the phases below;
an `ExtensionStack` folds every extension of a phase, in the order given, at the one place
the loop or the agent calls `fold_<phase>`. On an empty stack each fold returns its input
(a loss term is 0.0) without building anything, so an agent without extensions traces
nothing extra and never guards a fold.
"""

from ajax.extensions.base import (
    LOOP_PHASES,
    PHASES,
    Extension,
    ExtensionContext,
    ExtensionStack,
)

__all__ = ["LOOP_PHASES", "PHASES", "Extension", "ExtensionContext", "ExtensionStack"]
