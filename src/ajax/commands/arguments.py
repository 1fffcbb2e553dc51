"""What the subcommands' options mean: counts, `--param` values, the agent a name and its settings build.

`train`, `eval` and `sweep` take the same AGENT, the same counts and the same `--param NAME=VALUE`, and a
run folder's saved settings rebuild the agent as the command line built it: one reading of them, here.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ajax.agents.base import ActorCritic
    from ajax.buffers.multitask import MultiTaskDataset

DEFAULT_TIMESTEPS = 100_000

DATASET_AGENTS = frozenset({"TDMPC2MultiTask"})
"""Agents built on a saved `MultiTaskDataset`, whose path the command takes where others take an env id.

They step no env while they train (their timesteps count updates, --n-envs has nothing to set) and
the Zoo tunes none of them; each task is evaluated in its own env, by default the env of the task's name.
"""


def positive_int(text: str) -> int:
    """An argparse type: counts of seeds, steps and envs below 1 make no run, so refuse them up front."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def resolve_agent(name: str, names: Sequence[str]) -> str | None:
    """The registered name for `name`, ignoring case since `ppo` can only mean PPO."""
    matches = [known for known in names if known.lower() == name.lower()]
    return matches[0] if matches else None


def parse_value(text: str) -> Any:
    """A `--param` value: a Python literal (1e-3, 64, True, (64, 64)), true/false/none, a comma-separated
    tuple of such values, or else the text itself (an activation's name)."""
    import ast

    words = {"true": True, "false": False, "none": None}
    if text.lower() in words:
        return words[text.lower()]
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        pass
    if "," in text:
        return tuple(parse_value(item.strip()) for item in text.split(",") if item.strip())
    return text


def agent_arguments(
    agent_class: type[ActorCritic], env_id: str, *, zoo: bool, n_envs: int | None, params: Sequence[str]
) -> dict[str, Any]:
    """The constructor's keywords a command asks for: the Zoo preset, then --n-envs, then each --param.

    Raises ValueError naming what is wrong: a malformed --param, a name the agent does not take
    (with the names it takes), or an agent and env the Zoo has no preset for.
    """
    from ajax import zoo as presets

    kwargs = presets.preset(agent_class.name, env_id).kwargs if zoo else {}
    if n_envs is not None:
        kwargs["n_envs"] = int(n_envs)
    # ENV_ID gives the constructor's first argument (the env id, or a dataset agent's dataset); --param the keywords.
    accepted = list(agent_class.hyperparameters.declared)
    for pair in params:
        name, equals, text = pair.partition("=")
        name = name.strip().replace("-", "_")
        if not equals or not name:
            raise ValueError(f"--param takes NAME=VALUE, got {pair!r}.")
        if name not in accepted:
            raise ValueError(f"{agent_class.name} takes no argument {name!r}; it takes {', '.join(accepted)}.")
        kwargs[name] = parse_value(text.strip())
    return kwargs


def load_dataset(path: str) -> MultiTaskDataset:
    """The `MultiTaskDataset` saved at `path`; a ValueError naming the path if there is none or it is damaged."""
    from ajax.buffers.multitask import MultiTaskDataset

    try:
        return MultiTaskDataset.load(path)
    except FileNotFoundError:
        raise ValueError(
            f"no dataset file {path} (the path of a MultiTaskDataset saved with MultiTaskDataset.save; "
            "scripts/make_multitask_dataset.py makes one)."
        ) from None


def build_agent(agent_name: str, env_id: str, cli: dict[str, Any]) -> ActorCritic:
    """The agent a command's settings (or a run folder's saved ones) describe; a dataset agent's `env_id`
    is its dataset file's path, read here."""
    from ajax.agents.registry import AGENTS

    agent_class = AGENTS[agent_name]
    kwargs = agent_arguments(
        agent_class, env_id, zoo=bool(cli.get("zoo")), n_envs=cli.get("n_envs"), params=cli.get("params", [])
    )
    if agent_name in DATASET_AGENTS:
        return agent_class(load_dataset(env_id), **kwargs)
    return agent_class(env_id, **kwargs)
