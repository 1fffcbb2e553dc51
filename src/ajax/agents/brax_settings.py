"""A Brax trainer's configuration, or MuJoCo Playground's written in Brax's keys, as Ajax's keywords.

docs/brax.md tables every key of brax 0.14.2's `ppo.train` and `sac.train` against Ajax's
keywords; these functions are that table in code, so a published configuration builds the
agent it describes without a hand translation in between: `PPO(env, **run.keywords)`, then
`agent.train(**run.train_keywords())`. A key Ajax has no counterpart for is refused when it is
set away from Brax's default (a value clip, an adaptive-KL schedule, domain randomisation),
naming the key; keys that only steer Brax's own loop (`progress_fn`, `num_resets_per_eval`,
pmap on reset) are read and dropped.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from flax.linen.initializers import lecun_uniform

# brax 0.14.2's defaults for the keys read here (`ppo.train`, `sac.train` and their network
# factories' signatures; tests/agents/test_brax_config.py holds them to the installed brax).
PPO_DEFAULTS: dict[str, Any] = {
    "num_envs": 1,
    "episode_length": None,
    "action_repeat": 1,
    "learning_rate": 1e-4,
    "entropy_cost": 1e-4,
    "discounting": 0.9,
    "unroll_length": 10,
    "batch_size": 32,
    "num_minibatches": 16,
    "num_updates_per_batch": 2,
    "normalize_observations": False,
    "reward_scaling": 1.0,
    "clipping_epsilon": 0.3,
    "gae_lambda": 0.95,
    "max_grad_norm": None,
    "normalize_advantage": True,
    "vf_loss_coefficient": 0.5,
    "bootstrap_on_timeout": False,
    "seed": 0,
    "num_evals": 1,
    "num_eval_envs": 128,
}
PPO_NETWORKS: dict[str, Any] = {"policy_hidden_layer_sizes": (32,) * 4, "value_hidden_layer_sizes": (256,) * 5}
SAC_DEFAULTS: dict[str, Any] = {
    "num_envs": 1,
    "episode_length": None,
    "action_repeat": 1,
    "learning_rate": 1e-4,
    "discounting": 0.9,
    "batch_size": 256,
    "normalize_observations": False,
    "reward_scaling": 1.0,
    "tau": 0.005,
    "min_replay_size": 0,
    "max_replay_size": None,
    "grad_updates_per_step": 1,
    "seed": 0,
    "num_evals": 1,
    "num_eval_envs": 128,
}
SAC_NETWORKS: dict[str, Any] = {"hidden_layer_sizes": (256, 256)}
# Brax's temperature: its own Adam at 3e-4 (sac/train.py), towards an entropy of -action_size / 2 (sac/losses.py).
SAC_ALPHA_LEARNING_RATE = 3e-4
SAC_TARGET_ENTROPY_PER_ACTION = -0.5

# Keys that steer Brax's own loop, its logging or its devices, with nothing to set in Ajax
# (docs/brax.md says what stands for each).
LOOP_KEYS = frozenset(
    {
        "environment",
        "wrap_env",
        "wrap_env_fn",
        "progress_fn",
        "policy_params_fn",
        "use_pmap_on_reset",
        "num_resets_per_eval",
        "max_devices_per_host",
        "log_training_metrics",
        "training_metrics_steps",
        "deterministic_eval",
        "run_evals",
        "save_checkpoint_path",
        "checkpoint_logdir",
        "normalize_observations_std_eps",
        "normalize_observations_mode",
        "desired_kl",
        "learning_rate_schedule_min_lr",
        "learning_rate_schedule_max_lr",
    }
)
# Keys with no Ajax counterpart, refused unless at the value that leaves them off.
UNAVAILABLE = {
    "vision": (False, "image observations go through encoder= (docs/observations.md)"),
    "augment_pixels": (False, "Ajax has no random pixel shifts"),
    "randomization_fn": (None, "pass an env that randomises its own parameters at reset"),
    "eval_env": (None, "Ajax evaluates on the training env"),
    "normalize_until_count": (None, "Ajax's observation statistics keep updating"),
    "clipping_epsilon_value": (None, "Ajax's PPO value loss is unclipped"),
    "use_distributional_critic": (False, "Ajax's PPO critic is a scalar value"),
    "learning_rate_schedule": (None, "give a schedule as the learning rate (ajax.schedule); no adaptive KL"),
    "restore_checkpoint_path": (None, "resume with train(initial_state=...) (docs/checkpoints.md)"),
    "restore_params": (None, "resume with train(initial_state=...)"),
    "restore_value_fn": (True, "a resumed state restores both networks"),
}


@dataclass(frozen=True)
class BraxRun:
    """One Brax configuration as Ajax's: the agent's keywords and its `train` call's."""

    keywords: dict[str, Any]
    n_timesteps: int
    seed: int
    num_episode_test: int
    # Steps between evaluations: Brax evaluates once before training and num_evals - 1 times over it (0: none).
    log_frequency: int = 0

    def train_keywords(self) -> dict[str, Any]:
        """`agent.train`'s budget, seed and evaluation episodes (a LoggingConfig at `log_frequency` adds the
        evaluations themselves)."""
        return {"n_timesteps": self.n_timesteps, "seed": self.seed, "num_episode_test": self.num_episode_test}


def ppo_from_brax(config: Mapping[str, Any]) -> BraxRun:
    """Brax's `ppo.train` keywords (a Playground `brax_ppo_config`, a notebook's `train_fn`) as PPO's.

    Brax's batch counts segments of `unroll_length` steps and collects `batch_size *
    num_minibatches` of them between updates, so each env copy runs `batch_size *
    num_minibatches * unroll_length / num_envs` steps a rollout (Ajax's `n_steps`), and its
    value loss halves the squared error (`vf_coef = vf_loss_coefficient / 2`).
    """
    given = _read(config, PPO_DEFAULTS, "ppo.train")
    networks = _networks(given.pop("network_factory", None), PPO_NETWORKS, "ppo")
    n_envs, unroll, segments = given["num_envs"], given["unroll_length"], given["batch_size"]
    per_update = segments * given["num_minibatches"] * unroll
    if per_update % n_envs:
        raise ValueError(
            f"Brax's batch_size * num_minibatches * unroll_length = {segments} * {given['num_minibatches']} * "
            f"{unroll} = {per_update} steps an update does not split over num_envs={n_envs} copies: Ajax's "
            "rollout is the same number of steps for every copy."
        )
    keywords = {
        "n_envs": n_envs,
        "n_steps": per_update // n_envs,
        "unroll_length": unroll,
        "n_minibatches": given["num_minibatches"],
        "n_epochs": given["num_updates_per_batch"],
        "gamma": given["discounting"],
        "gae_lambda": given["gae_lambda"],
        "clip_range": given["clipping_epsilon"],
        "ent_coef": given["entropy_cost"],
        "vf_coef": given["vf_loss_coefficient"] / 2,
        "reward_scaling": given["reward_scaling"],
        "normalize_observations": given["normalize_observations"],
        "normalize_advantage": given["normalize_advantage"],
        "actor_learning_rate": given["learning_rate"],
        "critic_learning_rate": given["learning_rate"],
        "shared_optimizer": True,
        "max_grad_norm": given["max_grad_norm"],
        "bootstrap_on_truncation": given["bootstrap_on_timeout"],
        "advantage_estimator": "vtrace",
        "policy_distribution": "tanh_gaussian",
        "actor_architecture": _layers(networks["policy_hidden_layer_sizes"], "swish"),
        "critic_architecture": _layers(networks["value_hidden_layer_sizes"], "swish"),
        "encoder_kernel_init": lecun_uniform(),
        "mean_kernel_init": lecun_uniform(),
        **_env_keywords(given),
    }
    return _run(keywords, given)


def sac_from_brax(config: Mapping[str, Any], action_dim: int) -> BraxRun:
    """Brax's `sac.train` keywords as SAC's, for an env of `action_dim` actions (Brax's temperature
    aims at an entropy of -action_dim / 2).

    Brax takes `grad_updates_per_step` updates after each step of all its copies: Ajax's
    `gradient_steps` with `train_freq=1`. Its `max_replay_size` of None holds the whole budget.
    """
    given = _read(config, SAC_DEFAULTS, "sac.train")
    networks = _networks(given.pop("network_factory", None), SAC_NETWORKS, "sac")
    layers = _layers(networks["hidden_layer_sizes"], "relu")
    keywords = {
        "n_envs": given["num_envs"],
        "gamma": given["discounting"],
        "tau": given["tau"],
        "batch_size": given["batch_size"],
        "buffer_size": given["max_replay_size"] or given["num_timesteps"],
        "learning_starts": given["min_replay_size"],
        "train_freq": 1,
        "gradient_steps": given["grad_updates_per_step"],
        "reward_scaling": given["reward_scaling"],
        "normalize_observations": given["normalize_observations"],
        "actor_learning_rate": given["learning_rate"],
        "critic_learning_rate": given["learning_rate"],
        "alpha_learning_rate": SAC_ALPHA_LEARNING_RATE,
        "target_entropy": SAC_TARGET_ENTROPY_PER_ACTION * action_dim,
        "actor_architecture": layers,
        "critic_architecture": layers,
        **_env_keywords(given),
    }
    return _run(keywords, given)


def _read(config: Mapping[str, Any], defaults: dict[str, Any], trainer: str) -> dict[str, Any]:
    """`config` over Brax's defaults, its loop keys dropped; an unknown key, or one Ajax cannot
    follow set away from Brax's default, refused by name."""
    config = config.to_dict() if hasattr(config, "to_dict") else dict(config)
    for key, value in config.items():
        if key in UNAVAILABLE:
            off, why = UNAVAILABLE[key]
            if value != off:
                raise ValueError(f"Brax's {key}={value!r} has no Ajax counterpart ({why}); leave it at {off!r}.")
        elif key not in defaults and key not in LOOP_KEYS and key not in ("num_timesteps", "network_factory"):
            raise ValueError(f"{key!r} is not a keyword of brax's {trainer} that Ajax maps (docs/brax.md lists them).")
    if "num_timesteps" not in config:
        raise ValueError(f"The {trainer} configuration needs num_timesteps, the run's budget.")
    return {**defaults, **{key: value for key, value in config.items() if key not in LOOP_KEYS | UNAVAILABLE.keys()}}


def _networks(factory: Any, defaults: dict[str, Any], agent: str) -> dict[str, Any]:
    """The layer sizes of a Playground `network_factory` entry (a mapping of the factory's
    keywords) over Brax's defaults; a callable factory cannot be read."""
    if factory is None:
        return dict(defaults)
    if callable(factory):
        raise ValueError(
            f"network_factory is a function; give {agent}'s layer sizes as a mapping of the factory's keywords "
            f"({', '.join(defaults)}), as Playground's configs do."
        )
    factory = factory.to_dict() if hasattr(factory, "to_dict") else dict(factory)
    obs_keys = {factory.pop(key, "state") for key in ("policy_obs_key", "value_obs_key")}
    if obs_keys != {"state"}:
        raise ValueError(
            f"network_factory reads observation keys {sorted(obs_keys)}: an actor and a critic on different "
            "observations (Playground's privileged critic) is not available in Ajax."
        )
    unknown = set(factory) - set(defaults)
    if unknown:
        raise ValueError(f"network_factory sets {sorted(unknown)}; Ajax maps only {sorted(defaults)} of it.")
    return {**defaults, **factory}


def _env_keywords(given: dict[str, Any]) -> dict[str, Any]:
    keywords = {"action_repeat": given["action_repeat"]}
    if given["episode_length"] is not None:
        keywords["episode_length"] = given["episode_length"]
    return keywords


def _run(keywords: dict[str, Any], given: dict[str, Any]) -> BraxRun:
    n_timesteps, n_evals = int(given["num_timesteps"]), int(given["num_evals"])
    return BraxRun(
        keywords,
        n_timesteps=n_timesteps,
        seed=int(given["seed"]),
        num_episode_test=int(given["num_eval_envs"]),
        log_frequency=n_timesteps // (n_evals - 1) if n_evals > 1 else 0,
    )


def _layers(sizes: Any, activation: str) -> tuple[str, ...]:
    return tuple(part for size in sizes for part in (str(int(size)), activation))
