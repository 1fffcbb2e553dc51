"""Observation and mask shapes are checked when an agent is built: a nested dict and a mask that is
not one flag per action are refused naming the key and the sizes, and a key that looks like a mask
under another name than "action_mask" is warned of, since Ajax would read it as an observation."""

import warnings

import jax.numpy as jnp
import pytest
from gymnax.environments import spaces

from ajax import DQN, PPO
from tests.probe_envs import MaskedBestAction


class Observing(MaskedBestAction):
    """MaskedBestAction (three actions) observing `space`, with zeros of its shapes."""

    def __init__(self, space: spaces.Dict):
        super().__init__()
        self.space = space

    def observe(self):
        def zeros(part):
            if isinstance(part, spaces.Dict):
                return {key: zeros(inner) for key, inner in part.spaces.items()}
            return jnp.zeros(part.shape, part.dtype)

        return zeros(self.space)

    def observation_space(self, params):
        return self.space


X = spaces.Box(-1.0, 1.0, (1,))
FLAGS = spaces.Box(0, 1, (3,), jnp.bool_)


def test_a_dict_inside_a_dict_is_refused_naming_the_key_path():
    nested = spaces.Dict({"x": X, "agent": spaces.Dict({"pos": spaces.Box(-1.0, 1.0, (2,)), "vel": X})})
    with pytest.raises(ValueError, match=r"under key 'agent' \(arrays at agent\.pos, agent\.vel\).*one level of keys"):
        DQN(Observing(nested))


def test_a_mask_of_the_wrong_length_is_refused_naming_both_sizes():
    short = spaces.Dict({"x": X, "action_mask": spaces.Box(0, 1, (2,), jnp.bool_)})
    with pytest.raises(ValueError, match=r"'action_mask' has shape \(2,\), but its action space has 3 discrete"):
        PPO(Observing(short))


def test_a_mask_that_is_not_flags_is_refused_and_one_of_zeros_and_ones_is_taken():
    signed = spaces.Dict({"x": X, "action_mask": spaces.Box(-1.0, 1.0, (3,))})
    with pytest.raises(ValueError, match=r"'action_mask' is declared float32 in \[-1.0, 1.0\]: a mask is booleans"):
        DQN(Observing(signed))
    assert DQN(Observing(spaces.Dict({"x": X, "action_mask": spaces.Box(0, 1, (3,), jnp.int8)}))).env_args.action_masked


@pytest.mark.parametrize("key", ["legal_actions", "mask", "Action_Masks", "valid_actions", "avail_actions"])
def test_a_key_that_looks_like_a_mask_is_warned_of(key):
    with pytest.warns(UserWarning) as caught:
        agent = DQN(Observing(spaces.Dict({"x": X, key: FLAGS})))
    message = (
        f"observation key {key!r} looks like an action mask but Ajax applies only 'action_mask': rename it (or wrap "
        "the env) to have it applied; it is read as an ordinary observation."
    )
    assert [str(warning.message) for warning in caught] == [message]
    assert not agent.env_args.action_masked


def test_a_key_so_named_but_not_one_flag_per_action_and_a_real_mask_say_nothing():
    counts = spaces.Box(0, 10, (3,), jnp.int32)  # not flags
    wide = spaces.Box(0, 1, (4,), jnp.bool_)  # not one per action
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        DQN(Observing(spaces.Dict({"x": X, "legal_actions": counts, "valid_actions": wide})))
        DQN(MaskedBestAction())
