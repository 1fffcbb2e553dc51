"""What CriticPretrain buys early on: SAC on Pendulum-v1 with and without critic pre-training.

Four arms, each one program over `--seeds` seeds: plain SAC, SAC + CriticPretrain, SAC +
CloningPretrain, and SAC + CloningPretrain + CriticPretrain, all guided by the swing-up
expert (`ajax.environments.controllers.pendulum_swing_up`). Reports the mean evaluation
return (10 episodes per seed) at each evaluation, per seed and averaged, as JSON lines.

    JAX_PLATFORMS=cpu python benchmarks/studies/critic_pretrain_effect.py --out runs/critic_pretrain_effect.jsonl
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from ajax import SAC
from ajax.environments.controllers import pendulum_swing_up
from ajax.extensions.critic_pretrain import CriticPretrain
from ajax.extensions.pretrain import CloningPretrain
from ajax.logging.wandb_logging import LoggingConfig

NETWORK = ("64", "relu", "64", "relu")
CRITIC = CriticPretrain(pendulum_swing_up, n_steps=2_000, epochs=300, batch_size=256, noise=0.1)
CLONING = CloningPretrain(pendulum_swing_up, n_steps=2_000, epochs=30, batch_size=256)
ARMS = {
    "SAC": (),
    "SAC+CriticPretrain": (CRITIC,),
    "SAC+CloningPretrain": (CLONING,),
    "SAC+CloningPretrain+CriticPretrain": (CLONING, CRITIC),
}


def run(arm: str, seeds: list[int], n_timesteps: int, log_frequency: int, learning_starts: int) -> dict:
    agent = SAC(
        "Pendulum-v1",
        actor_architecture=NETWORK,
        critic_architecture=NETWORK,
        learning_starts=learning_starts,
        extensions=ARMS[arm],
    )
    start = time.perf_counter()
    _, evaluations = agent.train(
        seed=seeds,
        n_timesteps=n_timesteps,
        num_episode_test=10,
        logging_config=LoggingConfig(log_frequency=log_frequency),
    )
    returns = np.asarray(evaluations["Eval/episodic mean reward"])
    return {
        "arm": arm,
        "seeds": seeds,
        "timesteps": np.asarray(evaluations["timestep"][0]).tolist(),
        "returns": returns.round(1).tolist(),
        "mean": returns.mean(axis=0).round(1).tolist(),
        "seconds": round(time.perf_counter() - start, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--n-timesteps", type=int, default=5_000)
    parser.add_argument("--log-frequency", type=int, default=1_000)
    parser.add_argument("--learning-starts", type=int, default=1_000)
    parser.add_argument("--only", nargs="+", choices=list(ARMS), default=list(ARMS))
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    for arm in args.only:
        row = run(arm, args.seeds, args.n_timesteps, args.log_frequency, args.learning_starts)
        print(json.dumps(row), flush=True)
        if args.out is not None:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            with args.out.open("a") as out:
                out.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
