"""DreamerV3's wiring: where each loss of one update sends its gradient, the initial scale of
the output layers, the block GRU's equations and the replayed value's bootstrap assembly.

Each test pins one fact of the reference (danijar/dreamerv3: `dreamerv3/agent.py`,
`dreamerv3/rssm.py`, `dreamerv3/configs.yaml`, `embodied/jax/heads.py`) that the probe runs of
test_dreamerv3.py would only notice as slower learning, if at all. Shapes are the smallest that
still have two blocks, two rows and two imagined steps, so everything compiles in seconds.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.flatten_util import ravel_pytree

from ajax.agents.DreamerV3 import losses
from ajax.agents.DreamerV3.losses import make_objective, replay_returns
from ajax.agents.DreamerV3.networks import (
    N_BINS,
    RSSM,
    Actor,
    Critic,
    Latent,
    ModelSize,
    WorldModel,
    features,
    initial_latent,
)
from ajax.agents.DreamerV3.state import DreamerV3Config
from ajax.distributional import bins_mean, symexp, symlog_bins
from ajax.environments.row_collector import Rows
from ajax.normalizers import PercentileScale

SIZE = ModelSize(deter=16, hidden=8, classes=4, units=8, stoch=4, blocks=2)
CONFIG = DreamerV3Config(
    size=SIZE,
    batch_size=2,
    batch_length=3,
    train_ratio=1.0,
    capacity=8,
    learning_rate=1e-3,
    imag_horizon=2,
    horizon=333,
    lam=0.95,
    actor_entropy=3e-4,
)
OBS_DIM, ACTION_DIM = 3, 2
KEYS = (jax.random.key(11), jax.random.key(12))  # the world model's and imagination's keys of one update
TRUNC_IN = 2.0 * 1.1368  # trunc_normal_in draws |w| <= 2 x 1.1368 x outscale / sqrt(fan-in)


def leaves_with_paths(tree: Any) -> list[tuple[str, np.ndarray]]:
    return [(jax.tree_util.keystr(path), np.asarray(leaf)) for path, leaf in jax.tree_util.tree_leaves_with_path(tree)]


def all_zero(tree: Any) -> bool:
    return all(not leaf.any() for _, leaf in leaves_with_paths(tree))


def norm(tree: Any) -> float:
    return float(np.sqrt(sum(np.square(leaf).sum() for _, leaf in leaves_with_paths(tree))))


def perturbed(params: Any, key: jax.Array, scale: float = 0.3) -> Any:
    """Every parameter moved by Gaussian noise: the zeroed output layers would otherwise block
    every gradient behind them, and a wiring test must see the paths a trained model has."""
    flat, unravel = ravel_pytree(params)  # one draw for all: a draw per leaf takes seconds to compile
    return unravel(flat + scale * jax.random.normal(key, flat.shape))


def random_latent(key: jax.Array, batch: tuple[int, ...], size: ModelSize) -> Latent:
    deter_key, stoch_key = jax.random.split(key)
    stoch = jax.nn.one_hot(jax.random.randint(stoch_key, (*batch, size.stoch), 0, size.classes), size.classes)
    return Latent(jax.random.normal(deter_key, (*batch, size.deter)), stoch)


def sampled_batch(key: jax.Array) -> tuple[Rows, Rows]:
    """(rows (B, T), context (B,)) as `learn` splits a sampled sequence, every row different,
    none first, last or terminal, and the context's latent not zero, so no path is masked."""
    batch, length = CONFIG.batch_size, CONFIG.batch_length
    keys = jax.random.split(key, 6)
    no = jnp.zeros((batch, length), bool)
    rows = Rows(
        obs=jax.random.normal(keys[0], (batch, length, OBS_DIM)),
        action=jax.random.uniform(keys[1], (batch, length, ACTION_DIM), minval=-1.0, maxval=1.0),
        reward=jax.random.normal(keys[2], (batch, length)),
        is_first=no,
        is_last=no,
        is_terminal=no,
        entry=random_latent(keys[3], (batch, length), SIZE),
    )
    context = jax.tree.map(lambda x: x[:, 0], rows)
    context = context.replace(
        action=jax.random.uniform(keys[4], (batch, ACTION_DIM), minval=-1.0, maxval=1.0),
        entry=random_latent(keys[5], (batch,), SIZE),
    )
    return rows, context


@pytest.fixture(scope="module")
def update_inputs() -> dict[str, Any]:
    """The objective of continuous DreamerV3 at the tiny size, its initial and perturbed parameters, one batch."""
    model = WorldModel(SIZE, OBS_DIM, CONFIG.unimix)
    actor = Actor(SIZE.units, ACTION_DIM, True)
    critic = Critic(SIZE.units)

    @jax.jit  # one program instead of a dispatch per initialiser's operation
    def build(key: jax.Array) -> tuple[Any, Any, Any, Rows, Rows]:
        model_key, actor_key, critic_key, noise_key, slow_key, batch_key = jax.random.split(key, 6)
        latent, action = initial_latent(SIZE, (1,)), jnp.zeros((1, ACTION_DIM))
        feat = features(latent)
        initial = {
            "model": model.init(model_key, latent, action, jnp.zeros((1, OBS_DIM))),
            "actor": actor.init(actor_key, feat),
            "critic": critic.init(critic_key, feat),
        }
        params = perturbed(initial, noise_key)
        return initial, params, perturbed(params["critic"], slow_key), *sampled_batch(batch_key)

    initial, params, slow, rows, context = build(jax.random.key(0))
    return {
        "objective": make_objective(model, actor, critic, CONFIG),
        "critic": critic,
        "initial": initial,
        "params": params,
        "slow": slow,
        "rows": rows,
        "context": context,
    }


@pytest.fixture(scope="module")
def term_gradients(update_inputs: dict[str, Any]) -> dict[str, Any]:
    """The gradient of each loss term of one update with respect to all of {"model", "actor", "critic"},
    one reverse pass per term in one compiled program."""
    inputs = update_inputs

    def terms(params: Any) -> dict[str, jax.Array]:
        _, (_, model_losses, behaviour, _) = inputs["objective"](
            params, inputs["slow"], PercentileScale.create(), inputs["rows"], inputs["context"], KEYS
        )
        return {
            "reward": jnp.mean(model_losses.reward_loss),
            "continuation": jnp.mean(model_losses.continuation_loss),
            "policy": behaviour.policy_loss,
            "value": behaviour.value_loss,
            "replay_value": behaviour.replay_value_loss,
        }

    return jax.jit(jax.jacrev(terms))(inputs["params"])


# ---------------------------------------------------------------------------------------
# Gradient routing of the assembled update
# ---------------------------------------------------------------------------------------


def test_the_policy_loss_trains_the_actor_alone(term_gradients):
    """The reference's `imag_loss` scores sg(imagined states) (`ac_grads: False`), the log-probability of
    sg(actions) and sg(normalised advantages): the actor loss reaches neither the world model nor the critic."""
    grads = term_gradients["policy"]
    assert all_zero(grads["model"]), "the policy loss moved the world model"
    assert all_zero(grads["critic"]), "the policy loss moved the critic"
    assert norm(grads["actor"]) > 0


def test_the_imagined_value_loss_trains_the_critic_alone(term_gradients):
    """The value loss reads the critic on sg(imagined states) towards sg(returns) (`imag_loss`): it
    reaches neither the actor, through the sampled actions, nor the world model, through the states."""
    grads = term_gradients["value"]
    assert all_zero(grads["actor"]), "the value loss moved the actor"
    assert all_zero(grads["model"]), "the value loss moved the world model"
    assert norm(grads["critic"]) > 0


@pytest.mark.parametrize("term", ["reward", "continuation", "replay_value"])
def test_the_reward_continue_and_replayed_value_losses_train_the_rssm(term_gradients, term):
    """The reference's `reward_grad: True` and `repval_grad: True` leave the replayed features
    unstopped for the reward head and the replayed value, and the continue head reads them as they
    are (`Agent.loss`): each of these losses shapes the representation, through h (the GRU's
    gates) and through z (the posterior's logits, by the straight-through sample), and the encoder."""
    grads = term_gradients[term]
    rssm = grads["model"]["params"]["rssm"]
    assert norm(rssm["gates"]) > 0, f"{term} does not reach the GRU"
    assert norm(rssm["obs_logits"]) > 0, f"{term} does not reach the posterior"
    assert norm(grads["model"]["params"]["encoder"]) > 0, f"{term} does not reach the encoder"
    assert all_zero(grads["actor"])
    if term == "replay_value":
        assert norm(grads["critic"]) > 0
    else:
        assert all_zero(grads["critic"])


# ---------------------------------------------------------------------------------------
# The output layers' initial scales
# ---------------------------------------------------------------------------------------


def test_the_reward_head_and_the_critic_start_at_zero_and_the_continue_head_does_not(update_inputs):
    """configs.yaml: `rewhead` and `value` have `outscale: 0.0`, `conhead` 1.0. At zero both two-hot
    heads predict the uniform softmax over symmetric bins, 0, whatever the features."""
    initial = update_inputs["initial"]
    model_params, critic_params = initial["model"]["params"], initial["critic"]
    assert all_zero(model_params["reward_out"]) and all_zero(critic_params["params"]["logits"])
    continue_kernel = np.asarray(model_params["continue_out"]["kernel"])
    assert np.abs(continue_kernel).max() > 0.1 / math.sqrt(SIZE.units)
    feat = features(random_latent(jax.random.key(3), (4,), SIZE))
    bins = symexp(symlog_bins(N_BINS))
    critic = update_inputs["critic"]
    np.testing.assert_allclose(bins_mean(jax.jit(critic.apply)(critic_params, feat), bins), 0.0, atol=1e-6)


@pytest.mark.parametrize("continuous", [True, False], ids=["bounded-normal", "categorical"])
def test_the_actor_output_layers_start_at_a_hundredth_of_the_scale(continuous):
    """configs.yaml `policy: {outscale: 0.01}`, which heads.py passes to every output layer (the
    bounded normal's mean and stddev, the categorical's logits): their kernels are nonzero and
    within the 0.01 scale's truncation bound, which the hidden layers' (outscale 1) exceed."""
    units, action_dim = 16, 3
    actor = Actor(units, action_dim, continuous)
    params = jax.jit(actor.init)(jax.random.key(4), jnp.zeros((1, 8)))["params"]
    bound = TRUNC_IN * 0.01 / math.sqrt(units)
    outputs = ["mean", "std"] if continuous else ["logits"]
    for name in outputs:
        kernel = np.abs(np.asarray(params[name]["kernel"]))
        assert 0 < kernel.max() <= bound, (name, kernel.max(), bound)
    hidden = np.abs(np.asarray(params["NormedMLP_0"]["linear2"]["kernel"]))
    assert hidden.max() > 10 * bound


# ---------------------------------------------------------------------------------------
# The block GRU, by hand
# ---------------------------------------------------------------------------------------


def numpy_block_gru(params: dict[str, Any], deter: np.ndarray, stoch: np.ndarray, action: np.ndarray, blocks: int):
    """The reference's `RSSM._core` written out for one latent, in float64: mixed inputs of h, z and
    the clipped action; block b of the hidden layer reads h's block b and all of the mixed input;
    each block's gate output is that block's [reset, candidate, update]. Returns (h', h' with the
    three gates cut as three contiguous thirds of the whole output: the wiring to tell apart)."""
    p = jax.tree.map(lambda x: np.asarray(x, np.float64), params)

    def linear(name: str, x: np.ndarray) -> np.ndarray:
        return x @ p[name]["kernel"] + p[name]["bias"]

    def rms(name: str, x: np.ndarray) -> np.ndarray:
        return x / np.sqrt(np.mean(np.square(x)) + 1e-4) * p[name]["scale"]

    def silu(x: np.ndarray) -> np.ndarray:
        return x / (1.0 + np.exp(-x))

    def sigmoid(x: np.ndarray) -> np.ndarray:
        return 1.0 / (1.0 + np.exp(-x))

    action = action / np.maximum(1.0, np.abs(action))
    mixed = np.concatenate(
        [
            silu(rms("deter_norm", linear("deter_in", deter))),
            silu(rms("stoch_norm", linear("stoch_in", stoch.reshape(-1)))),
            silu(rms("action_norm", linear("action_in", action))),
        ]
    )
    part = deter.size // blocks
    hidden = np.concatenate(
        [
            np.concatenate([deter[b * part : (b + 1) * part], mixed]) @ p["hidden_layer"]["kernel"][b]
            for b in range(blocks)
        ]
    )
    hidden = silu(rms("hidden_norm", hidden + p["hidden_layer"]["bias"]))
    gates = np.concatenate(
        [hidden[b * part : (b + 1) * part] @ p["gates"]["kernel"][b] for b in range(blocks)]
    ) + np.asarray(p["gates"]["bias"])
    per_block = gates.reshape(blocks, 3, part)
    reset, candidate, update = (per_block[:, i].reshape(-1) for i in range(3))
    thirds = np.split(gates, 3)

    def gru(reset: np.ndarray, candidate: np.ndarray, update: np.ndarray) -> np.ndarray:
        candidate = np.tanh(sigmoid(reset) * candidate)
        update = sigmoid(update - 1.0)
        return update * candidate + (1.0 - update) * deter

    return gru(reset, candidate, update), gru(*thirds)


def test_the_block_gru_computes_the_references_equations():
    """rssm.py `_core`: h' = u tanh(sigmoid(r) c) + (1 - u) h, u = sigmoid(update - 1), the action divided
    by max(1, |a|), and the gates read per block. 4 units in 2 blocks, random parameters (biases and norm
    scales moved off their initial values) and an action of 2.5, which the division brings to 1."""
    size = ModelSize(deter=4, hidden=2, classes=2, units=4, stoch=1, blocks=2)
    rssm = RSSM(size)
    latent = Latent(jnp.array([[0.5, -1.0, 0.25, 2.0]]), jnp.array([[[0.0, 1.0]]]))
    action = jnp.array([[2.5]])
    params = jax.jit(lambda key: perturbed(rssm.init(key, latent, action, method=RSSM.step), key, scale=0.5))(
        jax.random.key(5)
    )
    deter = jax.jit(lambda params: rssm.apply(params, latent, action, method=RSSM.step))(params)
    expected, contiguous_thirds = numpy_block_gru(
        params["params"], np.asarray(latent.deter[0]), np.asarray(latent.stoch[0]), np.asarray(action[0]), size.blocks
    )
    np.testing.assert_allclose(deter[0], expected, rtol=1e-5, atol=1e-6)
    assert np.abs(contiguous_thirds - expected).max() > 1e-3  # the example tells the two cuts apart


# ---------------------------------------------------------------------------------------
# The replayed value's bootstrap
# ---------------------------------------------------------------------------------------


def test_the_replayed_returns_bootstrap_each_row_from_its_own_imagined_return():
    """agent.py: `boot = imgloss_out['ret'][:, 0].reshape(B, K)`, then `lambda_return(last, term, rew, ...,
    boot, 1 - 1/horizon, lam)` along each replayed row. B = 2 rows of T = 3; R_0 of the imagination from
    row (b, t) is 100 (3 b + t + 1), row 0 has an episode's last step at t = 1, row 1 a terminal at t = 2;
    lam 0.5, discount 0.9:

        row 0: R_1 = r_2 + 0.9 boot_2 = 2 + 270 = 272;  R_0 = r_1 + 0.9 boot_1 (lam_1 = 0) = 1 + 180 = 181
        row 1: R_1 = r_2 = 20 (c_2 = 0);               R_0 = 10 + 0.9 (0.5 boot_1 + 0.5 R_1) = 10 + 234 = 244

    A (T, B) reading of R_0 would bootstrap row 0 from 300 and 500 instead."""
    false = np.zeros((2, 3), bool)
    rows = Rows(
        obs=jnp.zeros((2, 3, 1)),
        action=jnp.zeros((2, 3)),
        reward=jnp.array([[0.0, 1.0, 2.0], [0.0, 10.0, 20.0]]),
        is_first=jnp.asarray(false),
        is_last=jnp.asarray(false).at[0, 1].set(True),
        is_terminal=jnp.asarray(false).at[1, 2].set(True),
        entry=None,
    )
    imagined = 100.0 * jnp.arange(1.0, 7.0)  # (B T,), row-major
    returns = replay_returns(imagined, rows, lam=0.5, discount=0.9)
    np.testing.assert_allclose(returns, [[181.0, 272.0], [244.0, 20.0]], rtol=1e-6)


def test_the_objective_bootstraps_replay_from_r0_of_the_imagination_started_at_each_row(update_inputs, monkeypatch):
    """The other half of the assembly: in the objective, `replay_returns` receives R_0 (not a later
    step's return) of the imagination, and imagination n starts from row (n // T, n % T) of the
    posterior, the order `replay_returns` reads. Recorded from the compiled objective: the imagination's
    returns, and its values at s_0, which must be the critic's at the posterior's rows, row-major."""
    inputs = update_inputs
    recorded: dict[str, np.ndarray] = {}
    real_lambda_returns, real_replay_returns = losses.lambda_returns, losses.replay_returns

    def record(name: str, value: jax.Array) -> None:
        jax.debug.callback(lambda x: recorded.__setitem__(name, np.asarray(x)), value)

    def lambda_returns(rewards, continues, values, lam=0.95, discount=1.0, lasts=None):
        returns = real_lambda_returns(rewards, continues, values, lam, discount, lasts)
        if lasts is None:  # imagination's call; replay's passes is_last
            record("imagined_returns", returns)
            record("imagined_start_values", values[0])
        return returns

    def replay_returns(imagined_return, rows, lam, discount):
        record("bootstrap", imagined_return)
        return real_replay_returns(imagined_return, rows, lam, discount)

    monkeypatch.setattr(losses, "lambda_returns", lambda_returns)
    monkeypatch.setattr(losses, "replay_returns", replay_returns)
    objective = inputs["objective"]  # its closures look both names up in the module when traced
    run = jax.jit(
        lambda params: objective(
            params, inputs["slow"], PercentileScale.create(), inputs["rows"], inputs["context"], KEYS
        )
    )
    _, (posterior, _, _, _) = run(inputs["params"])
    jax.effects_barrier()
    np.testing.assert_array_equal(recorded["bootstrap"], recorded["imagined_returns"][0])
    critic_at_rows = bins_mean(
        inputs["critic"].apply(inputs["params"]["critic"], features(posterior)), symexp(symlog_bins(N_BINS))
    )  # (B, T)
    np.testing.assert_allclose(recorded["imagined_start_values"], np.asarray(critic_at_rows).reshape(-1), rtol=1e-5)
    assert np.ptp(np.asarray(critic_at_rows)) > 1e-3  # distinguishable rows


def test_the_rms_norm_is_flax_s_in_values_and_parameters():
    """`RMSNorm` replaces Flax's `nn.RMSNorm` (fewer equations): the same parameter tree, the same outputs."""
    import flax.linen as nn

    from ajax.networks.world_model import RMS_EPS, RMSNorm

    x = 3.0 * jax.random.normal(jax.random.key(0), (5, 7, 48))
    theirs, ours = nn.RMSNorm(epsilon=RMS_EPS), RMSNorm()
    params = theirs.init(jax.random.key(1), x)
    assert jax.tree.structure(params) == jax.tree.structure(ours.init(jax.random.key(1), x))
    params = jax.tree.map(lambda p: p + jnp.linspace(-0.5, 0.5, p.size).reshape(p.shape), params)  # a trained scale
    np.testing.assert_allclose(ours.apply(params, x), theirs.apply(params, x), rtol=1e-6, atol=1e-7)
    count = lambda module: len(jax.make_jaxpr(module.apply)(params, x).jaxpr.eqns)  # noqa: E731
    assert count(ours) < count(theirs)
