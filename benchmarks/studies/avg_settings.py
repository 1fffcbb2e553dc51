"""AVG on Pendulum-v1 at the reference's other per-task settings: is the default the wrong one?

AVG's defaults (actor 6.3e-3, critic 8.7e-3, entropy 0.07, gamma 0.99) are the reference's
setting for Ant, HalfCheetah and Humanoid over 10M steps (gauthamvasan/avg's README, the
hyperparameter table, row 129). The same table gives each task family its own setting, the
learning rates spread over three orders of magnitude. This trains AVG on Pendulum-v1 at each
of the table's settings that Ajax's keywords express (Adam's beta1 is fixed at 0, so the
finger_spin row, beta1 0.9, is left out), on the seeds given, and appends one learning-table
row per setting to `benchmarks/learning_checks.jsonl`.

    JAX_PLATFORMS=cpu python benchmarks/studies/avg_settings.py --seeds 3
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/, for its shared modules

from learning_checks import Check, run_check  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "learning_checks.jsonl"  # the learning table

# The reference's table: its row id and task family -> Ajax's keywords.
SETTINGS = {
    "122 (Hopper, Walker2d)": {
        "actor_learning_rate": 1.1e-5,
        "critic_learning_rate": 7.7e-5,
        "alpha": 0.3,
        "gamma": 0.99,
    },
    "12 (reacher_hard)": {"actor_learning_rate": 3e-6, "critic_learning_rate": 4.9e-3, "alpha": 0.05, "gamma": 0.97},
    "57 (dog_walk, dog_trot, dog_stand)": {
        "actor_learning_rate": 6e-6,
        "critic_learning_rate": 8e-5,
        "alpha": 0.009,
        "gamma": 0.95,
    },
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=3, help="how many seeds (default: 3)")
    parser.add_argument("--first-seed", type=int, default=0, help="the first seed (default: 0)")
    parser.add_argument("--timesteps", type=int, default=300_000, help="steps per seed (default: 300,000)")
    parser.add_argument("--only", nargs="+", choices=sorted(SETTINGS), default=sorted(SETTINGS))
    parser.add_argument("--num-episode-test", type=int, default=10)
    parser.add_argument("--out", type=Path, default=OUT, help="append the rows here (default: %(default)s)")
    args = parser.parse_args(argv)
    for name in args.only:
        kwargs = SETTINGS[name]
        label = f"reference row {name}" + (f", seeds {args.first_seed}+" if args.first_seed else "")
        check = Check("AVG", "Pendulum-v1", args.timesteps, label, lambda kwargs=kwargs: kwargs)
        row = run_check(check, range(args.first_seed, args.first_seed + args.seeds), args.num_episode_test)
        print(json.dumps(row), flush=True)
        with args.out.open("a") as file:
            file.write(json.dumps(row) + "\n")
        print(f"{check.settings}: final {row['final_returns']}, last-3 IQM {row['iqm']} {row['iqm_ci']}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
