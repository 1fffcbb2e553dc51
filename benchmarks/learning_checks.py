"""The learning table: every agent trained to a published budget (or its own calibrated one).

Each check trains one agent on one task for its budget on several seeds (one compiled
program, the seeds vmapped), evaluates every `budget // 10` steps and once more where the
run ends, each time with `num_episode_test` greedy episodes, and appends one JSON line: the
settings, each seed's final evaluation, their mean and spread, the curve (each seed's return
and their mean per evaluation), the scores that do not hinge on the last evaluation (each
seed's mean of its last three evaluations, their mean, their interquartile mean and its 95%
bootstrap interval over seeds, as `intervals.py` defines them) and the published number beside
it. Rows written before the per-seed curve was kept have no interquartile mean: the table
says "not recorded" for them.
The Zoo rows use `ajax.zoo`'s presets; an agent the Zoo does not cover runs the settings of its
calibrated learning test (tests/agents/), which its page under docs/agents/ describes. Each row
names the machine it ran on; `results_page.py` writes the rows and their curves into
docs/results.md.

    JAX_PLATFORMS=cpu python benchmarks/learning_checks.py --out benchmarks/learning_checks.jsonl
    python benchmarks/learning_checks.py --only DQN:CartPole-v1 --seeds 5 --out runs/dqn.jsonl
    python benchmarks/learning_checks.py --only TDMPC2:Pendulum-v1 --settings "size 1, full planner" --seeds 3
    python benchmarks/learning_checks.py --table benchmarks/learning_checks.jsonl
    python benchmarks/results_page.py     # docs/results.md and its figures, from the rows
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnax
import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ajax import zoo  # noqa: E402
from ajax.agents.registry import AGENTS  # noqa: E402
from ajax.buffers import collect_dataset  # noqa: E402
from ajax.environments.controllers import cartpole_push, pendulum_swing_up  # noqa: E402
from ajax.environments.create import make_env  # noqa: E402
from ajax.environments.model_reference import (  # noqa: E402
    LinearReferenceModel,
    ModelReferenceWrapper,
    StepReference,
)
from ajax.logging.wandb_logging import LoggingConfig  # noqa: E402
from ajax.schedule import linear  # noqa: E402
from ajax.wrappers import InitialStateWrapper, WithoutActionMask  # noqa: E402
from intervals import learning_summary  # noqa: E402
from results_page import markdown_table, read_rows  # noqa: E402

RETURN = "Eval/episodic mean reward"
RELU64 = ("64", "relu", "64", "relu")
TANH64 = ("64", "tanh", "64", "tanh")
RELU256 = ("256", "relu", "256", "relu")
RATES = ("actor_learning_rate", "critic_learning_rate", "alpha_learning_rate")
# CrossQ at the paper's settings but for a 256-unit critic and learning from step 1,000.
CROSSQ_256 = {"critic_architecture": RELU256, "learning_starts": 1_000}
NETS256 = {"actor_architecture": RELU256, "critic_architecture": RELU256, "learning_starts": 1_000}
BRAX_SIDE_BY_SIDE = {
    "SAC": {**NETS256, **dict.fromkeys(RATES, 1e-3)},
    "TQC": {**NETS256, "n_critics": 2, **dict.fromkeys(RATES, 1e-3)},
    "CrossQ": CROSSQ_256,
}


@dataclass(frozen=True)
class Check:
    """One row of the table: an agent, a task, its settings and budget, and what to expect."""

    agent: str
    env_id: str
    n_timesteps: int
    settings: str  # "zoo" for the preset, else a word for where the settings come from
    kwargs: Callable[[], dict[str, Any]] = field(default=dict, repr=False)
    published: float | None = None
    target: float | None = None  # the bar: the mean of the final evaluations at least this
    env: Callable[[], Any] | None = field(default=None, repr=False)  # a task object, where env_id only names it

    @property
    def name(self) -> str:
        return f"{self.agent}:{self.env_id}"

    def build(self) -> Any:
        if self.settings == "zoo":
            return AGENTS[self.agent].from_zoo(self.env_id, **self.kwargs())
        return AGENTS[self.agent](self.env() if self.env is not None else self.env_id, **self.kwargs())


def pendulum_tracking() -> Any:
    """APG's tracking task (docs/agents/apg.md): the pendulum starts hanging and its angle from
    there follows a first-order reference model towards a 0.5 rad step, over 100-step episodes."""
    plant, _ = gymnax.make("Pendulum-v1")
    plant = InitialStateWrapper(plant, lambda key, state, _: state.replace(theta=jnp.asarray(jnp.pi), theta_dot=0.0))
    return ModelReferenceWrapper(
        plant,
        StepReference(horizon=100, min_value=0.5, max_value=0.5, min_duration=100, max_duration=100),
        LinearReferenceModel.first_order(a=0.9, b=0.1, c=1.0, d=0.0),
        output_fn=lambda obs: jnp.arctan2(-obs[1], -obs[0]),
    )


MINATAR_BUDGET = 2_000_000


def minatar_pqn(budget: int) -> dict[str, Any]:
    """purejaxql's PQN settings for MinAtar, with the learning rate's fall fitted to `budget`."""
    n_envs, n_steps, n_epochs, n_minibatches = 128, 32, 2, 32
    updates = budget // (n_envs * n_steps) * n_epochs * n_minibatches
    return {
        "encoder": "minatar_cnn",
        "architecture": (),
        "n_envs": n_envs,
        "n_steps": n_steps,
        "n_epochs": n_epochs,
        "n_minibatches": n_minibatches,
        "learning_rate": linear(5e-4, 0.0, updates),
        "max_grad_norm": 10.0,
        "exploration_fraction": 1_000_000 / budget,
    }


KNAPSACK_BUDGET = 200_000
KNAPSACK_PPO = {"n_envs": 16, "n_steps": 64}


PPO_MINATAR_BUDGET = 1_000_000


def minatar_ppo() -> dict[str, Any]:
    """gymnax-blines' PPO settings for MinAtar (64 envs x 128 steps, 4 epochs of 8 minibatches,
    learning rate 5e-4, gamma 0.999, entropy 0.01), through MinAtar's network instead of its MLP."""
    return {
        "encoder": "minatar_cnn",
        "actor_architecture": (),
        "critic_architecture": (),
        "n_envs": 64,
        "n_steps": 128,
        "batch_size": 64 * 128 // 8,
        "n_epochs": 4,
        "actor_learning_rate": 5e-4,
        "critic_learning_rate": 5e-4,
        "gamma": 0.999,
        "gae_lambda": 0.95,
        "clip_range": 0.2,
        "ent_coef": 0.01,
        "vf_coef": 0.5,
        "max_grad_norm": 0.5,
    }


CRAFTAX_BUDGET = 2**22  # what one 10-minute device call trains for 3 seeds on a TPU v5e (451 s)
TANH512 = ("512", "tanh") * 3


def craftax_ppo(budget: int = CRAFTAX_BUDGET) -> dict[str, Any]:
    """Craftax_Baselines' ppo.py settings (1024 envs x 64 steps, 4 epochs of 8 minibatches,
    learning rate 2e-4 falling linearly to 0 over the run, gamma 0.99, lambda 0.8, entropy 0.01,
    gradients clipped at 1, three 512-unit tanh layers in the actor and in the critic)."""
    n_envs, n_steps, n_epochs, n_minibatches = 1024, 64, 4, 8
    rate = linear(2e-4, 0.0, budget // (n_envs * n_steps) * n_epochs * n_minibatches)
    return {
        "n_envs": n_envs,
        "n_steps": n_steps,
        "batch_size": n_envs * n_steps // n_minibatches,
        "n_epochs": n_epochs,
        "actor_learning_rate": rate,
        "critic_learning_rate": rate,
        "gamma": 0.99,
        "gae_lambda": 0.8,
        "clip_range": 0.2,
        "ent_coef": 0.01,
        "vf_coef": 0.5,
        "max_grad_norm": 1.0,
        "actor_architecture": TANH512,
        "critic_architecture": TANH512,
    }


def minatar_ppo_hidden_heads() -> dict[str, Any]:
    """`minatar_ppo` with one 256-unit ReLU layer between MinAtar's features and each head."""
    hidden = ("256", "relu")
    return {**minatar_ppo(), "actor_architecture": hidden, "critic_architecture": hidden}


def zoo_check(agent: str, env_id: str, target: float | None = None) -> Check:
    preset = zoo.preset(agent, env_id)
    return Check(agent, env_id, preset.n_timesteps, "zoo", published=preset.published, target=target)


CHECKS = (
    zoo_check("DQN", "CartPole-v1", target=475.0),
    zoo_check("DQN", "Acrobot-v1", target=-100.0),
    zoo_check("PPO", "CartPole-v1", target=500.0),
    zoo_check("PPO", "Pendulum-v1"),
    zoo_check("SAC", "Pendulum-v1", target=-200.0),
    zoo_check("TD3", "Pendulum-v1", target=-200.0),
    zoo_check("SAC", "MountainCarContinuous-v0", target=90.0),
    Check("PQN", "CartPole-v1", 100_000, "calibrated"),
    Check(
        "REDQ",
        "Pendulum-v1",
        5_000,
        "calibrated",
        lambda: {"learning_starts": 500, "batch_size": 64, "actor_architecture": RELU64, "critic_architecture": RELU64},
    ),
    Check(
        "ASAC",
        "Pendulum-v1",
        8_000,
        "calibrated",
        lambda: {"learning_starts": 1_000, "actor_architecture": RELU64, "critic_architecture": RELU64},
    ),
    Check(
        "APO",
        "Pendulum-v1",
        40_960,
        "calibrated",
        lambda: {
            "n_envs": 4,
            "n_steps": 256,
            "actor_learning_rate": 1e-3,
            "critic_learning_rate": 1e-3,
            "actor_architecture": TANH64,
            "critic_architecture": TANH64,
        },
    ),
    Check("AVG", "Pendulum-v1", 300_000, "defaults"),
    # TQC at the Zoo's Pendulum preset: sb3-contrib's defaults (2 critics of 25 quantiles, 2
    # dropped each, 256-256 networks, updates from step 100) with its learning rate, 1e-3.
    zoo_check("TQC", "Pendulum-v1"),
    # CrossQ at the paper's settings but for a 256-unit critic and learning from step 1,000 (the
    # slow test's), at the budget of SAC's and TQC's Zoo rows.
    Check(
        "CrossQ",
        "Pendulum-v1",
        20_000,
        "calibrated",
        lambda: CROSSQ_256,
    ),
    # SAC, TQC and CrossQ side by side on Brax's inverted pendulum (episodes of up to 1,000 steps,
    # +1 a step while the pole stands, ended when it falls), each at its Pendulum row's settings
    # (256-unit networks, learning from step 1,000; TQC sb3-contrib's 2 critics of 25 quantiles).
    *(
        Check(agent, "inverted_pendulum", 10_000, "256-unit nets", lambda agent=agent: BRAX_SIDE_BY_SIDE[agent])
        for agent in ("SAC", "TQC", "CrossQ")
    ),
    # SimbaV2 at the reference's settings (its discount rule gives 0.975 on Pendulum) but learning
    # from step 1,000 as CrossQ's row does, its step size decaying over this run's 20,000 updates.
    Check(
        "SimbaV2",
        "Pendulum-v1",
        20_000,
        "calibrated",
        lambda: {
            "learning_starts": 1_000,
            **dict.fromkeys(("actor_learning_rate", "critic_learning_rate"), linear(1e-4, 5e-5, 20_000)),
        },
    ),
    # The calibrated APG test's task and settings: 60 updates of 16 copies over 100 steps.
    Check(
        "APG",
        "Pendulum-v1 tracking",
        96_000,
        "calibrated",
        lambda: {"n_envs": 16, "horizon": 100, "actor_learning_rate": 1e-3},
        env=pendulum_tracking,
    ),
    # TD-MPC2 at its smallest model and the rest of its defaults, but a quarter of the planner's
    # samples (128, 16 elites, 6 from the policy): the reference's 512 cost about 0.6 s per
    # decision on this project's 2-core CPUs, over an hour for the 6,000 steps and evaluations.
    Check(
        "TDMPC2",
        "Pendulum-v1",
        6_000,
        "size 1, planner / 4",
        lambda: {"model_size": 1, "num_samples": 128, "num_elites": 16, "num_pi_trajs": 6},
        target=-400.0,
    ),
    # The reference's full planner (512 samples, 64 elites, 24 from the policy, 6 iterations), at
    # model size 1 and at the default size 5: minutes on an accelerator (a TPU v5e trained each
    # row's three seeds in under three minutes, compilation included), hours on 2 cores (0.6 s a decision).
    # The buffer holds the run, as the default million rows would only cost memory.
    Check(
        "TDMPC2",
        "Pendulum-v1",
        6_000,
        "size 1, full planner",
        lambda: {"model_size": 1, "buffer_size": 6_000},
        target=-400.0,
    ),
    Check("TDMPC2", "Pendulum-v1", 6_000, "defaults (size 5)", lambda: {"buffer_size": 6_000}, target=-400.0),
    # PQN on MinAtar boards through MinAtar's network with LayerNorm and a linear Q head, at
    # purejaxql's pqn_minatar settings (128 envs x 32 steps, 2 epochs of 32 minibatches, lambda
    # 0.65, learning rate 5e-4 falling linearly to 0 over the run, gradients clipped at 10; epsilon
    # to 0.05 over the reference's 1M steps), with Adam where it uses RAdam. gymnax-blines' PPO
    # reaches 28 on Breakout-MinAtar after 10M steps; this budget is a fifth of that.
    Check(
        "PQN",
        "Breakout-MinAtar",
        MINATAR_BUDGET,
        "purejaxql",
        lambda: minatar_pqn(MINATAR_BUDGET),
        published=28.0,
    ),
    Check(
        "PQN",
        "SpaceInvaders-MinAtar",
        MINATAR_BUDGET,
        "purejaxql",
        lambda: minatar_pqn(MINATAR_BUDGET),
        published=131.0,
    ),
    # The same at purejaxql's own budget (TOTAL_TIMESTEPS 1e7), gymnax-blines' PPO budget too.
    Check("PQN", "Breakout-MinAtar", 10_000_000, "purejaxql, 10M", lambda: minatar_pqn(10_000_000), published=28.0),
    Check(
        "PQN",
        "SpaceInvaders-MinAtar",
        10_000_000,
        "purejaxql, 10M",
        lambda: minatar_pqn(10_000_000),
        published=131.0,
    ),
    # What an action mask is worth: Jumanji's Knapsack ends an episode on an invalid pick (an item
    # packed already or too heavy), so an agent without the mask must learn to avoid them.
    Check("PPO", "Knapsack-v1", KNAPSACK_BUDGET, "16 x 64, masked", lambda: KNAPSACK_PPO),
    Check(
        "PPO",
        "Knapsack-v1 without mask",
        KNAPSACK_BUDGET,
        "16 x 64, unmasked",
        lambda: KNAPSACK_PPO,
        env=lambda: WithoutActionMask(make_env("Knapsack-v1")[0]),
    ),
    # PPO through MinAtar's network at gymnax-blines' settings; its MLP reaches 28 on Breakout
    # after 10M steps, ten times this budget.
    Check("PPO", "Breakout-MinAtar", PPO_MINATAR_BUDGET, "gymnax-blines", minatar_ppo, published=28.0),
    # The same settings through gymnax-blines' own network, two layers of 256 ReLU units over the
    # flattened board, for its 10M steps (a TPU v5e trains the three seeds in about a minute).
    Check(
        "PPO",
        "Breakout-MinAtar",
        10 * 2**20,
        "gymnax-blines, its MLP",
        lambda: {**minatar_ppo(), "encoder": "mlp", "actor_architecture": RELU256, "critic_architecture": RELU256},
        published=28.0,
    ),
    # MinAtar's network at the MLP's 10M steps, as it is (one convolution, 128 units, linear
    # heads) and with a 256-unit ReLU layer between its features and each head.
    Check("PPO", "Breakout-MinAtar", 10 * 2**20, "gymnax-blines, MinAtar CNN", minatar_ppo, published=28.0),
    Check(
        "PPO",
        "Breakout-MinAtar",
        10 * 2**20,
        "gymnax-blines, CNN + 256 heads",
        minatar_ppo_hidden_heads,
        published=28.0,
    ),
    # gymnax-blines' PPO (its 256-256 MLP, 10M steps) reaches 131 on SpaceInvaders-MinAtar (gymnax's README).
    Check("PPO", "SpaceInvaders-MinAtar", PPO_MINATAR_BUDGET, "gymnax-blines", minatar_ppo, published=131.0),
    Check(
        "PPO",
        "SpaceInvaders-MinAtar",
        10 * 2**20,
        "gymnax-blines, CNN + 256 heads",
        minatar_ppo_hidden_heads,
        published=131.0,
    ),
    # PPO on Craftax-Classic (Crafter's 22 achievements, +1 each the first time, +-0.1 for health)
    # at Craftax_Baselines' settings; its paper's PPO reaches 90% of the optimum after 1B steps.
    Check("PPO", "Craftax-Classic-Symbolic-v1", CRAFTAX_BUDGET, "Craftax_Baselines", craftax_ppo),
    Check("UDRL", "CartPole-v1", 50_000, "defaults"),
    Check("DAgger", "CartPole-v1", 4_000, "expert", lambda: {"expert_policy": cartpole_push}),
    Check(
        "IQL",
        "Pendulum-v1",
        10_000,
        "expert data",
        lambda: {
            "dataset": collect_dataset("Pendulum-v1", pendulum_swing_up, 20_000, seed=0),
            "actor_architecture": RELU64,
            "critic_architecture": RELU64,
        },
    ),
)


def run_check(check: Check, seeds: Sequence[int], num_episode_test: int) -> dict[str, Any]:
    """Train `check` once on every seed and summarise its evaluations."""
    agent = check.build()
    log_frequency = max(check.n_timesteps // 10, 1)
    started = time.perf_counter()
    state, evaluations = agent.train(
        seed=list(seeds),
        n_timesteps=check.n_timesteps,
        num_episode_test=num_episode_test,
        logging_config=LoggingConfig(log_frequency=log_frequency),
    )
    wall = time.perf_counter() - started
    # The final evaluation is the state the run ends in, as the Zoo's benchmark evaluates it.
    finals = np.asarray(agent.evaluate(state, num_episode_test=num_episode_test)[RETURN])
    end = int(np.asarray(state.collector_state.timestep)[0])
    returns, timesteps = np.asarray(evaluations[RETURN]), np.asarray(evaluations["timestep"])
    filled = timesteps[0] >= 0
    per_seed = np.concatenate([returns[:, filled], finals[:, None]], axis=1)
    return {
        "agent": check.agent,
        "env_id": check.env_id,
        "settings": check.settings,
        "n_timesteps": check.n_timesteps,
        "seeds": list(seeds),
        "num_episode_test": num_episode_test,
        "final_returns": [round(float(x), 2) for x in finals],
        "mean": round(float(finals.mean()), 2),
        "std": round(float(finals.std()), 2),
        "published": check.published,
        "target": check.target,
        "seeds_at_target": None if check.target is None else int((finals >= check.target).sum()),
        "curve": {
            "timestep": [int(t) for t in timesteps[0][filled]] + [end],
            "mean": [round(float(x), 2) for x in per_seed.mean(axis=0)],
            "per_seed": [[round(float(x), 2) for x in seed] for seed in per_seed],
        },
        **learning_summary(per_seed),
        "wall_s": round(wall, 1),
        "machine": machine(),
    }


def machine() -> str:
    """What the check trained on, as the results page names it: "CPU, N cores" or the accelerator's kind."""
    device = jax.devices()[0]
    return f"CPU, {os.cpu_count()} cores" if device.platform == "cpu" else device.device_kind


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="*", default=None, help="AGENT:ENV_ID checks to run (default: all)")
    parser.add_argument("--settings", default=None, help="of those, the checks whose settings say this")
    parser.add_argument("--seeds", type=int, default=5, help="seeds 0..N-1 per check (default: 5)")
    parser.add_argument("--num-episode-test", type=int, default=10)
    parser.add_argument("--out", type=Path, default=None, help="append one JSON line per check here")
    parser.add_argument("--table", type=Path, default=None, help="print the markdown table of this JSONL")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.table is not None:
        print(markdown_table(read_rows(args.table)))
        return 0
    checks = [
        check
        for check in CHECKS
        if (args.only is None or check.name in args.only) and (args.settings is None or args.settings == check.settings)
    ]
    unknown = set(args.only or ()) - {check.name for check in CHECKS}
    if unknown:
        print(f"Unknown checks {sorted(unknown)}; known: {[check.name for check in CHECKS]}", file=sys.stderr)
        return 2
    for check in checks:
        row = run_check(check, range(args.seeds), args.num_episode_test)
        print(json.dumps(row), flush=True)
        if args.out is not None:
            with args.out.open("a") as file:
                file.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
