"""Memory: a sequence, its steps and its pieces agree, and nothing crosses a reset either way.

One sequence of T = 10 steps for three environments: env 0 resets at steps 4 and 7, inside a
piece; env 1 at step 3, where the second piece starts; env 2 never. Each kind's model is built
once, with two layers, and its applies are jitted, so that every test of a kind reuses the
same compiled programs.
"""

import dataclasses
import functools
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ajax.networks.memory import (
    KINDS,
    AttentionCache,
    MambaState,
    Memory,
    MemoryConfig,
    carry_size,
    initial_carry,
    ssm_combine,
)

T, B, D, HIDDEN = 10, 3, 5, 8
PIECES = (3, 5, 2)
CONFIGS = {
    "gru": MemoryConfig("gru", HIDDEN, num_layers=2),
    "lstm": MemoryConfig("lstm", HIDDEN, num_layers=2),
    "transformer": MemoryConfig("transformer", HIDDEN, num_layers=2, window=4, num_heads=2),
    "mamba": MemoryConfig("mamba", HIDDEN, num_layers=2, d_state=4, d_conv=3),
}
INPUTS = np.random.default_rng(0).normal(size=(T, B, D)).astype(np.float32)
RESETS = np.zeros((T, B), bool)
RESETS[[4, 7], 0] = RESETS[3, 1] = True
FIRST_RESET = np.array([4, 3, T])  # env 2 never resets
BEFORE = np.arange(T)[:, None] < FIRST_RESET  # (T, B): the steps of each env's first episode
NO_RESETS = np.zeros((T, B), bool)


def assert_trees_close(actual, expected, rtol=1e-5, atol=1e-6):
    jax.tree.map(lambda a, e: np.testing.assert_allclose(a, e, rtol=rtol, atol=atol), actual, expected)


def built(config: MemoryConfig, params=None) -> SimpleNamespace:
    """A model's parameters (new ones unless given) and its jitted programs."""
    model = Memory(config)
    if params is None:
        params = jax.jit(model.init)(jax.random.PRNGKey(0), initial_carry(config, B), INPUTS, RESETS)

    def outputs_and_grads(params, carry, inputs, resets, weights):
        """The outputs, and the gradient of sum(outputs * weights) w.r.t. the parameters and the inputs."""
        outputs, pullback = jax.vjp(lambda p, x: model.apply(p, carry, x, resets)[1], params, inputs)
        return outputs, pullback(weights)

    return SimpleNamespace(config=config, params=params, apply=jax.jit(model.apply), grads=jax.jit(outputs_and_grads))


@functools.cache
def shared(kind: str) -> SimpleNamespace:
    """The two-layer model of `kind` every test shares, with a carry from an earlier call to start from."""
    net = built(CONFIGS[kind])
    net.warm_carry, _ = net.apply(net.params, initial_carry(net.config, B), INPUTS[::-1], NO_RESETS)
    return net


@pytest.fixture(params=KINDS)
def memory(request) -> SimpleNamespace:
    return shared(request.param)


def test_steps_equal_the_sequence(memory):
    carry, outputs = memory.apply(memory.params, memory.warm_carry, INPUTS, RESETS)
    assert outputs.shape == (T, B, HIDDEN)
    step_carry, steps = memory.warm_carry, []
    for t in range(T):
        step_carry, output = memory.apply(memory.params, step_carry, INPUTS[t][None], RESETS[t][None])
        steps.append(output[0])
    np.testing.assert_allclose(np.stack(steps), outputs, rtol=1e-5, atol=1e-6)
    assert_trees_close(step_carry, carry)


def test_pieces_equal_the_sequence(memory):
    carry, outputs = memory.apply(memory.params, memory.warm_carry, INPUTS, RESETS)
    piece_carry, pieces, start = memory.warm_carry, [], 0
    for length in PIECES:
        piece = slice(start, start + length)
        piece_carry, output = memory.apply(memory.params, piece_carry, INPUTS[piece], RESETS[piece])
        pieces.append(output)
        start += length
    np.testing.assert_allclose(np.concatenate(pieces), outputs, rtol=1e-5, atol=1e-6)
    assert_trees_close(piece_carry, carry)


def test_inputs_before_a_reset_do_not_reach_outputs_after_it(memory):
    _, outputs = memory.apply(memory.params, memory.warm_carry, INPUTS, RESETS)
    changed = np.where(BEFORE[..., None], INPUTS + 1.0, INPUTS)
    _, changed_outputs = memory.apply(memory.params, memory.warm_carry, changed, RESETS)
    np.testing.assert_array_equal(np.asarray(changed_outputs)[~BEFORE], np.asarray(outputs)[~BEFORE])
    assert not np.allclose(np.asarray(changed_outputs)[BEFORE], np.asarray(outputs)[BEFORE])  # the change tells


def test_no_gradient_crosses_a_reset(memory):
    # Weights that differ across features: the transformer's and Mamba's outputs end in a
    # LayerNorm, whose features sum to a constant, so equal weights would see no gradient at all.
    features = np.random.default_rng(1).normal(size=HIDDEN).astype(np.float32)
    weights = BEFORE[..., None] * features
    _, (_, before_grads) = memory.grads(memory.params, memory.warm_carry, INPUTS, RESETS, weights)
    _, (_, after_grads) = memory.grads(memory.params, memory.warm_carry, INPUTS, RESETS, ~BEFORE[..., None] * features)
    np.testing.assert_array_equal(np.asarray(before_grads)[~BEFORE], 0.0)
    np.testing.assert_array_equal(np.asarray(after_grads)[BEFORE], 0.0)
    assert np.all(np.any(np.asarray(after_grads)[~BEFORE] != 0.0, axis=-1))  # each later step has some


def test_a_reset_at_the_first_step_makes_the_carry_irrelevant(memory):
    resets = RESETS.copy()
    resets[0] = True
    rng = np.random.default_rng(1)
    noise = jax.tree.map(lambda leaf: rng.normal(size=leaf.shape).astype(np.float32), memory.warm_carry)
    zero_carry, zero_outputs = memory.apply(memory.params, initial_carry(memory.config, B), INPUTS, resets)
    noise_carry, noise_outputs = memory.apply(memory.params, noise, INPUTS, resets)
    np.testing.assert_allclose(noise_outputs, zero_outputs, rtol=1e-6, atol=1e-7)
    assert_trees_close(noise_carry, zero_carry, rtol=1e-6, atol=1e-7)


def test_gradient_checkpointing_changes_no_value(memory):
    """The same parameters serve both: remat changes what the backward pass stores, not the model."""
    checkpointed = built(dataclasses.replace(memory.config, gradient_checkpoint=True), memory.params)
    weights = np.linspace(-1.0, 1.0, T * B * HIDDEN, dtype=np.float32).reshape(T, B, HIDDEN)
    args = (memory.params, memory.warm_carry, INPUTS, RESETS, weights)
    # Remat recomputes the forward pass inside the backward one, fused apart: float32 rounding may
    # move a gradient's last bits (Mamba's selective scan, on this machine: 1.2e-6 on an element of 3e-3
    # among gradients up to 0.4).
    assert_trees_close(checkpointed.grads(*args), memory.grads(*args), rtol=1e-5, atol=2e-6)


def reached_by_the_first_input(net: SimpleNamespace) -> np.ndarray:
    """(T,): which steps' outputs change when the first step's input changes (no resets)."""
    carry = initial_carry(net.config, B)
    changed = INPUTS.copy()
    changed[0] += 1.0
    _, outputs = net.apply(net.params, carry, INPUTS, NO_RESETS)
    _, changed_outputs = net.apply(net.params, carry, changed, NO_RESETS)
    return np.any(np.asarray(outputs) != np.asarray(changed_outputs), axis=(1, 2))


def test_transformer_layer_sees_only_its_window():
    window = 3
    net = built(MemoryConfig("transformer", HIDDEN, window=window, num_heads=2))
    np.testing.assert_array_equal(reached_by_the_first_input(net), np.arange(T) < window)


def test_stacked_transformer_layers_widen_what_each_step_sees():
    """Each layer looks window - 1 steps back from what the layer below saw: 2 layers, 2 (window - 1)."""
    memory = shared("transformer")
    np.testing.assert_array_equal(reached_by_the_first_input(memory), np.arange(T) <= 2 * (memory.config.window - 1))


def test_ssm_combine_is_associative_and_scans_the_recurrence():
    rng = np.random.default_rng(0)
    a, b = rng.uniform(size=(7, 3, 4)).astype(np.float32), rng.normal(size=(7, 3, 4)).astype(np.float32)
    x, y, z = ((a[i], b[i]) for i in range(3))
    assert_trees_close(ssm_combine(ssm_combine(x, y), z), ssm_combine(x, ssm_combine(y, z)))
    h, expected = np.zeros((3, 4), np.float32), []
    for t in range(7):
        h = a[t] * h + b[t]
        expected.append(h)
    _, scanned = jax.jit(lambda a, b: jax.lax.associative_scan(ssm_combine, (a, b)))(a, b)
    np.testing.assert_allclose(scanned, np.stack(expected), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind", KINDS)
def test_initial_carry_shapes_and_size(kind):
    config = MemoryConfig(kind, 8, num_layers=3, window=5, num_heads=2, d_state=6, d_conv=4, expand=2)
    carry = initial_carry(config, 2)
    assert len(carry) == 3
    assert all(leaf.dtype == jnp.float32 and not np.any(leaf) for leaf in jax.tree.leaves(carry))
    shapes = jax.tree.map(jnp.shape, carry[0])
    expected = {
        "gru": ((2, 8), 8),
        "lstm": (((2, 8), (2, 8)), 16),
        "transformer": (AttentionCache((2, 4, 2, 4), (2, 4, 2, 4), (2, 4)), 2 * 4 * 8 + 4),
        "mamba": (MambaState((2, 16, 6), (2, 3, 16)), 16 * 6 + 3 * 16),
    }[kind]
    assert shapes == expected[0]
    assert carry_size(config) == 3 * expected[1]


def test_inputs_without_a_time_axis_or_a_foreign_carry_are_refused():
    config, key = CONFIGS["gru"], jax.random.PRNGKey(0)
    with pytest.raises(ValueError, match=r"x\[None\]"):
        Memory(config).init(key, initial_carry(config, B), INPUTS[0], RESETS[0])
    with pytest.raises(ValueError, match="initial_carry"):
        Memory(config).init(key, initial_carry(config, B + 1), INPUTS, RESETS)
    with pytest.raises(ValueError, match="initial_carry"):
        Memory(config).init(key, initial_carry(config, B)[:1], INPUTS, RESETS)


def test_unknown_kind_suggests_the_close_one():
    with pytest.raises(ValueError, match=r"'gur'.*Did you mean 'gru'\?.*gru, lstm, transformer, mamba"):
        MemoryConfig("gur", 8)


@pytest.mark.parametrize("field", ["hidden_size", "num_layers", "window", "num_heads", "d_state", "d_conv", "expand"])
@pytest.mark.parametrize("value", [0, -2, 2.0, True])
def test_sizes_must_be_positive_integers(field, value):
    with pytest.raises(ValueError, match=f"{field} must be a positive integer"):
        MemoryConfig("mamba", **{"hidden_size": 8, field: value})


def test_transformer_width_must_split_across_heads():
    with pytest.raises(ValueError, match=r"hidden_size 10 is not a multiple of num_heads 4.*\[1, 2, 5, 10\]"):
        MemoryConfig("transformer", 10, num_heads=4)
    assert MemoryConfig("gru", 10, num_heads=4).hidden_size == 10  # heads matter to the transformer only


def test_gradient_checkpoint_must_be_a_bool():
    with pytest.raises(ValueError, match="gradient_checkpoint must be True or False"):
        MemoryConfig("gru", 8, gradient_checkpoint="yes")


def test_of_accepts_none_a_config_and_a_dict():
    config = MemoryConfig("lstm", 16, num_layers=2)
    assert MemoryConfig.of(None) is None
    assert MemoryConfig.of(config) is config
    assert MemoryConfig.of({"kind": "lstm", "hidden_size": 16, "num_layers": 2}) == config


def test_of_refuses_unknown_keys_and_other_types():
    with pytest.raises(TypeError, match=r"no field 'windw'.*Did you mean 'window'\?.*kind, hidden_size, num_layers"):
        MemoryConfig.of({"kind": "transformer", "hidden_size": 16, "windw": 8})
    with pytest.raises(TypeError, match="needs kind"):
        MemoryConfig.of({"hidden_size": 16})
    with pytest.raises(TypeError, match="None, a MemoryConfig or a dict"):
        MemoryConfig.of("gru")
    with pytest.raises(ValueError, match="Did you mean 'lstm'"):
        MemoryConfig.of({"kind": "LSTM", "hidden_size": 16})
