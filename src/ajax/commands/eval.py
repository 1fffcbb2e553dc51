"""`ajax eval RUN_DIR`: restore a run folder's checkpoint into the agent its config.json describes, and
evaluate every seed.

The agent is rebuilt from the settings `ajax train` saved, the same way the command line built it, so the
checkpoint's arrays fit it; the table is the one `ajax train` ends with, over `--episodes` episodes.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.console import Console

from ajax.commands.arguments import build_agent, positive_int
from ajax.commands.results import report_of, summary_table, target_name
from ajax.commands.run_folder import CHECKPOINT, saved_run


def add_parser(commands: argparse._SubParsersAction) -> None:
    """The `eval` subcommand's parser, under the `ajax` parser's `commands`."""
    evaluate = commands.add_parser(
        "eval",
        allow_abbrev=False,
        help="evaluate the agent a run folder checkpointed",
        description="Restore RUN_DIR's checkpoint into the agent its config.json describes and evaluate every seed.",
    )
    evaluate.add_argument("run_dir", metavar="RUN_DIR", type=Path, help="a folder `ajax train` wrote")
    evaluate.add_argument(
        "--episodes", type=positive_int, default=10, help="evaluation episodes per seed (default: 10)"
    )


def eval_command(args: argparse.Namespace, console: Console) -> int:
    """`ajax eval RUN_DIR`: the checkpointed agent's greedy return, per seed."""
    from ajax.agents.registry import AGENTS
    from ajax.checkpoint import CheckpointError, restore_into

    cli, problem = saved_run(args.run_dir)
    if cli is None:
        print(problem, file=sys.stderr)
        return 2
    if cli["agent"] not in AGENTS:
        print(f"{args.run_dir / 'config.json'} names an unknown agent {cli['agent']!r}.", file=sys.stderr)
        return 2
    try:
        agent = build_agent(cli["agent"], cli["env_id"], cli)
    except (ValueError, TypeError) as error:
        print(f"{args.run_dir / 'config.json'} describes an agent that cannot be built: {error}", file=sys.stderr)
        return 2
    seeds = list(range(int(cli["seeds"])))
    skeleton, _ = agent.train(seed=seeds, n_timesteps=0, total_timesteps=cli["timesteps"])
    try:
        state = restore_into(skeleton, args.run_dir / CHECKPOINT, agent=agent)
    except CheckpointError as error:
        print(error, file=sys.stderr)
        return 2
    report = report_of(cli["agent"])
    returns = agent.evaluate(state, num_episode_test=args.episodes)[report.metric]
    timestep = int(state.collector_state.timestep[0])
    finals = {seed: (timestep, float(returns[index])) for index, seed in enumerate(seeds)}
    title = (
        f"{cli['agent']} on {target_name(cli['agent'], cli['env_id'])}: {report.quantity} over {args.episodes} episodes"
    )
    console.print(summary_table(finals, title, report=report))
    return 0
