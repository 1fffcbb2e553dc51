"""The `ajax` command line: the parser of its subcommands, `train`, `eval` and `sweep`, and the dispatch to them.

Each subcommand is a module of `ajax.commands` that adds its own parser and holds its command: `train`
trains a registered agent on an env id and keeps what the run produced in a run folder, `eval` evaluates
the checkpoint a run folder holds, `sweep` trains a grid of hyperparameters as one program. What they
share (the options' meaning, the run folder, the results) lives in `ajax.commands` too, so this module
only builds the parser and calls the command asked for.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from rich.console import Console

from ajax.commands.eval import add_parser as add_eval_parser
from ajax.commands.eval import eval_command
from ajax.commands.sweep import add_parser as add_sweep_parser
from ajax.commands.sweep import sweep_command
from ajax.commands.train import add_parser as add_train_parser
from ajax.commands.train import train_command

COMMANDS: dict[str, Callable[[argparse.Namespace, Console], int]] = {
    "train": train_command,
    "eval": eval_command,
    "sweep": sweep_command,
}
"""Each subcommand's command: it takes the parsed arguments and a console, and returns the exit status."""


def build_parser() -> argparse.ArgumentParser:
    """The `ajax` parser: the subcommands `train`, `eval` and `sweep`, each parser added by its module."""
    parser = argparse.ArgumentParser(
        prog="ajax",
        description="Reinforcement-learning agents whose whole training run is one compiled JAX program. "
        "The command has three subcommands, train, eval and sweep.",
        epilog="`ajax COMMAND --help` lists a subcommand's options.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    add_train_parser(commands)
    add_eval_parser(commands)
    add_sweep_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """The `ajax` console script; returns the exit status instead of exiting, so it can be called in-process."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # --help, or a usage error argparse has already printed
        return exit_.code if isinstance(exit_.code, int) else int(exit_.code is not None)
    if args.command is None:
        parser.print_help()
        return 0
    return COMMANDS[args.command](args, Console())


if __name__ == "__main__":
    sys.exit(main())
