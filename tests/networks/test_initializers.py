"""Ajax's LAPACK-free orthogonal initialiser."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ajax.networks.initializers import orthogonal
from ajax.networks.mlp import MLP


@pytest.mark.parametrize("shape", [(4, 64), (64, 64), (64, 2), (256, 256), (3, 1)])
def test_orthogonal_rows_or_columns_at_the_given_scale(shape):
    weights = orthogonal(2.0)(jax.random.PRNGKey(0), shape) / 2.0
    gram = weights.T @ weights if shape[0] >= shape[1] else weights @ weights.T
    np.testing.assert_allclose(gram, jnp.eye(gram.shape[0]), atol=2e-6)


def test_matches_the_sign_corrected_qr_of_the_same_gaussian():
    """Gram-Schmidt's Q is QR's Q with R's diagonal made positive (Saxe et al. 2014)."""
    key = jax.random.PRNGKey(3)
    ours = orthogonal(1.0)(key, (32, 16))
    q, r = np.linalg.qr(np.asarray(jax.random.normal(key, (32, 16))))
    np.testing.assert_allclose(ours, q * np.sign(np.diag(r)), atol=1e-5)


def test_different_keys_give_different_matrices():
    a, b = (orthogonal()(jax.random.PRNGKey(k), (8, 8)) for k in (0, 1))
    assert not np.allclose(a, b)


def test_fan_in_uniform_layers_start_as_torchs_default():
    """Weights and biases in U(-1/sqrt(fan_in), 1/sqrt(fan_in)), spread over the whole range."""
    params = MLP(("256", "relu", "64", "relu"), fan_in_uniform=True).init(jax.random.PRNGKey(0), jnp.zeros((1, 16)))
    for name, fan_in in (("Dense_0", 16), ("Dense_1", 256)):
        for leaf in params["params"][name].values():
            bound = 1.0 / np.sqrt(fan_in)
            assert float(jnp.max(jnp.abs(leaf))) <= bound
            assert float(jnp.max(leaf)) > 0.8 * bound and float(jnp.min(leaf)) < -0.8 * bound


def test_no_network_starts_from_a_lapack_decomposition():
    """Flax's orthogonal initialiser is a QR decomposition, a LAPACK call that the seed vmap
    batches and that deadlocked a two-seed SimbaV2 run on this project's CPUs."""
    from pathlib import Path

    import ajax

    root = Path(ajax.__file__).parent
    flax_orthogonal = re.compile(r"(?<!ajax\.networks\.)initializers\.orthogonal|linalg\.qr")
    offenders = [str(path.relative_to(root)) for path in root.rglob("*.py") if flax_orthogonal.search(path.read_text())]
    assert not offenders, offenders
