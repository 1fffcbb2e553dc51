"""What Ajax reads of an env's observation space, checked when the env is prepared.

An observation is one array or a dict of arrays, one level of keys deep, and a discrete env's
dict may carry an `ACTION_MASK`: one flag per action, which the agents apply. Anything else
would fail later, inside tracing, with a message about the wrong thing (a nested dict's
"'Dict' object has no attribute 'shape'", a mask of the wrong length's broadcasting error),
or not at all: a mask under another key is read as an ordinary observation and never applied.
So a nested dict and a mask Ajax cannot apply are refused here, naming the key and the sizes,
and a key that looks like a mask but is not the one Ajax applies is warned of.
"""

from __future__ import annotations

import re
import warnings
from typing import Any

import jax.numpy as jnp
import numpy as np
from gymnax.environments import spaces

from ajax.state import ACTION_MASK

# Other names envs give their action masks under: "mask", "action_masks", "legal_actions" (OpenSpiel's),
# "avail_actions" (SMAC's), "valid_actions", in any case. A key so named is a mask only if it also holds
# one flag per action.
MASK_LIKE = re.compile(r"mask|(legal|valid|avail|available|allowed|possible)[_\-. ]?actions?", re.IGNORECASE)


def check_observation_space(env: Any, params: Any, action_space: Any) -> None:
    """Refuse an observation Ajax cannot read (a dict inside a dict, a space with no shape) and, on a
    discrete env, an `ACTION_MASK` that is not one flag per action; warn of a key that looks like a mask
    under another name."""
    space = env.observation_space(params)
    name = getattr(env, "name", type(env).__name__)
    check_observation_structure(space, name)
    if not isinstance(space, spaces.Dict) or not isinstance(action_space, spaces.Discrete):
        return  # a mask on continuous actions is refused by the agent, naming the actions
    n_actions = int(action_space.n)
    if ACTION_MASK in space.spaces:
        _check_mask(space.spaces[ACTION_MASK], n_actions, name)
    for key, part in space.spaces.items():
        if key != ACTION_MASK and MASK_LIKE.search(key) and _flags(part) and part.shape[-1:] == (n_actions,):
            warnings.warn(
                f"observation key {key!r} looks like an action mask but Ajax applies only {ACTION_MASK!r}: rename it "
                "(or wrap the env) to have it applied; it is read as an ordinary observation.",
                UserWarning,
                stacklevel=2,
            )


def check_observation_structure(space: Any, name: str) -> None:
    """Refuse an observation space that is not an array or a dict of arrays one level deep, naming the
    nested keys: the shapes of every other space are read from it."""
    if not isinstance(space, spaces.Dict):
        _require_array(space, name, "observation space")
        return
    for key, part in space.spaces.items():
        if isinstance(part, spaces.Dict):
            paths = [f"{key}.{inner}" for inner in _leaf_paths(part)]
            raise ValueError(
                f"{name}'s observation nests a dict under key {key!r} (arrays at {', '.join(paths)}): Ajax reads one "
                "level of keys, each holding an array. Flatten the observation, e.g. with a wrapper whose "
                f"observation_space, reset and step give {{{', '.join(f'{path!r}: ...' for path in paths)}}} (Ajax "
                "flattens Jumanji's so), or join the inner arrays into one."
            )
        _require_array(part, name, f"observation key {key!r}")


def _require_array(space: Any, name: str, what: str) -> None:
    """Refuse a space that declares no array shape (a Tuple), naming where it is."""
    if not hasattr(space, "shape"):
        raise ValueError(
            f"{name}'s {what} is a {type(space).__name__}: Ajax reads an array, or a dict of arrays one level deep. "
            "Give the observation as arrays under dict keys."
        )


def _leaf_paths(space: spaces.Dict) -> list[str]:
    """The dotted paths of a nested Dict space's arrays."""
    paths = []
    for key, part in space.spaces.items():
        if isinstance(part, spaces.Dict):
            paths.extend(f"{key}.{inner}" for inner in _leaf_paths(part))
        else:
            paths.append(str(key))
    return paths


def _flags(space: Any) -> bool:
    """Whether `space` declares flags: booleans, or numbers bounded by 0 and 1."""
    if jnp.dtype(space.dtype) == jnp.dtype(jnp.bool_):
        return True
    if not isinstance(space, spaces.Box):
        return False
    return bool(np.all(np.asarray(space.low) >= 0) and np.all(np.asarray(space.high) <= 1))


def _check_mask(space: Any, n_actions: int, name: str) -> None:
    """Refuse a declared action mask that is not one flag per action. A custom env's observations are
    checked against its declared space when it is prepared, so the space is what the mask is."""
    declared = tuple(space.shape)
    if declared != (n_actions,):
        raise ValueError(
            f"{name}'s {ACTION_MASK!r} has shape {declared}, but its action space has {n_actions} discrete actions: "
            f"a mask holds one flag per action, shape ({n_actions},). Fix the env's mask and its observation_space."
        )
    if not _flags(space):
        raise ValueError(
            f"{name}'s {ACTION_MASK!r} is declared {jnp.dtype(space.dtype)} in [{np.min(space.low)}, "
            f"{np.max(space.high)}]: a mask is booleans, or numbers in [0, 1] (nonzero allows an action). Declare "
            f"it spaces.Box(0, 1, ({n_actions},), jnp.bool_) and give booleans."
        )
