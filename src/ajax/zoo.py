"""Tuned hyperparameters: the RL Baselines3 Zoo's, read into Ajax's arguments.

Each entry holds the Zoo's numbers in the Zoo's own names (hyperparams/<algo>.yml, on top of
Stable-Baselines3's defaults for that algorithm), so that a reader can check them against the
file line by line; `Preset.kwargs` translates them into the agent's constructor arguments.
Where Ajax has no equivalent of a Zoo setting (gSDE exploration, an initial log-std, a
learning rate annealed to zero), the preset says so in `differences` instead of pretending.

    agent = DQN.from_zoo("CartPole-v1")                  # the Zoo's tuned DQN
    agent.train(seed=[0, 1], n_timesteps=zoo.preset("DQN", "CartPole-v1").n_timesteps)
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from ajax.schedule import linear

# What Stable-Baselines3's SAC and TD3 share by default.
ACTOR_CRITIC_DEFAULTS: Mapping[str, Any] = {
    "n_envs": 1,
    "buffer_size": 1_000_000,
    "learning_starts": 100,
    "batch_size": 256,
    "tau": 0.005,
    "gamma": 0.99,
    "train_freq": 1,
    "gradient_steps": 1,
    "net_arch": (256, 256),
}
# Stable-Baselines3's constructor defaults (and its MlpPolicy's layers), which a Zoo entry
# overrides; only the settings Ajax's agents can express.
SB3_DEFAULTS: Mapping[str, Mapping[str, Any]] = {
    "DQN": {
        "n_envs": 1,
        "learning_rate": 1e-4,
        "buffer_size": 1_000_000,
        "learning_starts": 100,
        "batch_size": 32,
        "tau": 1.0,
        "gamma": 0.99,
        "train_freq": 4,
        "gradient_steps": 1,
        "target_update_interval": 10_000,
        "exploration_fraction": 0.1,
        "exploration_initial_eps": 1.0,
        "exploration_final_eps": 0.05,
        "max_grad_norm": 10.0,
        "net_arch": (64, 64),
    },
    "SAC": {**ACTOR_CRITIC_DEFAULTS, "learning_rate": 3e-4, "ent_coef": "auto", "use_sde": False, "log_std_init": -3.0},
    "TD3": {
        **ACTOR_CRITIC_DEFAULTS,
        "learning_rate": 1e-3,
        "policy_delay": 2,
        "target_policy_noise": 0.2,
        "target_noise_clip": 0.5,
        "noise_std": 0.1,
    },
    # sb3-contrib's TQC: SAC's defaults with 2 critics of 25 quantiles, 2 dropped per critic.
    "TQC": {
        **ACTOR_CRITIC_DEFAULTS,
        "learning_rate": 3e-4,
        "ent_coef": "auto",
        "use_sde": False,
        "log_std_init": -3.0,
        "n_critics": 2,
        "n_quantiles": 25,
        "top_quantiles_to_drop_per_net": 2,
    },
    # sb3-contrib's CrossQ: no tau (no target critics), the actor every 3rd update, Adam's b1 0.5,
    # batch renormalisation at momentum 0.99 (its 0.01 in Torch's convention), and narrower
    # critics than the paper's: 1024-1024.
    "CrossQ": {
        **{name: value for name, value in ACTOR_CRITIC_DEFAULTS.items() if name not in ("tau", "net_arch")},
        "learning_rate": 1e-3,
        "ent_coef": "auto",
        "policy_delay": 3,
        "net_arch": {"pi": (256, 256), "qf": (1024, 1024)},
    },
    "PPO": {
        "n_envs": 1,
        "learning_rate": 3e-4,
        "n_steps": 2048,
        "batch_size": 64,
        "n_epochs": 10,
        "gamma": 0.99,
        "gae_lambda": 0.95,
        "clip_range": 0.2,
        "ent_coef": 0.0,
        "vf_coef": 0.5,
        "max_grad_norm": 0.5,
        "normalize": False,
        "net_arch": (64, 64),
    },
}
# The activation of SB3's MlpPolicy for each algorithm.
ACTIVATION = {"DQN": "relu", "SAC": "relu", "TD3": "relu", "TQC": "relu", "CrossQ": "relu", "PPO": "tanh"}


@dataclass(frozen=True)
class Preset:
    """One (agent, env) entry: the Zoo's settings, its budget and the published result."""

    agent: str
    env_id: str
    n_timesteps: int
    zoo: Mapping[str, Any]  # the Zoo entry's own settings, in its names
    published: float | None = None  # the Zoo benchmark's mean return at n_timesteps
    differences: tuple[str, ...] = ()  # Zoo settings Ajax cannot express, and what it does instead

    @property
    def settings(self) -> dict[str, Any]:
        """Stable-Baselines3's defaults with the Zoo's settings over them, in the Zoo's names."""
        return {**SB3_DEFAULTS[self.agent], **self.zoo}

    @property
    def kwargs(self) -> dict[str, Any]:
        """The agent's constructor arguments that reproduce the settings."""
        return TRANSLATIONS[self.agent](self.settings, self.n_timesteps)


def _architecture(net_arch: tuple[int, ...], activation: str) -> tuple[str, ...]:
    return tuple(item for width in net_arch for item in (str(width), activation))


def _annealed(value: Any) -> float:
    """A Zoo `lin_x` (x at the start, 0 at the end) read as its starting value."""
    return float(value.removeprefix("lin_")) if isinstance(value, str) else float(value)


def _dqn(settings: dict[str, Any], n_timesteps: int) -> dict[str, Any]:
    kwargs = {name: settings[name] for name in SB3_DEFAULTS["DQN"] if name != "net_arch"}
    return {**kwargs, "architecture": _architecture(settings["net_arch"], ACTIVATION["DQN"])}


def _sac(settings: dict[str, Any], n_timesteps: int) -> dict[str, Any]:
    rate, ent_coef = settings["learning_rate"], settings["ent_coef"]
    learned = isinstance(ent_coef, str)  # "auto" or "auto_<init>": a learned temperature
    architecture = _architecture(settings["net_arch"], ACTIVATION["SAC"])
    shared = ("n_envs", "buffer_size", "learning_starts", "batch_size", "tau", "gamma", "train_freq", "gradient_steps")
    return {
        **{name: settings[name] for name in shared},
        "actor_learning_rate": rate,
        "critic_learning_rate": rate,
        "alpha_learning_rate": rate,
        "learn_alpha": learned,
        "alpha_init": float(ent_coef.split("_")[1]) if learned and "_" in ent_coef else (1.0 if learned else ent_coef),
        "actor_architecture": architecture,
        "critic_architecture": architecture,
        "use_sde": bool(settings["use_sde"]),
        **({"log_std_init": float(settings["log_std_init"])} if settings["use_sde"] else {}),
    }


def _tqc(settings: dict[str, Any], n_timesteps: int) -> dict[str, Any]:
    quantiles = ("n_critics", "n_quantiles", "top_quantiles_to_drop_per_net")
    return {**_sac(settings, n_timesteps), **{name: settings[name] for name in quantiles}}


def _crossq(settings: dict[str, Any], n_timesteps: int) -> dict[str, Any]:
    """SAC's translation without tau and gSDE, which CrossQ does not take, and with its own
    actor and critic widths (a Zoo `net_arch` list sets both)."""
    net_arch = settings["net_arch"]
    actor, critic = (net_arch["pi"], net_arch["qf"]) if isinstance(net_arch, Mapping) else (net_arch, net_arch)
    kwargs = _sac({**settings, "tau": None, "use_sde": False, "net_arch": actor}, n_timesteps)
    return {
        **{name: value for name, value in kwargs.items() if name not in ("tau", "use_sde")},
        "critic_architecture": _architecture(critic, ACTIVATION["CrossQ"]),
        "policy_delay": settings["policy_delay"],
    }


def _td3(settings: dict[str, Any], n_timesteps: int) -> dict[str, Any]:
    architecture = _architecture(settings["net_arch"], ACTIVATION["TD3"])
    skipped = ("learning_rate", "noise_std", "net_arch")
    return {
        **{name: value for name, value in settings.items() if name not in skipped},
        "actor_learning_rate": settings["learning_rate"],
        "critic_learning_rate": settings["learning_rate"],
        "exploration_noise": settings["noise_std"],
        "actor_architecture": architecture,
        "critic_architecture": architecture,
    }


def _ppo(settings: dict[str, Any], n_timesteps: int) -> dict[str, Any]:
    architecture = _architecture(settings["net_arch"], ACTIVATION["PPO"])
    clip = settings["clip_range"]
    shared = ("n_envs", "n_steps", "batch_size", "n_epochs", "gamma", "gae_lambda", "ent_coef", "vf_coef")
    return {
        **{name: settings[name] for name in shared},
        "max_grad_norm": float(settings["max_grad_norm"]),
        "actor_learning_rate": _annealed(settings["learning_rate"]),
        "critic_learning_rate": _annealed(settings["learning_rate"]),
        # The Zoo's lin_x clip falls from x to 0 over the run: over the preset's budget here.
        "clip_range": linear(_annealed(clip), 0.0, n_timesteps) if isinstance(clip, str) else clip,
        "normalize_observations": bool(settings["normalize"]),
        "normalize_rewards": bool(settings["normalize"]),
        "actor_architecture": architecture,
        "critic_architecture": architecture,
    }


TRANSLATIONS = {"DQN": _dqn, "SAC": _sac, "TD3": _td3, "TQC": _tqc, "CrossQ": _crossq, "PPO": _ppo}

# The Zoo's MountainCarContinuous-v0 entry, the same in sac.yml and tqc.yml: gSDE, a fixed temperature.
SOFT_MOUNTAIN_CAR: Mapping[str, Any] = {
    "learning_rate": 3e-4,
    "buffer_size": 50_000,
    "batch_size": 512,
    "ent_coef": 0.1,
    "train_freq": 32,
    "gradient_steps": 32,
    "gamma": 0.9999,
    "tau": 0.01,
    "learning_starts": 0,
    "use_sde": True,
    "log_std_init": -3.67,
    "net_arch": (64, 64),
}
ANNEALED_RATE = "learning_rate lin_{x}: held at {x} (the preset keeps the Zoo's rate constant)"
NO_GSDE = "use_sde: Ajax's PPO explores with a state-independent Gaussian noise, not gSDE"

PRESETS: Mapping[tuple[str, str], Preset] = MappingProxyType(
    {
        (preset.agent, preset.env_id): preset
        for preset in (
            Preset(
                "DQN",
                "CartPole-v1",
                50_000,
                {
                    "learning_rate": 2.3e-3,
                    "batch_size": 64,
                    "buffer_size": 100_000,
                    "learning_starts": 1000,
                    "gamma": 0.99,
                    "target_update_interval": 10,
                    "train_freq": 256,
                    "gradient_steps": 128,
                    "exploration_fraction": 0.16,
                    "exploration_final_eps": 0.04,
                    "net_arch": (256, 256),
                },
                published=500.0,
            ),
            Preset(
                "DQN",
                "Acrobot-v1",
                100_000,
                {
                    "learning_rate": 6.3e-4,
                    "batch_size": 128,
                    "buffer_size": 50_000,
                    "learning_starts": 0,
                    "gamma": 0.99,
                    "target_update_interval": 250,
                    "train_freq": 4,
                    "gradient_steps": -1,
                    "exploration_fraction": 0.12,
                    "exploration_final_eps": 0.1,
                    "net_arch": (256, 256),
                },
                published=-77.0,
            ),
            Preset(
                "DQN",
                "MountainCar-v0",
                120_000,
                {
                    "learning_rate": 4e-3,
                    "batch_size": 128,
                    "buffer_size": 10_000,
                    "learning_starts": 1000,
                    "gamma": 0.98,
                    "target_update_interval": 600,
                    "train_freq": 16,
                    "gradient_steps": 8,
                    "exploration_fraction": 0.2,
                    "exploration_final_eps": 0.07,
                    "net_arch": (256, 256),
                },
            ),
            Preset("SAC", "Pendulum-v1", 20_000, {"learning_rate": 1e-3}, published=-157.0),
            Preset(
                "SAC",
                "MountainCarContinuous-v0",
                50_000,
                SOFT_MOUNTAIN_CAR,
                published=95.0,
            ),
            Preset(
                "TD3",
                "Pendulum-v1",
                20_000,
                {
                    "gamma": 0.98,
                    "buffer_size": 200_000,
                    "learning_starts": 10_000,
                    "noise_std": 0.1,
                    "gradient_steps": 1,
                    "train_freq": 1,
                    "learning_rate": 1e-3,
                    "net_arch": (400, 300),
                },
                published=-152.0,
            ),
            # sb3-contrib's TQC in the Zoo (tqc.yml and benchmark.md at commit 22e3ff2).
            Preset("TQC", "Pendulum-v1", 20_000, {"learning_rate": 1e-3}, published=-151.3),
            Preset(
                "TQC",
                "MountainCarContinuous-v0",
                50_000,
                SOFT_MOUNTAIN_CAR,
                published=63.6,
            ),
            # sb3-contrib's CrossQ in the Zoo (crossq.yml at commit 22e3ff2; benchmark.md has no row).
            # Its MountainCarContinuous entry explores with gSDE, which CrossQ does not take here.
            Preset("CrossQ", "Pendulum-v1", 20_000, {"policy_delay": 2, "net_arch": (256, 256)}),
            Preset(
                "PPO",
                "CartPole-v1",
                100_000,
                {
                    "n_envs": 8,
                    "n_steps": 32,
                    "batch_size": 256,
                    "gae_lambda": 0.8,
                    "gamma": 0.98,
                    "n_epochs": 20,
                    "ent_coef": 0.0,
                    "learning_rate": "lin_0.001",
                    "clip_range": "lin_0.2",
                },
                published=500.0,
                differences=(ANNEALED_RATE.format(x=0.001),),
            ),
            Preset(
                "PPO",
                "Pendulum-v1",
                100_000,
                {
                    "n_envs": 4,
                    "n_steps": 1024,
                    "gae_lambda": 0.95,
                    "gamma": 0.9,
                    "n_epochs": 10,
                    "ent_coef": 0.0,
                    "learning_rate": 1e-3,
                    "clip_range": 0.2,
                },
                published=-172.0,
                differences=(NO_GSDE,),
            ),
            Preset(
                "PPO",
                "Acrobot-v1",
                1_000_000,
                {"normalize": True, "n_envs": 16, "n_steps": 256, "gae_lambda": 0.94, "gamma": 0.99, "n_epochs": 4},
            ),
            Preset(
                "PPO",
                "MountainCar-v0",
                1_000_000,
                {"normalize": True, "n_envs": 16, "n_steps": 16, "gae_lambda": 0.98, "gamma": 0.99, "n_epochs": 4},
            ),
        )
    }
)


def preset(agent: str, env_id: str) -> Preset:
    """The preset for `agent` on `env_id`; an unknown pair is refused with the ones that exist."""
    if (agent, env_id) in PRESETS:
        return PRESETS[(agent, env_id)]
    envs = [env for name, env in PRESETS if name == agent]
    if not envs:
        agents = sorted({name for name, _ in PRESETS})
        raise ValueError(f"The Zoo has no presets for {agent}; presets exist for {', '.join(agents)}.")
    close = difflib.get_close_matches(env_id, envs, n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    raise ValueError(f"No Zoo preset for {agent} on {env_id!r}.{hint} {agent}'s presets: {', '.join(envs)}.")
