"""SimbaV2's hyperspherical networks: unit-norm features and kernels, the Scaler's start, and SAC built on them."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ajax import SAC, TQC
from ajax.agents.base import builds_hyperspherical
from ajax.agents.registry import AGENTS
from ajax.networks.hyperspherical import (
    HypersphericalActor,
    HypersphericalEnsemble,
    HypersphericalTrunk,
    Scaler,
    SimbaV2Network,
    l2_normalize,
    project_weights,
)


def test_l2_normalize_by_hand():
    np.testing.assert_allclose(l2_normalize(jnp.array([3.0, 4.0])), [0.6, 0.8], rtol=1e-6)
    np.testing.assert_array_equal(l2_normalize(jnp.zeros(3)), jnp.zeros(3))  # left at zero, not NaN


def test_scaler_starts_at_its_initial_value_whatever_its_scale():
    params = Scaler(0.5, 0.01).init(jax.random.PRNGKey(0), jnp.ones(3))
    np.testing.assert_allclose(params["params"]["scaler"], 0.01)
    np.testing.assert_allclose(Scaler(0.5, 0.01).apply(params, jnp.array([1.0, 2.0, 4.0])), [0.5, 1.0, 2.0])


def test_trunk_features_are_unit_norm():
    trunk = HypersphericalTrunk(SimbaV2Network(16, 2))
    x = jax.random.normal(jax.random.PRNGKey(1), (5, 3)) * 100.0
    params = trunk.init(jax.random.PRNGKey(0), x)
    np.testing.assert_allclose(jnp.linalg.norm(trunk.apply(params, x), axis=-1), 1.0, rtol=1e-5)


def test_projection_normalises_every_kernel_column_and_nothing_else():
    net = HypersphericalEnsemble(SimbaV2Network(8, 1), n=2, outputs=5)
    params = net.init(jax.random.PRNGKey(0), jnp.zeros((1, 3)), jnp.zeros((1, 2)))
    scaled = jax.tree.map(lambda x: 3.0 * x + 0.5, params)
    projected = project_weights(scaled)
    flat, flat_scaled = jax.tree_util.tree_leaves_with_path(projected), jax.tree_util.tree_leaves(scaled)
    for (path, leaf), before in zip(flat, flat_scaled, strict=True):
        if "HyperDense" in jax.tree_util.keystr(path):
            np.testing.assert_allclose(jnp.linalg.norm(leaf, axis=-2), 1.0, rtol=1e-5)  # per member, per output unit
        else:
            np.testing.assert_array_equal(leaf, before)  # scalers and biases untouched
    plain = {"params": {"Dense_0": {"kernel": jnp.ones((2, 2))}}}
    assert project_weights(plain) is plain


def test_actor_log_std_is_bounded():
    actor = HypersphericalActor(SimbaV2Network(8, 1), 2)
    params = actor.init(jax.random.PRNGKey(0), jnp.zeros(3))
    params = jax.tree.map(lambda x: 1e3 * x, params)
    scale = actor.apply(params, jnp.ones(3)).distribution.distribution.scale
    assert bool(jnp.all((scale >= np.exp(-10.0) * 0.999) & (scale <= np.exp(2.0) * 1.001)))


@pytest.mark.parametrize("bad", [0, -1, 2.5, True])
def test_network_sizes_are_checked(bad):
    with pytest.raises(ValueError, match="hidden_dim must be a positive integer"):
        SimbaV2Network(bad, 1)


def test_sac_on_simbav2_networks_trains_with_kernels_on_the_sphere():
    agent = SAC(
        "Pendulum-v1",
        actor_architecture=SimbaV2Network(16, 1),
        critic_architecture=SimbaV2Network(32, 1),
        learning_starts=100,
        buffer_size=500,
        batch_size=32,
    )
    state, _ = agent.train(seed=0, n_timesteps=300)
    assert int(jnp.asarray(state.n_updates).reshape(-1)[0]) > 0
    assert all(bool(jnp.all(jnp.isfinite(x))) for x in jax.tree.leaves(state.critic_state.params))
    for network in (state.actor_state.params, state.critic_state.params):
        for path, leaf in jax.tree_util.tree_leaves_with_path(network):
            if "HyperDense" in jax.tree_util.keystr(path):
                np.testing.assert_allclose(jnp.linalg.norm(leaf, axis=-2), 1.0, rtol=1e-4)


def test_only_the_agents_that_build_simbav2_networks_name_them_in_their_keyword_tables():
    builders = {name for name, agent in AGENTS.items() if builds_hyperspherical(agent)}
    assert builders == {"SAC", "SimbaV2"}
    for name, agent in AGENTS.items():
        accepts = [entry.accepts for entry in agent.hyperparameters.declared.values()]
        assert any("SimbaV2Network" in text for text in accepts) == (name in builders), name


def test_agents_without_hyperspherical_networks_refuse_them():
    with pytest.raises(TypeError, match="not a SimbaV2Network: SAC, SimbaV2 build"):
        TQC("Pendulum-v1", critic_architecture=SimbaV2Network(32, 1))
    with pytest.raises(ValueError, match="use_sde=True"):
        SAC("Pendulum-v1", actor_architecture=SimbaV2Network(16, 1), use_sde=True)
