"""warn_inert: one FutureWarning per inert keyword that was set, at the caller's line.
renamed_keywords: an old name refused with the new one.
"""

import inspect
import warnings

import pytest

from ajax.deprecation import REMOVED_KEYWORDS, removed_keywords, renamed_keywords, warn_inert


def constructor(n_epochs=None, bc_loss_type=None, kept=1):
    warn_inert(
        "UDRL", "the loss is the log-likelihood; use n_updates_per_iter", n_epochs=n_epochs, bc_loss_type=bc_loss_type
    )
    return kept


def test_each_inert_keyword_set_warns_at_the_callers_line():
    with pytest.warns(FutureWarning) as record:
        constructor(n_epochs=4, bc_loss_type="mse")  # this line
    assert [str(w.message).split(" has")[0] for w in record] == ["UDRL's n_epochs", "UDRL's bc_loss_type"]
    assert str(record[0].message) == (
        "UDRL's n_epochs has no effect and will be removed: the loss is the log-likelihood; use n_updates_per_iter"
    )
    assert (
        record[0].filename == __file__
        and record[0].lineno == test_each_inert_keyword_set_warns_at_the_callers_line.__code__.co_firstlineno + 2
    )


def test_keywords_left_at_none_say_nothing():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert constructor(kept=2) == 2


def test_the_architecture_pages_inert_keywords_warn_as_printed():
    from ajax import SAC
    from ajax.logging.wandb_logging import LoggingConfig

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        SAC("Pendulum-v1", jsrl_curriculum=True)  # SAC counts episode steps itself
        LoggingConfig(horizon=10_000)
    messages = [str(w.message) for w in caught if w.category is FutureWarning]
    assert messages == [
        "SAC's jsrl_curriculum has no effect and will be removed: SAC counts each env's steps in its episode "
        "when an extension reads them (JSRLCurriculum).",
        "LoggingConfig's horizon has no effect and will be removed: evaluations follow the run's horizon, "
        "train's total_timesteps.",
    ]
    assert {w.filename for w in caught if w.category is FutureWarning} == {__file__}


def test_a_renamed_keyword_is_refused_with_its_new_name_and_the_signature_kept():
    @renamed_keywords(old_name="new_name")
    class Owner:
        def __init__(self, new_name: int = 1) -> None:
            self.new_name = new_name

    with pytest.raises(TypeError, match=r"^Owner has no old_name=; it is called new_name: pass new_name=3\.$"):
        Owner(old_name=3)
    assert Owner(new_name=2).new_name == 2
    assert list(inspect.signature(Owner).parameters) == ["new_name"]


def test_ppos_num_minibatches_names_n_minibatches():
    from ajax import PPO

    message = r"^PPO has no num_minibatches=; it is called n_minibatches: pass n_minibatches=4\.$"
    with pytest.raises(TypeError, match=message):
        PPO("CartPole-v1", num_minibatches=4)
    assert "n_minibatches" in inspect.signature(PPO).parameters
    assert "num_minibatches" not in inspect.signature(PPO).parameters


@pytest.mark.parametrize(
    ("agent", "keyword"),
    [
        ("SAC", "pre_train_n_steps"),
        ("SAC", "use_expert_guidance"),
        ("TD3", "reset_actor_head_after_bc"),
        ("REDQ", "skip_actor_pretrain"),
        ("APO", "actor_cloning_epochs"),
        ("ASAC", "pid_actor_config"),
        ("AVG", "pid_actor_config"),
        ("PPO", "pid_actor_config"),
    ],
)
def test_a_removed_keyword_says_what_to_write_instead(agent, keyword):
    import ajax

    cls = getattr(ajax, agent)
    # Refused before the constructor runs: no env is built, so the id need not exist.
    with pytest.raises(TypeError, match=rf"{agent} no longer takes {keyword}=; instead: .*Keywords on their way out"):
        cls("no-such-env", **{keyword: 1})
    assert keyword not in inspect.signature(cls).parameters


def test_every_removed_keyword_is_in_the_architecture_pages_table():
    from pathlib import Path

    page = (Path(__file__).resolve().parent.parent / "docs" / "architecture.md").read_text()
    table = page[page.index("## Keywords on their way out") : page.index("## Compilation")]
    for keyword in REMOVED_KEYWORDS:
        assert f"`{keyword}`" in table, keyword


def test_removed_keywords_refuses_a_name_without_a_recorded_replacement():
    with pytest.raises(ValueError, match="no replacement recorded"):
        removed_keywords("made_up_keyword")
