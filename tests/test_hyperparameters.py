"""`ajax.hyperparameters`: one declaration gives the signature, the checks, the sweepable set and the table."""

import inspect

import pytest

from ajax import ASAC, SAC
from ajax.hyperparameters import choice, count, flag, keywords, learning_rate, number
from ajax.schedule import linear

DECLARED = keywords(
    rate=learning_rate(1e-3),
    gamma=number(0.99, "(0, 1]", sweep=True, doc="the discount"),
    steps=count(8, doc="steps per round"),
    kind=choice("a", ("a", "b")),
    on=flag(True),
)


def test_bind_fills_defaults_checks_each_value_and_reads_as_attributes():
    settings = DECLARED.bind("Agent", {"steps": 4})
    assert (settings.rate, settings.gamma, settings.steps, settings.kind, settings.on) == (1e-3, 0.99, 4, "a", True)
    assert DECLARED.bind("Agent", {"rate": linear(1e-3, 0.0, 10)}).rate(0) == pytest.approx(1e-3)
    with pytest.raises(ValueError, match=r"^gamma must lie in \(0, 1\], got 1\.5\.$"):
        DECLARED.bind("Agent", {"gamma": 1.5})
    with pytest.raises(ValueError, match="^steps must be a positive integer, got 2.5.$"):
        DECLARED.bind("Agent", {"steps": 2.5})
    with pytest.raises(ValueError, match="^kind must be one of 'a', 'b', got 'c'.$"):
        DECLARED.bind("Agent", {"kind": "c"})
    with pytest.raises(ValueError, match="^on must be True or False"):
        DECLARED.bind("Agent", {"on": 1})


def test_an_unknown_keyword_is_pythons_type_error_with_the_close_matches():
    unknown = r"^Agent\(\) got an unexpected keyword argument 'gama'\. Did you mean gamma\?$"
    with pytest.raises(TypeError, match=unknown):
        DECLARED.bind("Agent", {"gama": 0.9})


def test_a_descendant_moves_defaults_fixes_keywords_and_adds_its_own():
    child = DECLARED.with_defaults(steps=16).fixing(gamma=1.0) | keywords(extra=count(2))
    assert list(child.declared) == ["rate", "steps", "kind", "on", "extra"]
    settings = child.bind("Child", {})
    assert (settings.steps, settings.gamma, settings.extra) == (16, 1.0, 2)
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'gamma': Child sets gamma=1.0 itself\.$"):
        child.bind("Child", {"gamma": 0.9})  # fixed: the descendant sets it itself
    assert DECLARED.sweepable == {"rate", "gamma"} and child.sweepable == {"rate"}
    with pytest.raises(KeyError):
        DECLARED.with_defaults(missing=1)


def test_the_agents_signature_and_sweepable_set_are_the_declarations():
    signature = inspect.signature(SAC)
    assert list(signature.parameters)[0] == "env_id"
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in list(signature.parameters.values())[1:])
    declared = SAC.hyperparameters.declared
    assert {name: p.default for name, p in list(signature.parameters.items())[1:]} == {
        name: entry.default for name, entry in declared.items()
    }
    assert SAC.sweepable == {name for name, entry in declared.items() if entry.sweepable}
    # ASAC is SAC's declaration with the discount fixed at 1: not a keyword, not sweepable.
    assert "gamma" not in inspect.signature(ASAC).parameters and "gamma" not in ASAC.sweepable
    assert ASAC.hyperparameters.fixed["gamma"] == 1.0


def test_the_table_lists_each_keyword_not_declared_as_the_shared_ones():
    table = DECLARED.table(shared=keywords(on=DECLARED.declared["on"])).splitlines()
    assert table[0] == "| keyword | default | accepts | sweep | meaning |"
    assert "| `gamma` | `0.99` | (0, 1] | yes | the discount |" in table
    assert not any(row.startswith("| `on` |") for row in table)
