"""docs/brax.md maps every key of Brax's `ppo.train` and `sac.train`, and no other, onto Ajax,
and names every Brax setting Ajax declares."""

import inspect
import re
from pathlib import Path

import pytest

from ajax import PPO, SAC
from ajax.agents.PPO.PPO import BRAX_SETTINGS

PAGE = (Path(__file__).resolve().parent.parent / "docs" / "brax.md").read_text()


def keys_tabled(heading: str) -> list[str]:
    """The first column's keys of the table under `heading`."""
    section = PAGE.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `(\w+)`[^|]*\|", section, re.M)


@pytest.mark.parametrize(
    ("trainer", "heading"), [("ppo", "Brax's `ppo.train`, key by key"), ("sac", "Brax's `sac.train`, key by key")]
)
def test_the_table_names_every_key_of_braxs_trainer(trainer, heading):
    train = pytest.importorskip(f"brax.training.agents.{trainer}.train").train
    tabled = keys_tabled(heading)
    assert len(tabled) == len(set(tabled)), "a key is tabled twice"
    assert set(tabled) == set(inspect.signature(train).parameters)


def test_the_page_names_every_brax_keyword_ajax_declares():
    declared = set(BRAX_SETTINGS.declared) | {"n_minibatches"}
    assert declared <= set(inspect.signature(PPO).parameters)
    assert "reward_scaling" in inspect.signature(SAC).parameters
    assert declared <= set(keys_tabled("The keywords"))
