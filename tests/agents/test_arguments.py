"""Every agent refuses a mistaken argument at construction, naming it, before anything compiles.

One table of mistakes, applied to every registered agent that takes the argument, with at
least one row for each numeric argument of every agent: counts that are not integers (a
bool included) or too small, rates, norms and scales that are not finite and positive,
coefficients below 0 or NaN, fractions and discounts outside their interval; each message
names the argument, the value and what is accepted. Then an env class instead of an
instance, another env's params, an action pipeline made for another env or memory, and
seeds that are not distinct integers in [0, 2**32).
Then what is checked by tracing: an expert's answer against the action space, a custom
env's observations against its declared space, and a resumed state against the agent's own.
"""

import functools
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from gymnax.environments import spaces
from gymnax.environments.classic_control import CartPole

from ajax.agents.loop import RunSettings
from ajax.agents.registry import AGENTS
from ajax.agents.SAC.train_SAC import make_action_pipeline
from ajax.buffers import collect_dataset
from ajax.environments.create import make_env, prepare_env
from ajax.extensions.expert import ImitationLoss
from ajax.networks.memory import MemoryConfig
from tests.conftest import cartpole_expert, pd_expert
from tests.kit import env_of
from tests.probe_envs import BestAction


@functools.cache
def tiny_dataset():
    return collect_dataset("Pendulum-v1", lambda obs: jnp.clip(-obs[..., 2:3], -2.0, 2.0), 64, seed=0)


def required(name: str) -> dict:
    """What an agent cannot be built without, besides its env."""
    return {"DAgger": {"expert_policy": cartpole_expert}, "IQL": {"dataset": tiny_dataset()}}.get(name, {})


NAN, INF = float("nan"), float("inf")
# What each check accepts, as its message says it.
COUNT = "be a positive integer"
COUNT_FROM_0 = "be an integer >= 0"
ABOVE_0 = "be a finite number above 0"
RATE = "be a finite number above 0 or a schedule of the update count"
AT_LEAST_0 = r"lie in \[0, inf\)"
UNIT = r"lie in \[0, 1\]"
UNIT_ABOVE_0 = r"lie in \(0, 1\]"
UNIT_BELOW_1 = r"lie in \[0, 1\)"
SCHEDULE = r"be >= 0\.0 and finite, or a function of the timestep"

# (argument, mistaken value, what is accepted): each value fails the argument's own check,
# whichever agent takes it, with every other argument at its default.
MISTAKES = [
    # What every agent takes (ActorCritic and the environment)
    ("n_envs", 2.5, COUNT),
    ("n_envs", True, COUNT),
    ("n_envs", 0, COUNT),
    ("episode_length", 0, COUNT),
    ("episode_length", 200.0, COUNT),
    ("action_repeat", 0, COUNT),
    ("action_repeat", True, COUNT),
    ("actor_learning_rate", INF, RATE),
    ("actor_learning_rate", True, RATE),
    ("critic_learning_rate", -1e-3, RATE),
    # One network's rate takes a schedule too (DQN, PQN, DAgger, UDRL); a world model's own a number.
    ("learning_rate", NAN, f"{ABOVE_0}( or a schedule of the update count)?"),
    ("learning_rate", True, f"{ABOVE_0}( or a schedule of the update count)?"),
    ("max_grad_norm", -1.0, ABOVE_0),
    ("max_grad_norm", 0.0, ABOVE_0),
    ("gamma", 1.5, UNIT_ABOVE_0),
    ("gamma", 0.0, UNIT_ABOVE_0),
    ("gamma", NAN, UNIT_ABOVE_0),
    # Counts
    ("n_steps", 0, COUNT),
    ("n_steps", True, COUNT),
    ("batch_size", 0, COUNT),
    ("batch_size", 64.0, COUNT),
    ("n_epochs", 2.0, COUNT),
    ("n_minibatches", 0, COUNT),
    ("unroll_length", 0, COUNT),
    ("unroll_length", 5.0, COUNT),
    ("bptt_length", 0, COUNT),
    ("bptt_length", 8.0, COUNT),
    ("sequence_length", 0, COUNT),
    ("sequence_length", 8.0, COUNT),
    ("burn_in", -1, COUNT_FROM_0),
    ("burn_in", 4.0, COUNT_FROM_0),
    ("horizon", 0, COUNT),
    ("horizon", 32.0, COUNT),
    ("warmup_updates", -1, COUNT_FROM_0),
    ("weight_decay", -1.0, AT_LEAST_0),
    ("betas", (0.9, 1.0), r"be Adam's two decay rates \(b1, b2\), each in \[0, 1\)"),
    ("betas", (0.9,), r"be Adam's two decay rates \(b1, b2\), each in \[0, 1\)"),
    ("weight_decay", NAN, AT_LEAST_0),
    ("buffer_size", 0, COUNT),
    ("buffer_size", 1e6, COUNT),
    ("learning_starts", -1, COUNT_FROM_0),
    ("learning_starts", 100.0, COUNT_FROM_0),
    ("learning_starts", False, COUNT_FROM_0),
    ("target_update_interval", 0, COUNT),
    ("policy_delay", True, COUNT),
    ("n_critics", 0, COUNT),
    ("subset_size", 0, COUNT),
    ("utd_ratio", 1.5, COUNT),
    ("n_quantiles", 0, COUNT),
    ("top_quantiles_to_drop_per_net", -1, COUNT_FROM_0),
    ("n_atoms", 1, "be an integer >= 2"),  # a categorical distribution needs two atoms
    ("renorm_warmup_steps", -1, COUNT_FROM_0),
    ("adam_b1", 1.0, UNIT_BELOW_1),
    ("batch_norm_momentum", 1.0, UNIT_BELOW_1),
    ("expert_buffer_n_steps", -1, COUNT_FROM_0),
    ("n_gradient_steps", 0, COUNT),
    ("n_updates_per_iter", 2.5, COUNT),
    ("top_k", 0, COUNT),
    # Fractions, coefficients, rates and scales
    ("gae_lambda", 1.5, UNIT),
    ("gae_lambda", NAN, UNIT),
    ("q_lambda", -0.1, UNIT),
    ("clip_range", -0.1, SCHEDULE),
    ("clip_range", NAN, SCHEDULE),
    ("exploration_noise", INF, SCHEDULE),
    ("ent_coef", -0.01, AT_LEAST_0),
    ("ent_coef", NAN, AT_LEAST_0),
    ("vf_coef", INF, AT_LEAST_0),
    ("reward_scaling", 0.0, ABOVE_0),
    ("reward_scaling", NAN, ABOVE_0),
    ("nu", -0.1, AT_LEAST_0),
    ("average_reward_step", 0.0, UNIT_ABOVE_0),
    ("exploration_fraction", 0.0, UNIT_ABOVE_0),
    ("exploration_initial_eps", 1.5, UNIT),
    ("exploration_final_eps", -0.1, UNIT),
    ("train_freq", 0, COUNT),
    ("train_freq", 2.5, COUNT),
    ("gradient_steps", 0, r"be a positive integer or -1 \(one update per env step collected\)"),
    ("gradient_steps", True, r"be a positive integer or -1 \(one update per env step collected\)"),
    ("tau", 0.0, UNIT_ABOVE_0),
    ("tau", NAN, UNIT_ABOVE_0),
    ("alpha_learning_rate", 0.0, RATE),
    ("alpha_init", INF, ABOVE_0),
    ("target_entropy", NAN, r"lie in \(-inf, inf\)"),
    ("target_entropy", "-1", r"lie in \(-inf, inf\)"),
    ("log_std_init", NAN, r"lie in \(-inf, inf\)"),
    ("target_policy_noise", -0.1, AT_LEAST_0),
    ("target_noise_clip", NAN, AT_LEAST_0),
    ("theta_learning_rate", 1.5, UNIT_ABOVE_0),
    ("alpha", NAN, AT_LEAST_0),
    ("alpha", True, AT_LEAST_0),
    ("beta_decay", 1.5, UNIT),
    ("value_learning_rate", -3e-4, RATE),
    ("expectile", 1.0, r"lie in \(0, 1\)"),
    ("expectile", 0.0, r"lie in \(0, 1\)"),
    ("beta", 0.0, ABOVE_0),
    ("max_weight", INF, ABOVE_0),
    ("return_scale", NAN, ABOVE_0),
    ("return_bound", 0.0, ABOVE_0),
    ("horizon_scale", 0.0, ABOVE_0),
    ("lam", 1.5, UNIT),
    ("actor_entropy", -0.1, AT_LEAST_0),
    ("representation_scale", -0.1, AT_LEAST_0),
    ("free_nats", -1.0, AT_LEAST_0),
    ("train_ratio", 0.0, ABOVE_0),
    ("batch_length", 0, COUNT),
    ("imag_horizon", 0, COUNT),
    # TD-MPC2's
    ("model_size", 4, "be one of [^,]+(, [^,]+)*"),  # DreamerV3's names, TD-MPC2's millions
    ("model_size", True, "be one of [^,]+(, [^,]+)*"),
    ("enc_lr_scale", 0.0, ABOVE_0),
    ("grad_clip_norm", -1.0, ABOVE_0),
    ("rho", 0.0, UNIT_ABOVE_0),
    ("entropy_coef", -1e-4, AT_LEAST_0),
    ("consistency_coef", NAN, AT_LEAST_0),
    ("reward_coef", -0.1, AT_LEAST_0),
    ("value_coef", INF, AT_LEAST_0),
    ("termination_coef", -1.0, AT_LEAST_0),
    ("iterations", 0, COUNT),
    ("num_samples", 64.0, COUNT),
    ("num_elites", 0, COUNT),
    ("num_pi_trajs", -1, COUNT_FROM_0),
    ("min_std", 0.0, ABOVE_0),
    ("max_std", INF, ABOVE_0),
    ("temperature", 0.0, ABOVE_0),
    ("seed_steps", 0, COUNT),
    ("num_bins", 0, COUNT),
    ("vmin", NAN, r"lie in \(-inf, inf\)"),
    ("vmax", INF, r"lie in \(-inf, inf\)"),
    ("simnorm_dim", 0, COUNT),
    ("dropout", 1.0, r"lie in \[0, 1\)"),
    ("enc_dim", 0, COUNT),
    ("mlp_dim", 16.0, COUNT),
    ("latent_dim", 0, COUNT),
    ("num_enc_layers", 0, COUNT),
    ("num_q", 0, COUNT),
    ("task_dim", 0, COUNT),
    ("task_dim", 8.0, COUNT),
    # SAC's action pipeline, which TD3 takes too
    ("action_pipeline", "guided", r"be an ActionPipelineConfig from make_action_pipeline\(\.\.\.\)"),
]
CASES = [
    pytest.param(name, argument, value, accepted, id=f"{name}-{argument}={value!r}")
    for name in sorted(AGENTS)
    for argument, value, accepted in MISTAKES
    if argument in AGENTS[name].hyperparameters.declared
]


@pytest.mark.parametrize(("name", "argument", "value", "accepted"), CASES)
def test_a_mistaken_argument_is_refused_by_name(name, argument, value, accepted):
    message = f"^{argument} must {accepted}, got {re.escape(repr(value))}\\.$"
    with pytest.raises(ValueError, match=message):
        AGENTS[name](env_of(name), **required(name), **{argument: value})


def numeric_arguments(agent: type) -> set[str]:
    """The keywords the agent declares as a count, a rate, a scale, a fraction or a Schedule."""
    declared = agent.hyperparameters.declared.items()
    return {name for name, entry in declared if re.match(r"integer|[([]", entry.accepts)}


def test_every_numeric_argument_of_every_agent_has_a_mistake_in_the_table():
    covered = {argument for argument, _, _ in MISTAKES}
    missing = sorted(f"{name}.{argument}" for name in AGENTS for argument in numeric_arguments(AGENTS[name]) - covered)
    assert not missing, f"no mistaken value in MISTAKES for {missing}"


@pytest.mark.parametrize(
    "name",
    [
        name
        if "env_params" in AGENTS[name].hyperparameters.declared
        else pytest.param(name, marks=pytest.mark.skip(reason="built on a dataset, its envs named by its tasks"))
        for name in sorted(AGENTS)
    ],
)
def test_an_env_class_or_another_envs_params_is_refused(name):
    other = "CartPole-v1" if env_of(name) == "Pendulum-v1" else "Pendulum-v1"
    with pytest.raises(TypeError, match=r"env_params is a \w+, but this env takes"):
        AGENTS[name](env_of(name), **required(name), env_params=make_env(other, None, False, True)[1])
    if not AGENTS[name].continuous:
        with pytest.raises(TypeError, match="pass an instance, e.g. CartPole()"):
            AGENTS[name](CartPole, **required(name))


@pytest.mark.parametrize("name", ["SAC", "TD3"])
def test_an_action_pipeline_for_another_env_or_memory_is_refused(name):
    other_env = make_action_pipeline(env_args=prepare_env("MountainCarContinuous-v0"))
    with pytest.raises(
        ValueError, match=f"made for MountainCarContinuous-v0 .*, but this {name} trains on Pendulum-v1"
    ):
        AGENTS[name]("Pendulum-v1", action_pipeline=other_env)
    with pytest.raises(ValueError, match="recurrent=True: it acts from the actor's memory, which this"):
        AGENTS[name]("Pendulum-v1", action_pipeline=make_action_pipeline(recurrent=True))
    with pytest.raises(ValueError, match="has memory= and acts from its actor's memory, but action_pipeline has"):
        AGENTS[name](
            "Pendulum-v1", memory=MemoryConfig(kind="gru", hidden_size=8), action_pipeline=make_action_pipeline()
        )


@pytest.mark.parametrize(
    ("seed", "match"),
    [
        (1.5, r"seed= takes integers in \[0, 2\*\*32\)"),
        ("42", r"seed= takes integers .* got '42'"),
        (-1, r"seed= takes integers"),
        (2**32, r"seed= takes integers"),
        ([0, True], r"seed= takes integers"),
        ([0, 1, 0], "seed= repeats a seed"),
        ([], "needs at least one seed"),
    ],
)
def test_seeds_must_be_distinct_integers(seed, match):
    agent = AGENTS["DQN"]("CartPole-v1")
    with pytest.raises(ValueError, match=match):
        agent.train(seed=seed, n_timesteps=10)


def test_integer_seeds_of_any_kind_are_read():
    from ajax.agents.base import checked_seeds

    assert (
        checked_seeds(np.arange(3)) == [0, 1, 2]
        and checked_seeds(np.int64(7)) == [7]
        and checked_seeds((4, 2)) == [4, 2]
    )


def flat_expert(obs):
    """The PD expert answering shape (n,) instead of (n, 1): would broadcast a loss to (n, n)."""
    return pd_expert(obs)[..., 0]


EXPERT_USERS = {
    "SAC": lambda expert: AGENTS["SAC"]("Pendulum-v1", expert_policy=expert),
    "TD3": lambda expert: AGENTS["TD3"]("Pendulum-v1", expert_policy=expert),
    "REDQ": lambda expert: AGENTS["REDQ"]("Pendulum-v1", expert_policy=expert),
    "TQC": lambda expert: AGENTS["TQC"]("Pendulum-v1", expert_policy=expert),
    "CrossQ": lambda expert: AGENTS["CrossQ"]("Pendulum-v1", expert_policy=expert),
    "AVG": lambda expert: AGENTS["AVG"]("Pendulum-v1", expert_policy=expert),
    "APO": lambda expert: AGENTS["APO"]("Pendulum-v1", expert_policy=expert),
    "PPO+ImitationLoss": lambda expert: AGENTS["PPO"]("Pendulum-v1", extensions=[ImitationLoss(expert)]),
    "collect_dataset": lambda expert: collect_dataset("Pendulum-v1", expert, 64),
}


@pytest.mark.parametrize("user", sorted(EXPERT_USERS))
def test_an_expert_answering_the_wrong_shape_is_refused(user):
    with pytest.raises(ValueError, match=r"answers 4 observations with a float32 array of shape \(4,\); .*Box of"):
        EXPERT_USERS[user](flat_expert)


def nan_expert(obs):
    """The PD expert divided by a gain that came out as zero: NaN torques, the right shape."""
    return pd_expert(obs) * jnp.nan


@pytest.mark.parametrize("user", sorted(EXPERT_USERS))
def test_an_expert_answering_nan_is_refused_at_construction_naming_its_keyword(user):
    keyword = {"PPO+ImitationLoss": "ImitationLoss's expert", "collect_dataset": "collect_dataset's expert"}
    named = keyword.get(user, "expert_policy=")
    with pytest.raises(ValueError, match=rf"^{named} \(nan_expert\) answers .*with a non-finite action"):
        EXPERT_USERS[user](nan_expert)


@pytest.mark.parametrize(
    ("expert", "error", "match"),
    [
        (lambda obs: cartpole_expert(obs).astype(jnp.float32), ValueError, r"must return integer indices of shape"),
        (lambda obs: cartpole_expert(obs)[:, None], ValueError, r"shape \(4, 1\); .*Discrete\(2\)"),
        (lambda obs: cartpole_expert(obs) + 1, ValueError, r"answered \[2\] on the env's first observations"),
        (lambda obs: obs["x"], TypeError, r"failed on a batch of observations of shape \(4, 4\)"),
    ],
    ids=["float-labels", "column-of-labels", "labels-from-1", "raises"],
)
def test_a_discrete_expert_must_answer_indices_of_the_action_set(expert, error, match):
    with pytest.raises(error, match=match):
        AGENTS["DAgger"]("CartPole-v1", expert_policy=expert)


class DeclaresTwoObservations(BestAction):
    """Emits the probe's one-number observation but declares two."""

    def observation_space(self, params):
        return spaces.Box(-1.0, 1.0, (2,))


class RewardPerAction(BestAction):
    """Answers a reward of shape (1,) where one env's step returns a scalar."""

    def reward(self, action):
        return super().reward(action).reshape(1)


# One agent of each family: replay, on-policy, incremental, imitation, offline.
CUSTOM_ENV_USERS = {
    "DQN": lambda env: AGENTS["DQN"](env),
    "PPO": lambda env: AGENTS["PPO"](env),
    "AVG": lambda env: AGENTS["AVG"](env),
    "DAgger": lambda env: AGENTS["DAgger"](env, expert_policy=lambda obs: jnp.zeros(obs.shape[0], jnp.int32)),
    "IQL": lambda env: AGENTS["IQL"](env, dataset=tiny_dataset()),
}


@pytest.mark.parametrize("name", sorted(CUSTOM_ENV_USERS))
def test_a_custom_envs_observations_must_match_its_declared_space(name):
    continuous = AGENTS[name].continuous is True
    with pytest.raises(ValueError, match=r"reset returns observations of shape \(1,\), but its observation_space"):
        CUSTOM_ENV_USERS[name](DeclaresTwoObservations(continuous=continuous))
    with pytest.raises(ValueError, match=r"returns a reward of shape \(1,\); .* must be a scalar"):
        CUSTOM_ENV_USERS[name](RewardPerAction(continuous=continuous))


def zero_state(agent, n_seeds: int = 2):
    """A state shaped like `agent`'s own, of zeros: what `state_mismatch` reads, without compiling a run."""
    run = RunSettings(0, 0, 0)
    shapes = agent._skeleton(agent.get_make_train()(run=run), run, n_seeds)
    return jax.tree.map(lambda leaf: jnp.zeros(leaf.shape, leaf.dtype), shapes)


RESUME_MISMATCHES = {
    "another-agent": (
        lambda: AGENTS["SAC"]("Pendulum-v1"),
        lambda: AGENTS["TD3"]("Pendulum-v1"),
        {},
        "another agent made it",
    ),
    "another-architecture": (
        lambda: AGENTS["TD3"]("Pendulum-v1", actor_architecture=("32", "relu")),
        lambda: AGENTS["TD3"]("Pendulum-v1", actor_architecture=("64", "relu")),
        {},
        r"actor_state\.params\..* \(the actor's architecture differs\)",
    ),
    "another-env": (  # three actions each: the env differs, the action space not
        lambda: AGENTS["PPO"]("Acrobot-v1"),
        lambda: AGENTS["PPO"]("MountainCar-v0"),
        {},
        r"collector_state\..* \(the environment or n_envs differs\)",
    ),
    "another-action-space": (
        lambda: AGENTS["PPO"]("Pendulum-v1"),
        lambda: AGENTS["PPO"]("CartPole-v1"),
        {},
        "the state was made for continuous actions of size 1; this agent's env has 2 discrete actions",
    ),
    "another-action-count": (
        lambda: AGENTS["DQN"]("CartPole-v1", buffer_size=1_000),
        lambda: AGENTS["DQN"]("Acrobot-v1", buffer_size=1_000),
        {},
        "the state was made for 2 discrete actions; this agent's env has 3 discrete actions",
    ),
    "memory-into-none": (
        lambda: AGENTS["PPO"]("CartPole-v1", memory={"kind": "gru", "hidden_size": 8}),
        lambda: AGENTS["PPO"]("CartPole-v1"),
        {},
        "the state was made by an agent with memory of kind 'gru'; this one has none",
    ),
    "no-memory-into-memory": (
        lambda: AGENTS["TD3"]("Pendulum-v1", buffer_size=1_000),
        lambda: AGENTS["TD3"]("Pendulum-v1", buffer_size=1_000, memory={"kind": "lstm", "hidden_size": 8}),
        {},
        "the state was made by an agent without memory; this one has memory of kind 'lstm'",
    ),
    "more-seeds": (
        lambda: AGENTS["AVG"]("Pendulum-v1"),
        lambda: AGENTS["AVG"]("Pendulum-v1"),
        {"seed": [0, 1, 2]},
        "it holds 2 seeds, and seed= names 3",
    ),
    "another-offline-agent": (
        lambda: AGENTS["DAgger"]("CartPole-v1", expert_policy=cartpole_expert),
        lambda: AGENTS["IQL"]("Pendulum-v1", dataset=tiny_dataset()),
        {},
        "another agent made it",
    ),
}


@pytest.mark.parametrize("case", sorted(RESUME_MISMATCHES))
def test_a_resumed_state_made_differently_is_refused_naming_the_difference(case):
    maker, resumer, arguments, match = RESUME_MISMATCHES[case]
    with pytest.raises(ValueError, match=f"initial_state does not fit this .*: .*{match}"):
        resumer().train(initial_state=zero_state(maker()), n_timesteps=0, **arguments)


def test_a_state_resumed_by_its_own_kind_of_agent_passes_the_check():
    from ajax.agents.base import state_mismatch

    state = zero_state(AGENTS["TD3"]("Pendulum-v1"))
    run = RunSettings(0, 0, 0)
    twin = AGENTS["TD3"]("Pendulum-v1")
    assert state_mismatch(state, twin._skeleton(twin.get_make_train()(run=run), run, 2)) is None
