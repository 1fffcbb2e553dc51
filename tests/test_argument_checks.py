"""Every keyword of every registered agent refuses wrong values at construction, naming itself.

The wrong values are generated from each keyword's one declaration (`ajax.hyperparameters`):
what it `accepts` says which values lie outside it (a string for a number or a flag, NaN,
infinity, each side of an interval, a count below its minimum or with a fraction, an option
that is not one). A new agent, or a new keyword, joins these tests by being declared; a
declaration whose `accepts` this file cannot read fails the test that lists them, so no
keyword escapes unchecked.
"""

from __future__ import annotations

import math
import re
from typing import Any

import jax.numpy as jnp
import pytest

from ajax.agents.registry import AGENTS

INTERVAL = re.compile(r"^([\[(])(-?[\d.]+|-inf), (-?[\d.]+|inf)([\])])(, or a schedule|, or None)?$")
COUNT = re.compile(r"^integer >= (\d+)(, or None|, or -1)?$")
# Declarations whose rule is not an interval, a count, a flag or options, with values outside it.
OTHER_RULES: dict[str, list[Any]] = {
    "two numbers in [0, 1)": [(0.5,), (0.9, 1.0), (-0.1, 0.5), "0.9, 0.999"],
    "a function of (key, shape, dtype), or None": [3, "he_normal"],
    "None, 'warmup_cosine'": ["cosine", 1],
    "None": [1, "none"],
}


def wrong_values(accepts: str) -> list[Any] | None:
    """Values outside what `accepts` says; None when this file cannot read the rule."""
    if accepts == "True, False":
        return ["yes", "False", 1, None]
    if accepts in OTHER_RULES:
        return OTHER_RULES[accepts]
    count = COUNT.match(accepts)
    if count:
        minimum, extra = int(count.group(1)), count.group(2)
        wrong: list[Any] = [minimum + 0.5, "2", math.nan, True]
        if extra == ", or -1":
            return [*wrong, -2] + ([minimum - 1] if minimum - 1 != -1 else [])
        return [*wrong, minimum - 1]
    interval = INTERVAL.match(accepts)
    if interval:
        opening, low, high, closing, extra = interval.groups()
        low, high = float(low), float(high)
        wrong = [math.nan, "0.5", True]
        if extra == ", or a schedule":  # a schedule of no step count, and one of a vector of values
            wrong += [lambda: 1e-3, lambda step: jnp.full(2, 1e-3)]
        if math.isinf(low):
            wrong.append(-math.inf)
        else:
            wrong.append(low if opening == "(" else low - 1.0)
        if math.isinf(high):
            wrong.append(math.inf)
        else:
            wrong.append(high if closing == ")" else high + 1.0)
        return wrong
    options = [part.strip() for part in accepts.split(",")]
    if options and all(o.startswith("'") or o.lstrip("-").isdigit() for o in options[:2]):
        return ["not-an-option", 10**6 + 7]
    return None


def declarations() -> list[tuple[str, str, str]]:
    """(agent, keyword, accepts) for every keyword the constructor checks by its own value."""
    return [
        (agent, name, entry.accepts)
        for agent, cls in sorted(AGENTS.items())
        for name, entry in cls.hyperparameters.declared.items()
        if entry.check is not None
    ]


def test_every_checked_declaration_has_wrong_values_this_file_can_generate():
    unread = sorted({accepts for _, _, accepts in declarations() if wrong_values(accepts) is None})
    assert not unread, f"add these rules to wrong_values or OTHER_RULES: {unread}"


@pytest.mark.parametrize(("agent", "keyword", "accepts"), declarations(), ids=lambda v: str(v)[:40])
def test_each_wrong_value_is_refused_naming_the_keyword(agent, keyword, accepts):
    hyperparameters = AGENTS[agent].hyperparameters
    hyperparameters.bind(agent, {})  # the defaults pass
    for value in wrong_values(accepts):
        with pytest.raises((ValueError, TypeError)) as refused:
            hyperparameters.bind(agent, {keyword: value})
        assert keyword in str(refused.value), f"{agent}({keyword}={value!r}): {refused.value}"


@pytest.mark.parametrize("agent", sorted(name for name, cls in AGENTS.items() if cls.built_on == "env_id"))
def test_the_constructor_refuses_before_it_builds_anything(agent, monkeypatch):
    """The checks above are the constructor's: a wrong value stops it before the env is built.
    (TDMPC2MultiTask, built on a dataset, first checks that it was given one.)"""
    import ajax.agents.base as base

    def no_env(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the env was built before the keywords were checked")

    monkeypatch.setattr(base, "prepare_env", no_env)
    name, entry = next(
        (name, entry)
        for name, entry in AGENTS[agent].hyperparameters.declared.items()
        if entry.check is not None and wrong_values(entry.accepts)
    )
    with pytest.raises((ValueError, TypeError), match=name):
        AGENTS[agent]("CartPole-v1", **{name: wrong_values(entry.accepts)[0]})


def wrong_for(annotation: str) -> list[Any]:
    """Values outside a config field's annotation (as written in its dataclass)."""
    optional = "None" in annotation
    kind = annotation.replace(" | None", "").strip()
    wrong: list[Any] = [] if optional else [None]
    if kind == "int":
        return [*wrong, 0, 1.5, True, "2", math.nan]
    if kind == "bool":
        return [*wrong, "yes", "False", 1]
    if kind.startswith("str"):
        return [*wrong, 1, ["a"]]
    if kind.startswith("dict"):
        return [*wrong, "x", 3]
    raise AssertionError(f"no wrong values for a field annotated {annotation!r}")


def config_fields() -> list[tuple[type, str, str]]:
    import dataclasses

    from ajax.logging.wandb_logging import LoggingConfig
    from ajax.networks.memory import MemoryConfig

    inert = {(LoggingConfig, "horizon")}  # kept for old calls, warned about, never read
    return [
        (cls, field.name, field.type)
        for cls in (LoggingConfig, MemoryConfig)
        for field in dataclasses.fields(cls)
        if (cls, field.name) not in inert and field.name != "kind"  # `kind`: an option, checked with close matches
    ]


@pytest.mark.parametrize(("cls", "name", "annotation"), config_fields(), ids=lambda v: getattr(v, "__name__", str(v)))
def test_each_config_field_refuses_values_outside_its_type_naming_itself(cls, name, annotation):
    base = {"kind": "gru", "hidden_size": 8} if cls.__name__ == "MemoryConfig" else {}
    cls(**base)
    for value in wrong_for(annotation):
        with pytest.raises((ValueError, TypeError)) as refused:
            cls(**{**base, name: value})
        assert name in str(refused.value), f"{cls.__name__}({name}={value!r}): {refused.value}"


TRAIN_WRONG = {
    "seed": [[0, 0], 1.5, -1, [], True, [0, "a"], "x"],
    "n_timesteps": [-1, 1.5, "100", math.nan, True, None],
    "num_episode_test": [0, -1, 1.5, "3", True],
    "total_timesteps": [0, 1.5, "x"],
    "logging_config": ["x", 5, {"log_frequency": 10}],
    "initial_state": ["x", 5],
    "on_nonfinite": ["explode", 1],
}


def test_train_names_each_argument_it_refuses_before_anything_compiles():
    import inspect

    from ajax import DQN

    agent = DQN("CartPole-v1")
    assert set(TRAIN_WRONG) | {"devices"} == set(inspect.signature(agent.train).parameters)  # devices: test_devices
    for name, values in TRAIN_WRONG.items():
        for value in values:
            with pytest.raises((ValueError, TypeError)) as refused:
                agent.train(**{"seed": 0, "n_timesteps": 100, name: value})
            assert name in str(refused.value).lower(), f"train({name}={value!r}): {refused.value}"
    assert not agent._programs  # nothing was traced


def extension_fields() -> list[tuple[type, str, str]]:
    """(extension, field, annotation) for every numeric or boolean field of every extension Ajax ships."""
    import dataclasses
    import importlib
    import pkgutil

    import ajax.extensions
    from ajax.extensions.base import Extension

    classes = {
        cls
        for module in pkgutil.iter_modules(ajax.extensions.__path__)
        for cls in vars(importlib.import_module(f"ajax.extensions.{module.name}")).values()
        if isinstance(cls, type) and issubclass(cls, Extension) and cls.__module__.startswith("ajax.extensions.")
    }
    return sorted(
        (
            (cls, field.name, field.type)
            for cls in classes
            for field in dataclasses.fields(cls)
            if field.init and field.type in ("int", "float", "bool")
        ),
        key=lambda entry: (entry[0].__name__, entry[1]),
    )


EXTENSION_WRONG = {
    "int": [0, -1, 2.5, True, "3", math.nan],
    "float": [-1.0, math.nan, math.inf, "0.5", True],
    "bool": ["yes", "False", 1, None],
}


def test_every_extension_has_fields_this_file_checks():
    assert {cls.__name__ for cls, _, _ in extension_fields()} >= {
        "CloningPretrain",
        "CriticPretrain",
        "EDGEExploration",
        "IBRLTargets",
        "ImitationLoss",
        "JSRLCurriculum",
        "OnlineCloning",
        "ResidualPolicy",
    }


@pytest.mark.parametrize(
    ("cls", "name", "annotation"), extension_fields(), ids=lambda v: getattr(v, "__name__", str(v))
)
def test_each_extension_field_refuses_wrong_values_naming_the_extension_and_itself(cls, name, annotation):
    def expert(obs):
        return obs

    cls(expert=expert)  # the defaults are accepted
    for value in EXTENSION_WRONG[annotation]:
        with pytest.raises((ValueError, TypeError)) as refused:
            cls(expert=expert, **{name: value})
        assert f"{cls.__name__}'s {name}" in str(refused.value), f"{cls.__name__}({name}={value!r}): {refused.value}"
