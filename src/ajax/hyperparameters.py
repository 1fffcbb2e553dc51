"""Each constructor keyword of an agent, declared once.

A declaration carries the keyword's default, the values it accepts and whether a sweep may
vary it. The constructor's signature, the checks at construction, the sweepable set, the
CLI's `--param` names, config.json and the agents page's tables are all read from it, so a
keyword cannot be documented with one default, checked with another rule and built with a
third.

    hyperparameters = two_networks(3e-4, ("256", "relu")) | keywords(
        gamma=number(0.99, "(0, 1]", sweep=True, doc="the discount"),
        batch_size=count(256),
    ) | ENVIRONMENT
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from ajax.checks import require_counts, require_finite_positive, require_flags, require_in_interval
from ajax.schedule import check_learning_rate, check_schedule

Check = Callable[[str, Any], None]


@dataclass(frozen=True)
class Hyperparameter:
    """One keyword: its default, the rule a value must meet (`accepts` says it in words), whether
    `ajax.sweep` may vary it inside one program (a number the program computes with, never a
    shape, a loop length or a Python branch), and what it means."""

    default: Any
    check: Check | None = None
    accepts: str = "see the meaning"
    sweepable: bool = False
    doc: str = ""

    def checked(self, name: str, value: Any) -> None:
        if self.check is not None:
            self.check(name, value)


def _optional(check: Check) -> Check:
    return lambda name, value: None if value is None else check(name, value)


def count(default: int | None, minimum: int = 1, *, optional: bool = False, doc: str = "") -> Hyperparameter:
    """A whole number of something (steps, envs, layers) of at least `minimum`; None too when `optional`."""

    def check(name: str, value: Any) -> None:
        require_counts(minimum, **{name: value})

    accepts = "integer >= 1" if minimum == 1 else f"integer >= {minimum}"
    return Hyperparameter(
        default,
        _optional(check) if optional else check,
        f"{accepts}, or None" if optional else accepts,
        doc=doc,
    )


def number(
    default: float | None, interval: str = "(0, inf)", *, sweep: bool = False, optional: bool = False, doc: str = ""
) -> Hyperparameter:
    """A real number in `interval` (written as a message shows it: "(0, 1]"); None too when `optional`."""

    def check(name: str, value: Any) -> None:
        if interval == "(0, inf)":  # a rate, a norm or a scale: refused in the words every agent used
            require_finite_positive(**{name: value})
        else:
            require_in_interval(interval, **{name: value})

    return Hyperparameter(
        default,
        _optional(check) if optional else check,
        f"{interval}, or None" if optional else interval,
        sweep,
        doc,
    )


def learning_rate(default: Any, *, doc: str = "") -> Hyperparameter:
    """An optimiser's step size: a number above 0, or a schedule of the update count (`ajax.schedule`),
    called once here on an abstract count so that a wrong one is refused naming the keyword."""

    def check(name: str, value: Any) -> None:
        check_learning_rate(**{name: value})

    return Hyperparameter(default, check, "(0, inf), or a schedule", True, doc or "Adam's step size")


def schedule(default: Any, minimum: float = 0.0, *, doc: str = "") -> Hyperparameter:
    """A number of at least `minimum`, or a function of the timestep (`ajax.schedule`), called once
    here on an abstract timestep so that a wrong one is refused naming the keyword."""

    def check(name: str, value: Any) -> None:
        check_schedule(name, value, minimum=minimum)

    return Hyperparameter(default, check, f"[{minimum:g}, inf), or a schedule", True, doc)


def flag(default: bool, *, doc: str = "") -> Hyperparameter:
    """A switch: True or False."""

    def check(name: str, value: Any) -> None:
        require_flags(**{name: value})

    return Hyperparameter(default, check, "True, False", doc=doc)


def choice(default: Any, options: tuple[Any, ...], *, doc: str = "") -> Hyperparameter:
    """One of `options`."""

    def check(name: str, value: Any) -> None:
        if value not in options:
            raise ValueError(f"{name} must be one of {', '.join(map(repr, options))}, got {value!r}.")

    return Hyperparameter(default, check, ", ".join(map(repr, options)), doc=doc)


def checked_later(default: Any, accepts: str, *, doc: str = "") -> Hyperparameter:
    """A keyword whose rule needs more than its own value (an architecture, an env's params, an
    expert): the constructor checks it, `accepts` says what it takes."""
    return Hyperparameter(default, None, accepts, doc=doc)


def keywords(**entries: Hyperparameter) -> Hyperparameters:
    """These keywords, in this order."""
    return Hyperparameters(entries)


class Settings(Mapping[str, Any]):
    """The values one construction was given, defaults filled in and checked; read as attributes."""

    def __init__(self, values: Mapping[str, Any]) -> None:
        self._values = dict(values)

    def __getattr__(self, name: str) -> Any:
        try:
            return self.__dict__["_values"][name]
        except KeyError:
            raise AttributeError(name) from None

    def __getitem__(self, name: str) -> Any:
        return self._values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)


@dataclass(frozen=True)
class Hyperparameters:
    """An agent's keywords in their signature's order, and the `fixed` ones a descendant sets itself.

    A descendant starts from its parent's declarations: it adds its own (`extended`), moves
    defaults (`with_defaults`), and fixes what it has no use for (`fixing`: ASAC's discount is
    1), so a keyword shared along a line of agents is still declared once.
    """

    declared: Mapping[str, Hyperparameter]
    fixed: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "declared", MappingProxyType(dict(self.declared)))
        object.__setattr__(self, "fixed", MappingProxyType(dict(self.fixed)))

    def __or__(self, other: Hyperparameters) -> Hyperparameters:
        """`other`'s keywords after these (one already declared is replaced where it stands)."""
        return Hyperparameters({**self.declared, **other.declared}, {**self.fixed, **other.fixed})

    def extended(self, **entries: Hyperparameter) -> Hyperparameters:
        """These keywords added after the others (one already declared is replaced where it stands)."""
        return replace(self, declared={**self.declared, **entries})

    def with_defaults(self, **defaults: Any) -> Hyperparameters:
        """The same keywords, some with another default (a `Hyperparameter` replaces the whole entry)."""
        unknown = set(defaults) - set(self.declared)
        if unknown:
            raise KeyError(f"with_defaults: no keyword {sorted(unknown)} to change")
        entries = {
            name: entry if isinstance(entry, Hyperparameter) else replace(self.declared[name], default=entry)
            for name, entry in defaults.items()
        }
        return self.extended(**entries)

    def fixing(self, **values: Any) -> Hyperparameters:
        """These keywords taken from the user and set to `values`: the agent has no use for a choice there."""
        unknown = set(values) - set(self.declared)
        if unknown:
            raise KeyError(f"fixing: no keyword {sorted(unknown)} to fix")
        declared = {name: entry for name, entry in self.declared.items() if name not in values}
        return Hyperparameters(declared, {**self.fixed, **values})

    @property
    def sweepable(self) -> frozenset[str]:
        return frozenset(name for name, entry in self.declared.items() if entry.sweepable)

    def signature(self, first: str = "env_id") -> inspect.Signature:
        """`(self, env_id, *, <each keyword>=<default>)`: what `help()`, IDEs and `inspect` show.

        `first` names what the agent is built on: an env id, or TDMPC2MultiTask's dataset.
        """
        keyword = inspect.Parameter.KEYWORD_ONLY
        positional = inspect.Parameter.POSITIONAL_OR_KEYWORD
        return inspect.Signature(
            [inspect.Parameter("self", positional), inspect.Parameter(first, positional)]
            + [inspect.Parameter(name, keyword, default=entry.default) for name, entry in self.declared.items()]
        )

    def bind(self, owner: str, given: Mapping[str, Any]) -> Settings:
        """Every keyword's value (given, or its default), each checked, with the fixed ones.

        An unknown keyword raises the TypeError Python's own signature would, with close matches;
        a keyword the agent fixes says the value it keeps.
        """
        for name in given:
            if name in self.fixed:
                raise TypeError(
                    f"{owner}() got an unexpected keyword argument {name!r}: {owner} sets {name}="
                    f"{self.fixed[name]!r} itself."
                )
            if name not in self.declared:
                close = difflib.get_close_matches(name, list(self.declared), n=3)
                hint = f" Did you mean {', '.join(close)}?" if close else ""
                raise TypeError(f"{owner}() got an unexpected keyword argument {name!r}.{hint}")
        values = {name: given.get(name, entry.default) for name, entry in self.declared.items()}
        for name, entry in self.declared.items():
            entry.checked(name, values[name])
        return Settings({**values, **self.fixed})

    def table(self, shared: Hyperparameters | None = None) -> str:
        """These keywords as the agents page shows them, in Markdown: keyword, default, accepts, sweep, meaning.

        A keyword declared exactly as in `shared` (the keywords every agent takes, tabled once) is left out.
        """
        rows = ["| keyword | default | accepts | sweep | meaning |", "| --- | --- | --- | --- | --- |"]
        for name, entry in self.declared.items():
            if shared is not None and shared.declared.get(name) == entry:
                continue
            cells = (f"`{name}`", f"`{entry.default!r}`", entry.accepts, "yes" if entry.sweepable else "", entry.doc)
            rows.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
        return "\n".join(rows)
