"""The `ajax` command line: the parser of its subcommands, `train`, `eval` and `sweep`, and the dispatch to them.

Each subcommand is a module of `ajax.commands` that adds its own parser and holds its command: `train`
trains a registered agent on an env id and keeps what the run produced in a run folder, `eval` evaluates
the checkpoint a run folder holds, `sweep` trains a grid of hyperparameters as one program. What they
share (the options' meaning, the run folder, the results) lives in `ajax.commands` too, so this module
only builds the parser and calls the command asked for.
"""

from __future__ import annotations

import argparse
import difflib
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


class Parser(argparse.ArgumentParser):
    """An ArgumentParser that refuses what it does not know by name, with the close match.

    Every `ajax` parser is one (a subcommand's parser takes its parent's class) and is built with
    `allow_abbrev=False`: argparse's prefix matching would read `--seed 3` as `--seeds 3` and train
    three seeds where one was meant. A word it then does not know is refused by the parser that
    knows the options, the subcommand's: argparse gives a subcommand's parser its words through
    `parse_known_args` and reports what is left from the top parser, naming none of the options.
    """

    def parse_known_args(
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        """argparse's parse, refusing any word left over (exit status 2), so nothing is ever left."""
        parsed, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(self.unknown_message(extras))
        return parsed, []

    def unknown_message(self, extras: Sequence[str]) -> str:
        """Each unknown option with what it may have meant among this parser's options; else the stray words.

        What it may have meant: the options it begins (what an abbreviation would have been read as), or
        else the options spelt closest to it.
        """
        known = [option for action in self._actions for option in action.option_strings]
        unknown = [word.partition("=")[0] for word in extras if _is_option(word)]
        if not unknown:
            return f"unrecognized arguments: {' '.join(extras)}"
        sentences = []
        for option in unknown:
            begun = [name for name in known if name.startswith(option)]
            close = begun or difflib.get_close_matches(option, known, n=3)
            hint = f"did you mean {' or '.join(close)}?" if close else f"`{self.prog} --help` lists its options."
            sentences.append(f"unknown option {option}; {hint}")
        return " ".join(sentences)


def _is_option(word: str) -> bool:
    """Whether a leftover word was meant as an option: a dash and a name, not a negative number."""
    return len(word) > 1 and word[0] == "-" and not word[1].isdigit() and word[1] != "."


def build_parser() -> argparse.ArgumentParser:
    """The `ajax` parser: the subcommands `train`, `eval` and `sweep`, each parser added by its module."""
    parser = Parser(
        prog="ajax",
        allow_abbrev=False,
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
