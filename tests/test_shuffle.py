"""`take_rows` gathers a pytree's rows as per-leaf indexing does, with one gather per packed group."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ajax.shuffle import take_rows

N = 6


def mixed_tree(key: jax.Array) -> dict[str, jax.Array]:
    """Two f32 leaves of different shapes, an int32, a bool and a bf16 one, rows on axis 0."""
    a, b, c, d, e = jax.random.split(key, 5)
    return {
        "value": jax.random.normal(a, (N,)),
        "action": jax.random.randint(b, (N,), 0, 100),
        "done": jax.random.bernoulli(c, shape=(N,)),
        "obs": jax.random.normal(d, (N, 4)).astype(jnp.bfloat16),
        "image": jax.random.normal(e, (N, 2, 3)),
    }


def per_leaf(tree: dict[str, jax.Array], indices: jax.Array) -> dict[str, jax.Array]:
    return jax.tree.map(lambda x: x[indices], tree)


def assert_same(got: dict[str, jax.Array], want: dict[str, jax.Array]) -> None:
    assert jax.tree.structure(got) == jax.tree.structure(want)
    for x, y in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
        assert x.dtype == y.dtype and x.shape == y.shape
        assert np.array_equal(np.asarray(x), np.asarray(y))


def test_equals_per_leaf_indexing():
    key, index_key = jax.random.split(jax.random.key(0))
    tree, indices = mixed_tree(key), jax.random.permutation(index_key, N)
    assert_same(take_rows(tree, indices), per_leaf(tree, indices))
    # On a later axis, as PPO's sequences are shuffled: (length, n_sequences, ...).
    stacked = jax.tree.map(lambda x: jnp.stack([x, x[::-1]]), tree)
    assert_same(take_rows(stacked, indices, axis=1), jax.tree.map(lambda x: x[:, indices], stacked))


def test_vmapped_with_per_seed_indices_one_gather_per_packed_group():
    keys = jax.random.split(jax.random.key(1), 3)
    trees = jax.vmap(mixed_tree)(keys)
    indices = jax.vmap(lambda k: jax.random.permutation(k, N))(jax.random.split(jax.random.key(2), 3))
    assert_same(jax.vmap(take_rows)(trees, indices), jax.vmap(per_leaf)(trees, indices))
    # The f32 leaves with the one-element flag, the int32, the bf16: three gathers for five.
    assert gathers(jax.vmap(take_rows), trees, indices) == 3
    assert gathers(jax.vmap(per_leaf), trees, indices) == 5


def gathers(fn, *args) -> int:
    """The gather ops in `fn`'s lowered StableHLO (the op's name, not its dimension-numbers attribute)."""
    return jax.jit(fn).lower(*args).as_text().count('"stablehlo.gather"')


def test_an_index_exact_in_float_is_gathered_with_the_floats_and_keeps_its_dtype():
    key, index_key = jax.random.split(jax.random.key(3))
    tree, indices = mixed_tree(key), jax.random.permutation(index_key, N)
    tree["action"] = tree["action"] + (1 << 24) - 100  # the largest integers float32 holds exactly
    index_in_float = frozenset({"action"})
    assert_same(take_rows(tree, indices, exact_in_float=index_in_float), per_leaf(tree, indices))
    # f32 with the flag and the action, bf16: two gathers for three.
    assert gathers(lambda t, i: take_rows(t, i, exact_in_float=index_in_float), tree, indices) == 2
    assert gathers(take_rows, tree, indices) == 3


def test_a_weakly_typed_leaf_comes_back_with_its_values_strongly_typed():
    tree = {"value": jnp.arange(N, dtype=jnp.float32), "bonus": jnp.arange(N) * 0.5}  # weak: an int times 0.5
    assert jax.typeof(tree["bonus"]).weak_type
    taken = take_rows(tree, jnp.arange(N)[::-1])
    assert not jax.typeof(taken["bonus"]).weak_type and taken["bonus"].dtype == jnp.float32
    assert np.array_equal(np.asarray(taken["bonus"]), np.asarray(tree["bonus"])[::-1])


def test_prng_keys_are_gathered_apart_as_keys():
    keys = jax.random.split(jax.random.key(4), N)
    tree = {"key": keys, "value": jnp.arange(N, dtype=jnp.float32)}
    indices = jnp.arange(N)[::-1]
    taken = take_rows(tree, indices)
    assert jax.dtypes.issubdtype(taken["key"].dtype, jax.dtypes.prng_key)
    assert np.array_equal(np.asarray(jax.random.key_data(taken["key"])), np.asarray(jax.random.key_data(keys[indices])))
    assert np.array_equal(np.asarray(taken["value"]), np.arange(N)[::-1])
