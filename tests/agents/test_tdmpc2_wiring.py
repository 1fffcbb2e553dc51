"""TD-MPC2's wiring: which parameters the policy loss and the encoder's learning rate reach, the
networks' initialisation, the policy prior's scaled entropy and the termination head in planning.

Each test pins one fact of the reference (nicklashansen/tdmpc2: `tdmpc2/tdmpc2.py`,
`common/world_model.py`, `common/init.py`, `common/math.py`), on an example where the
plausible wrong form gives another answer.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.flatten_util import ravel_pytree

from ajax.agents.TDMPC2.core import squashed_gaussian
from ajax.agents.TDMPC2.losses import policy_objective
from ajax.agents.TDMPC2.networks import Architecture, ModelSize, WorldModel, simnorm
from ajax.agents.TDMPC2.planner import LatentModel, PlannerConfig, estimate_value, plan
from ajax.agents.TDMPC2.state import TDMPC2Config
from ajax.agents.TDMPC2.train_TDMPC2 import POLICY, Networks, init_train_states
from ajax.normalizers import RunningScale

LATENT, OBS_DIM, ACTION_DIM = 16, 3, 2
HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


def tiny_config(episodic: bool = True, n_tasks: int = 0, mlp_dim: int = 16, entropy_coef: float = 1e-4) -> TDMPC2Config:
    size = ModelSize(enc_dim=16, mlp_dim=mlp_dim, latent_dim=LATENT, num_enc_layers=2, num_q=3)
    arch = Architecture(size, OBS_DIM, ACTION_DIM, episodic=episodic, n_tasks=n_tasks, task_dim=4 if n_tasks else 0)
    return TDMPC2Config(
        arch=arch,
        planner=PlannerConfig(),
        batch_size=4,
        capacity=100,
        learning_rate=3e-4,
        enc_lr_scale=0.3,
        grad_clip_norm=20.0,
        tau=0.01,
        rho=0.5,
        entropy_coef=entropy_coef,
        discount=0.9,
        seed_steps=10,
        mpc=True,
    )


def train_states(config: TDMPC2Config, key: jax.Array) -> tuple[Networks, Any, Any]:
    """(networks, model state, policy state) as the agent initialises them, in one compiled program."""
    networks = Networks(WorldModel(config.arch), config)
    return networks, *jax.jit(lambda key: init_train_states(networks, config, key))(key)


def leaves_with_paths(tree: Any) -> list[tuple[str, np.ndarray]]:
    return [(jax.tree_util.keystr(path), np.asarray(leaf)) for path, leaf in jax.tree_util.tree_leaves_with_path(tree)]


def perturbed(params: Any, key: jax.Array, scale: float = 0.3) -> Any:
    """Every parameter moved by noise, so the zeroed Q outputs do not hide the path through Q(z, a)."""
    flat, unravel = ravel_pytree(params)
    return unravel(flat + scale * jax.random.normal(key, flat.shape))


# ---------------------------------------------------------------------------------------
# Gradient routing: the policy loss and the Q-functions
# ---------------------------------------------------------------------------------------


def policy_loss_gradients(entropy_coef: float) -> dict[str, Any]:
    """d(policy loss) / d(model params) and d / d(policy params) on 3 x 4 latents, every parameter perturbed."""
    config = tiny_config(entropy_coef=entropy_coef)
    networks, model_state, policy_state = train_states(config, jax.random.key(0))
    z_key, model_key, policy_key, *keys = jax.random.split(jax.random.key(1), 6)
    zs = simnorm(jax.random.normal(z_key, (3, 4, LATENT)))

    def loss(model_params: Any, policy_params: Any) -> jax.Array:
        valid = jnp.ones((3, 4))
        return policy_objective(
            networks, config, model_params, policy_params, zs, RunningScale.create(), valid, tuple(keys)
        )[0]

    model_grads, policy_grads = jax.jit(jax.grad(loss, argnums=(0, 1)))(
        perturbed(model_state.params, model_key), perturbed(policy_state.params, policy_key)
    )
    return {"model": model_grads, "policy": policy_grads}


@pytest.fixture(scope="module")
def policy_gradients() -> dict[float, dict[str, Any]]:
    """The policy loss's gradients with the entropy bonus on (1e-4) and off (0: only the action's path
    through Q(z, a) is left to train the prior)."""
    return {entropy_coef: policy_loss_gradients(entropy_coef) for entropy_coef in (1e-4, 0.0)}


def test_the_policy_loss_never_reaches_the_q_functions_or_any_other_model_parameter(policy_gradients):
    """tdmpc2.py `update_pi`: `Q(zs, action, task, return_type='avg', detach=True)` reads the Q-functions
    through detached parameters, and `pi_loss.backward()` then steps `pi_optim` over `_pi` alone. Here the
    loss's gradient with respect to every world model parameter, the Q ensemble's first, is exactly 0."""
    grads = policy_gradients[1e-4]["model"]
    assert "q_ensemble" in grads
    moved = [path for path, leaf in leaves_with_paths(grads) if leaf.any()]
    assert moved == [], f"the policy loss reaches {moved}"


def test_the_policy_prior_learns_through_the_action_it_feeds_the_q_functions(policy_gradients):
    """Detached parameters, not a detached action: without the entropy bonus the prior's only gradient is
    dQ(z, a)/da da/dtheta, and it is not zero (the reference's `action` is not detached in `update_pi`)."""
    for entropy_coef in (1e-4, 0.0):
        grads = policy_gradients[entropy_coef]["policy"]
        assert any(leaf.any() for _, leaf in leaves_with_paths(grads)), entropy_coef


@pytest.fixture(scope="module")
def multitask_states() -> tuple[TDMPC2Config, Any, Any]:
    """An episodic two-task model's train states: every group the reference's `optim` has."""
    config = tiny_config(n_tasks=2)
    return config, *train_states(config, jax.random.key(0))[1:]


def test_the_policy_prior_and_the_world_model_are_two_train_states(multitask_states):
    """tdmpc2.py: `optim` over encoder, dynamics, reward, termination, Qs (and task embedding); `pi_optim`
    over `_pi` only. The policy's train state holds the prior alone, the model's everything else, and the
    target Q-functions start as the online ones."""
    _, model_state, policy_state = multitask_states
    assert set(policy_state.params) == {POLICY}
    assert set(model_state.params) == {
        "encoder",
        "dynamics",
        "reward_head",
        "termination_head",
        "q_ensemble",
        "task_embedding",
    }
    jax.tree.map(np.testing.assert_array_equal, model_state.target_params, model_state.params["q_ensemble"])


def test_the_encoder_and_only_the_encoder_learns_at_0_3_times_the_rate(multitask_states):
    """tdmpc2.py: `{'params': self.model._encoder.parameters(), 'lr': self.cfg.lr * self.cfg.enc_lr_scale}`,
    every other group of `optim` at `lr`; `enc_lr_scale: 0.3`. Adam's first step on a gradient of ones
    moves each parameter by its group's rate (m / sqrt(v) = 1 whatever the clipping's factor), so every
    leaf's step reads its rate: 0.3 lr under "encoder", lr everywhere else, the task embedding included."""
    config, model_state, _ = multitask_states
    ones = jax.tree.map(jnp.ones_like, model_state.params)
    updates, _ = jax.jit(model_state.tx.update)(ones, model_state.opt_state, model_state.params)
    for path, step in leaves_with_paths(updates):
        rate = config.learning_rate * (config.enc_lr_scale if path.startswith("['encoder']") else 1.0)
        np.testing.assert_allclose(step, -rate, rtol=1e-4, err_msg=path)


# ---------------------------------------------------------------------------------------
# Initialisation
# ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def initial_params() -> dict[str, Any]:
    """An episodic world model's initial parameters with hidden layers of 256 (65,536 weights in one)."""
    config = tiny_config(mlp_dim=256)
    model = WorldModel(config.arch)
    init = jax.jit(model.init)
    return init(jax.random.key(2), jnp.zeros((1, OBS_DIM)), jnp.zeros((1, ACTION_DIM)))["params"]


def test_the_reward_head_and_every_q_function_start_with_a_zero_output_layer(initial_params):
    """world_model.py: `init.zero_([self._reward[-1].weight, self._Qs.params["2", "weight"]])` (the
    biases start at 0 too). The termination head, the policy and the hidden layers keep their draws."""
    params = initial_params
    assert not np.asarray(params["reward_head"]["Dense_0"]["kernel"]).any()
    q_out = np.asarray(params["q_ensemble"]["Qs"]["Dense_0"]["kernel"])
    assert q_out.shape[0] == 3 and not q_out.any()
    for head in ("termination_head", "policy"):
        assert np.asarray(params[head]["Dense_0"]["kernel"]).any(), head
    assert np.asarray(params["q_ensemble"]["Qs"]["NormedDense_1"]["Dense_0"]["kernel"]).any()


def test_the_weights_start_from_the_references_trunc_normal(initial_params):
    """init.py `nn.init.trunc_normal_(m.weight, std=0.02)`: torch's bounds a=-2, b=2 are absolute values,
    100 deviations out, so the draw is a plain N(0, 0.02^2): std 0.02, and |w| > 0.04 for 4.55% of the
    weights. A truncation at two deviations (+-0.04) gives std 0.0176 and none beyond 0.04."""
    kernel = np.asarray(initial_params["dynamics"]["NormedDense_1"]["Dense_0"]["kernel"]).ravel()
    assert kernel.size == 256 * 256
    beyond = np.mean(np.abs(kernel) > 0.04)
    two_sided_tail = math.erfc(2.0 / math.sqrt(2.0))  # P(|x| > 2 sigma) = 0.0455
    assert abs(beyond - two_sided_tail) < 0.005, beyond
    np.testing.assert_allclose(kernel.std(), 0.02, rtol=0.02)


# ---------------------------------------------------------------------------------------
# The policy prior's scaled entropy
# ---------------------------------------------------------------------------------------


def reference_pi_terms(mean: np.ndarray, log_std: np.ndarray, eps: np.ndarray) -> tuple[float, float]:
    """(log_prob, scaled_entropy) as world_model.py `pi` computes them, in float64: the Gaussian's
    log-probability of eps *before* the tanh, scaled by the action size; then the squash's correction
    enters log_prob only, and `entropy_scale = scaled_log_prob / (log_prob + 1e-8)` undoes it in
    `scaled_entropy = -log_prob * entropy_scale`."""
    gaussian = float(np.sum(-0.5 * eps**2 - log_std - HALF_LOG_2PI))
    scaled_log_prob = gaussian * eps.size
    action = np.tanh(mean + eps * np.exp(log_std))
    log_prob = gaussian - float(np.sum(np.log(np.maximum(1.0 - action**2, 0.0) + 1e-6)))
    entropy_scale = scaled_log_prob / (log_prob + 1e-8)
    return log_prob, -log_prob * entropy_scale


SQUASH_EXAMPLE = {
    # raw log-std atanh(2/3) maps to log-std 0 within [-10, 2]; the pre-tanh draws are mean + eps = +-1.5.
    "raw": np.array([1.0, -0.5, math.atanh(2.0 / 3.0), math.atanh(2.0 / 3.0)]),
    "eps": np.array([0.5, -1.0]),
}


def test_the_log_probability_carries_the_tanh_correction():
    """math.py `squash`: log pi(a) = log N(eps) - sum log(relu(1 - tanh(u)^2) + 1e-6); the logged entropy is
    its negative. With u = +-1.5 the correction is large (+3.42), so this pins it."""
    raw, eps = SQUASH_EXAMPLE["raw"], SQUASH_EXAMPLE["eps"]
    _, _, log_prob, _ = squashed_gaussian(jnp.asarray(raw), jnp.asarray(eps), -10.0, 2.0)
    expected, _ = reference_pi_terms(raw[:2], np.zeros(2), eps)
    np.testing.assert_allclose(log_prob, expected, rtol=1e-5)


def test_the_scaled_entropy_is_the_pre_tanh_log_probability_times_the_action_size():
    """world_model.py `pi`: `scaled_log_prob = log_prob * size` is taken before `math.squash`, and
    `scaled_entropy = -log_prob * entropy_scale` with `entropy_scale = scaled_log_prob / (log_prob + 1e-8)`
    equals -scaled_log_prob: -2 log N(eps; 0, 1) = 2 (0.125 + 0.5 + 2 x 0.919) = 4.93 here, where
    -2 log pi(a) with the tanh correction would be -1.91."""
    raw, eps = SQUASH_EXAMPLE["raw"], SQUASH_EXAMPLE["eps"]
    _, expected = reference_pi_terms(raw[:2], np.zeros(2), eps)
    np.testing.assert_allclose(expected, 2 * (0.125 + 0.5 + 2 * HALF_LOG_2PI), rtol=1e-6)
    corrected, _ = reference_pi_terms(raw[:2], np.zeros(2), eps)
    assert abs(-2 * corrected - expected) > 1.0  # the example tells the two forms apart
    _, _, _, scaled_entropy = squashed_gaussian(jnp.asarray(raw), jnp.asarray(eps), -10.0, 2.0)
    np.testing.assert_allclose(scaled_entropy, expected, rtol=1e-5)


# ---------------------------------------------------------------------------------------
# The termination head in planning
# ---------------------------------------------------------------------------------------


def test_the_planner_reads_the_termination_head_as_a_probability_in_episodic_mode_only():
    """world_model.py `termination` returns sigmoid(head(z)) and `_estimate_value` compares it with 0.5;
    the head exists only with `episodic`. The planner's model carries that probability, or None."""
    networks, model_state, policy_state = train_states(tiny_config(), jax.random.key(3))
    params = {**model_state.params, **policy_state.params}
    z = simnorm(jax.random.normal(jax.random.key(4), (5, LATENT)))
    terminal = networks.latent_model(params, 0.9).terminal
    logits = jax.jit(lambda params, z: networks.apply(params, WorldModel.termination, z))(params, z)
    np.testing.assert_allclose(terminal(z), jax.nn.sigmoid(logits), rtol=1e-6)
    plain_networks, plain_model, plain_policy = train_states(tiny_config(episodic=False), jax.random.key(3))
    assert plain_networks.latent_model({**plain_model.params, **plain_policy.params}, 0.9).terminal is None


def cliff(terminal: bool, edge: float = 0.5, value: float = 100.0) -> LatentModel:
    """A line: z' = z + a, reward a (the right pays), every state after the horizon worth `value`, and with
    `terminal` a cliff: a latent right of `edge` is terminal (probability 1, else 0)."""
    return LatentModel(
        next=lambda z, a: z + a,
        reward=lambda z, a: a[:, 0],
        pi=lambda z, key: jax.random.uniform(key, (z.shape[0], 1), minval=-1.0, maxval=1.0),
        value=lambda z, a, key: jnp.full(z.shape[0], value),
        discount=0.9,
        terminal=(lambda z: (z[:, 0] > edge).astype(jnp.float32)) if terminal else None,
    )


def test_estimate_value_counts_the_step_into_a_terminal_and_nothing_after():
    """tdmpc2.py `_estimate_value`: G += discount (1 - termination) r_t, then termination from z_{t+1}, and
    the final Q term also times (1 - termination). From z = 0, discount 0.9, value 100:

        a = 1, 1, 1:        r_0 = 1 counted, z_1 = 1 terminal                    G = 1
        a = 0.2, 0.2, 0.2:  z_3 = 0.6 terminal, all three rewards counted        G = 0.2 x 2.71 = 0.542
        a = 0.1, 0.1, 0.1:  never terminal                                       G = 0.271 + 0.729 x 100 = 73.171
    """
    actions = jnp.array([1.0, 0.2, 0.1])[None, :, None].repeat(3, 0)  # (H, N, A)
    z = jnp.zeros((3, 1))
    values = estimate_value(cliff(True), z, actions, jax.random.key(0))
    np.testing.assert_allclose(values, [1.0, 0.542, 73.171], rtol=1e-5)
    np.testing.assert_allclose(estimate_value(cliff(False), z, actions, jax.random.key(0))[0], 2.71 + 72.9, rtol=1e-5)


def test_the_planner_plans_away_from_a_terminal_cliff():
    """Reward pays for moving right, and right of 0.5 lies a terminal cliff that forfeits the value of
    what follows (100). Without the termination head MPPI runs right at full speed (G = 2.71 + 72.9);
    with it, it stops short of the edge: from z = 0 the whole plan's net move stays within 0.5."""
    config = PlannerConfig()
    z, previous = jnp.zeros(1), jnp.zeros((config.horizon, 1))
    decide = jax.jit(
        lambda terminal, key: plan(cliff(terminal), z, previous, jnp.asarray(True), key, config, True),
        static_argnums=0,
    )
    for seed in range(3):
        key = jax.random.key(seed)
        action, mean = decide(False, key)
        assert float(action[0]) > 0.9 and float(mean[0, 0]) > 0.9, (action, mean)
        action, mean = decide(True, key)
        assert float(action[0]) <= 0.5 and float(jnp.sum(mean)) <= 0.5, (action, mean)
