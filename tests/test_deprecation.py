"""warn_inert: one FutureWarning per inert keyword that was set, at the caller's line."""

import warnings

import pytest

from ajax.deprecation import warn_inert


def constructor(n_epochs=None, bc_loss_type=None, kept=1):
    warn_inert("the loss is the log-likelihood; use n_updates_per_iter", n_epochs=n_epochs, bc_loss_type=bc_loss_type)
    return kept


def test_each_inert_keyword_set_warns_at_the_callers_line():
    with pytest.warns(FutureWarning) as record:
        constructor(n_epochs=4, bc_loss_type="mse")  # this line
    assert [str(w.message).split("=")[0] for w in record] == ["n_epochs", "bc_loss_type"]
    assert "no longer does anything and will be removed: the loss is the log-likelihood" in str(record[0].message)
    assert (
        record[0].filename == __file__
        and record[0].lineno == test_each_inert_keyword_set_warns_at_the_callers_line.__code__.co_firstlineno + 2
    )


def test_keywords_left_at_none_say_nothing():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert constructor(kept=2) == 2
