"""`sweep`: every configuration of a hyperparameter grid on every seed, as one compiled program.

Each configuration builds its own agent (so every value is checked as a constructor checks
it), and the sweep compares their static settings field by field. The numbers that differ
(a learning rate, gamma, a clip coefficient, whichever the grid names and whatever the
constructors derived from them) are the only differences allowed: they leave the static
settings and enter the program as traced values, one per configuration, so a `vmap` over the
configurations around the seeds' `vmap` runs them all in one program, traced and compiled
once. Learning rates reach optax the same way: a traced rate makes `make_optimizer` inject it
into the optimiser state (`optax.inject_hyperparams`). An argument that fixes a shape, a loop
length or a Python branch cannot vary inside one program, and each agent declares the
arguments it can sweep (`ActorCritic.sweepable`); the others are refused at once. `extensions`
can be swept too, where the configurations' extensions differ only in their numbers (an
`ImitationLoss`'s weight): the same classes in the same order.

Configuration k with seed s starts from the same key as `train(seed=s)` of that configuration,
so the sweep's runs are those single runs.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import itertools
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ajax import nonfinite
from ajax.agents.base import (
    ActorCritic,
    _unbatched_counters,
    check_train_arguments,
    checked_seeds,
    run_seeds,
    strongly_typed,
)
from ajax.agents.loop import RunSettings
from ajax.checks import is_count
from ajax.devices import Placement, jit_run, key_shape, seed_keys
from ajax.environments.host import host_errors
from ajax.logging.wandb_logging import LoggingConfig
from ajax.logging.worker import write_rows
from ajax.state import SEED_AXIS, BaseAgentState

CONFIG_AXIS = "config"

Path = tuple[Any, ...]  # where a number sits in the static settings: field names, indices and keys


def configurations(
    grid: Mapping[str, Sequence[Any]] | None, configs: Sequence[Mapping[str, Any]] | None
) -> list[dict[str, Any]]:
    """The configurations in order: every combination of `grid`'s values (the last name varying
    fastest, as nested loops in the grid's order), or `configs` as given."""
    if (grid is None) == (configs is None):
        raise ValueError("sweep takes grid={name: [values, ...]} or configs=[{name: value, ...}, ...], one of them.")
    if grid is not None:
        if not isinstance(grid, Mapping) or not grid:
            raise ValueError(f"grid= needs at least one argument with a list of its values, got {grid!r}.")
        for name, values in grid.items():
            _check_values(name, values)
        names = list(grid)
        return [dict(zip(names, values, strict=True)) for values in itertools.product(*grid.values())]
    if not configs or not all(isinstance(config, Mapping) and config for config in configs):
        raise ValueError(f"configs= needs at least one non-empty {{name: value}} mapping, got {configs!r}.")
    runs = [dict(config) for config in configs]
    for i, config in enumerate(runs):
        if config in runs[:i]:
            raise ValueError(
                f"configs= lists {config!r} twice (entries {runs.index(config)} and {i}), which would train the same "
                "configuration twice: drop one, or add a seed to train it on more."
            )
    return runs


def _check_values(name: str, values: Any) -> None:
    """One grid entry: a non-empty list of distinct values, the refusal naming the argument."""
    if isinstance(values, str | Mapping) or not isinstance(values, Sequence | np.ndarray):
        raise TypeError(f"grid[{name!r}] must be a list of the values to sweep, got {values!r}: write [{values!r}].")
    if not len(values):
        raise ValueError(f"grid[{name!r}] is empty: give at least one value, or leave {name!r} out of the grid.")
    values = list(values)
    for i, value in enumerate(values):
        if any(_same(value, earlier) for earlier in values[:i]):
            raise ValueError(
                f"grid[{name!r}] lists {value!r} twice, which would train the same configurations twice: drop one "
                "(more seeds train a configuration more)."
            )


def _same(a: Any, b: Any) -> bool:
    """Equal values of the same kind (True and 1 are different settings; so are 1 and 1.0 only in kind)."""
    try:
        return type(a) is type(b) and bool(np.all(a == b))
    except (TypeError, ValueError):
        return a is b


def check_sweepable(agent_cls: type[ActorCritic], names: Sequence[str], fixed: Mapping[str, Any]) -> None:
    """Refuse an unknown argument, one the agent cannot sweep, or one both swept and fixed."""
    known = list(agent_cls.hyperparameters.declared)
    allowed = set(agent_cls.sweepable) | ({"extensions"} & set(known))
    sweepable = sorted(allowed)
    for name in names:
        if name not in known:
            close = difflib.get_close_matches(name, known, n=3)
            hint = f" Did you mean {', '.join(close)}?" if close else ""
            raise ValueError(f"{agent_cls.name} has no argument {name!r}.{hint} It can sweep: {', '.join(sweepable)}.")
        if name not in allowed:
            raise ValueError(
                f"{agent_cls.name} cannot sweep {name!r}: it fixes a shape, a loop length or a Python branch of the "
                f"program, so each value needs a program of its own (a train() call per value). It can sweep: "
                f"{', '.join(sweepable)}."
            )
        if name in fixed:
            raise ValueError(f"{name!r} is both swept and given as a fixed argument: drop one.")


def _children(node: Any) -> list[tuple[Any, Any]] | None:
    """The parts of a static setting the sweep looks into, by name or index; None for a leaf."""
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        return [(field.name, getattr(node, field.name)) for field in dataclasses.fields(node)]
    if isinstance(node, tuple | list):
        return list(enumerate(node))
    if isinstance(node, dict):
        return list(node.items())
    return None


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool | np.bool_)


def numbers(tree: Any, path: Path = ()) -> dict[Path, Any]:
    """Every number in the static settings, by its path; other leaves by path too, to compare."""
    children = _children(tree)
    if children is None:
        return {path: tree}
    found: dict[Path, Any] = {(*path, "<type>"): type(tree)}
    for key, child in children:
        found.update(numbers(child, (*path, key)))
    return found


def _differs(value: Any, first: Any) -> bool:
    """Whether a setting that is not a number differs: plain values by equality, objects (an env,
    a function) by type, since every configuration's agent builds its own."""
    plain = str | bytes | bool | np.bool_ | type(None)
    if isinstance(value, plain) or isinstance(first, plain):
        return value != first
    return type(value) is not type(first)


def swept_paths(settings: Sequence[dict[str, Any]]) -> dict[Path, list[Any]]:
    """The numbers that differ between configurations' static settings, with their values in order.

    Anything else that differs means an argument changed more than numbers: refused.
    """
    flat = [numbers(one) for one in settings]
    if any(one.keys() != flat[0].keys() for one in flat):
        raise ValueError("The configurations build differently shaped settings: sweep only numbers.")
    swept: dict[Path, list[Any]] = {}
    for path, first in flat[0].items():
        values = [one[path] for one in flat]
        if all(_is_number(value) for value in values):
            if any(value != first for value in values):
                swept[path] = values
        elif any(_differs(value, first) for value in values):
            raise ValueError(
                f"The configurations differ in {'.'.join(map(str, path))}, which is not a number inside the program; "
                "sweep only the arguments the agent declares sweepable."
            )
    return swept


def substitute(tree: Any, values: Mapping[Path, Any], path: Path = ()) -> Any:
    """`tree` with the number at each path of `values` replaced (by a traced value).

    Frozen dataclasses are copied and set field by field: their checks ran when the agent was
    built, on the concrete values, and would refuse a tracer.
    """
    if not any(swept[: len(path)] == path for swept in values):
        return tree
    if path in values:
        return values[path]
    if dataclasses.is_dataclass(tree):
        copied = copy.copy(tree)
        for field in dataclasses.fields(tree):
            object.__setattr__(copied, field.name, substitute(getattr(tree, field.name), values, (*path, field.name)))
        return copied
    if isinstance(tree, tuple | list):
        return type(tree)(substitute(child, values, (*path, index)) for index, child in enumerate(tree))
    return {key: substitute(child, values, (*path, key)) for key, child in tree.items()}


def _traced_values(swept: Mapping[Path, list[Any]]) -> dict[str, jax.Array]:
    """Each swept number as an array over the configurations: int32 for counts, float32 otherwise."""
    return {
        repr(path): jnp.asarray(values, jnp.int32 if all(map(is_count, values)) else jnp.float32)
        for path, values in swept.items()
    }


@dataclasses.dataclass(frozen=True)
class SweepProgram:
    """One program for every configuration: the template agent's settings with the swept numbers traced.

    `values` holds each swept number over the configurations (keyed by its path's repr);
    `fresh(values, keys)` builds the initial states, `run(values, keys, state)` trains them,
    both with leading axes (configurations, seeds).
    """

    template: ActorCritic
    run_settings: RunSettings
    paths: tuple[Path, ...]
    values: dict[str, jax.Array]

    @classmethod
    def build(cls, agents: Sequence[ActorCritic], run: RunSettings) -> SweepProgram:
        swept = swept_paths([agent.static_settings(run) for agent in agents])
        return cls(agents[0], run, tuple(swept), _traced_values(swept))

    def one_seed(self, values: dict[str, jax.Array]) -> Any:
        """One seed's run of one configuration, its swept numbers the traced `values`."""
        traced = {path: values[repr(path)] for path in self.paths}
        settings = substitute(self.template.static_settings(self.run_settings), traced)
        return type(self.template).make_train(run=self.run_settings, **settings)

    def fresh(self, values: dict[str, jax.Array], keys: jax.Array) -> BaseAgentState:
        def one(values: dict[str, jax.Array], keys: jax.Array) -> BaseAgentState:
            return jax.vmap(self.one_seed(values).fresh_state, axis_name=SEED_AXIS)(keys)

        return jax.vmap(one, axis_name=CONFIG_AXIS)(values, keys)

    def run(self, values: dict[str, jax.Array], keys: jax.Array, state: BaseAgentState) -> Any:
        def one(values: dict[str, jax.Array], keys: jax.Array, state: BaseAgentState) -> Any:
            return run_seeds(self.one_seed(values), keys, state)

        axes = _unbatched_counters(jax.tree.map(lambda _: 0, state), lambda _: None)
        state = _unbatched_counters(state, lambda x: x[0])
        return jax.vmap(one, in_axes=(0, 0, axes), axis_name=CONFIG_AXIS)(values, keys, state)


def sweep(
    agent_cls: type[ActorCritic],
    env_id: str | Any,
    grid: Mapping[str, Sequence[Any]] | None = None,
    configs: Sequence[Mapping[str, Any]] | None = None,
    seed: int | Sequence[int] = 0,
    n_timesteps: int = int(1e6),
    num_episode_test: int = 10,
    logging_config: LoggingConfig | None = None,
    initial_state: BaseAgentState | None = None,
    total_timesteps: int | None = None,
    on_nonfinite: str = "warn",
    devices: int | Sequence[jax.Device] | None = None,
    **fixed: Any,
) -> tuple[BaseAgentState, dict[str, jax.Array] | None, list[dict[str, Any]]]:
    """Train `agent_cls` on `env_id` for every configuration and seed as one compiled program.

    `grid={name: [values]}` sweeps every combination (or `configs=[{name: value}, ...]` the
    listed ones); `fixed` are the other constructor arguments, shared by all. Returns
    `(state, evaluations, configurations)`: every leaf of the state and of the evaluations with
    leading axes (configurations, seeds), and the configurations in that order. The rest is
    `train()`'s: `initial_state` (a sweep's state) continues a sweep of the same grid, and the
    configurations are spread across `devices`. With a logging backend, each configuration's
    seeds are written under `run_directory/config_<k>/seed_<s>` once the program returns.
    """
    nonfinite.check_mode(on_nonfinite)
    check_train_arguments(n_timesteps, num_episode_test, logging_config, initial_state, total_timesteps)
    runs = configurations(grid, configs)
    check_sweepable(agent_cls, sorted({name for config in runs for name in config}), fixed)
    seeds = checked_seeds(seed)
    agents = [agent_cls(env_id, **fixed, **config) for config in runs]
    start = 0 if initial_state is None else _shared_timestep(initial_state)
    run, logging_config = agents[0].run_settings(start, n_timesteps, num_episode_test, logging_config, total_timesteps)
    # The evaluations come back from the program; a backend is fed from them afterwards.
    program = SweepProgram.build(agents, dataclasses.replace(run, record=False))
    placement = Placement.of(devices, len(runs))
    values = placement.spread(program.values)
    if initial_state is None:
        keys = placement.spread(np.repeat(seed_keys(seeds)[None], len(runs), 0))
        with host_errors():  # a host env's reset that raised, as itself
            initial_state = placement.run_once(program.fresh)(values, keys)
    else:
        _check_resumed(initial_state, len(runs), len(seeds))

        def skeleton_at(run: RunSettings) -> BaseAgentState:
            keys = jax.ShapeDtypeStruct((len(runs), len(seeds), *key_shape()), jnp.uint32)
            fresh = SweepProgram.build(agents, dataclasses.replace(run, record=False)).fresh
            return jax.eval_shape(fresh, program.values, keys)

        n_runs = len(runs) * len(seeds)
        run, initial_state = agents[0].fit_replay(initial_state, run, start, skeleton_at, n_runs)
        program = SweepProgram.build(agents, dataclasses.replace(run, record=False))
        initial_state = placement.spread(strongly_typed(initial_state))
    keys = placement.spread(jnp.zeros((len(runs), len(seeds), *key_shape()), jnp.uint32))
    # host_errors: a host env's exception as itself, not as the JAX runtime error that stops the
    # program; a context here rather than a decorator, so warnings keep pointing at the caller.
    with warnings.catch_warnings(), host_errors():
        warnings.filterwarnings("ignore", "Some donated buffers were not usable")
        state, rows = jit_run(placement.program(program.run), donate_argnums=(2,))(values, keys, initial_state)
        state, rows = placement.gather(jax.block_until_ready((state, rows)))
    names = [f"configuration {k} ({_describe(config)}) seed {s}" for k, config in enumerate(runs) for s in seeds]
    flat = jax.tree.map(lambda leaf: jnp.reshape(leaf, (-1, *leaf.shape[2:])), state.nonfinite)
    nonfinite.report(flat, names, on_nonfinite)
    if logging_config is not None and logging_config.has_backend:
        _write(logging_config, agents, seeds, rows)
    return state, (rows if logging_config is not None else None), runs


def _describe(config: Mapping[str, Any]) -> str:
    return ", ".join(f"{name}={value!r}" for name, value in config.items())


def _shared_timestep(state: BaseAgentState) -> int:
    timesteps = np.asarray(state.collector_state.timestep)
    if timesteps.ndim != 2 or np.any(timesteps != timesteps.flat[0]):
        raise ValueError(
            "initial_state must be a sweep's state (leading axes configurations, seeds) with every run at one "
            f"timestep; got timesteps {timesteps.tolist()}."
        )
    return int(timesteps.flat[0])


def _check_resumed(state: BaseAgentState, n_configs: int, n_seeds: int) -> None:
    shape = np.shape(state.collector_state.timestep)
    if shape != (n_configs, n_seeds):
        raise ValueError(
            f"initial_state holds {shape[0]} configurations x {shape[1]} seeds, and this sweep names {n_configs} x "
            f"{n_seeds}: continue a sweep with its own grid and seeds."
        )


def _write(logging_config: LoggingConfig, agents: Sequence[ActorCritic], seeds: Sequence[int], rows: Any) -> None:
    """Each configuration's evaluations to the backends, one folder per configuration."""
    directory = logging_config.run_directory()
    for index, agent in enumerate(agents):
        config = dataclasses.replace(
            logging_config.with_config(agent.config), folder=str(directory), run_name=f"config_{index}"
        )
        write_rows(config, seeds, {name: np.asarray(values[index]) for name, values in rows.items()})
