"""DreamerV3's observations: the reference's image encoder and decoder (danijar/dreamerv3,
`rssm.py`) on images kept as uint8, a dict's vectors beside them, action masks, and the refusals."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ajax import DreamerV3
from ajax.agents.DreamerV3.networks import SIZES, WorldModel, features, initial_latent, predicted_mask
from ajax.agents.DreamerV3.observations import (
    ObservationDecoder,
    ObservationEncoder,
    channels,
    image_stages,
    reconstruction_loss,
)
from ajax.distributional import symlog
from ajax.logging.wandb_logging import LoggingConfig
from ajax.state import ObservationPart
from tests.probe_envs import FlippedLitSide, MaskedBestAction

SIZE = SIZES["1m"]
PIXELS = ObservationPart(None, (64, 64, 3), "uint8", 1 / 255)


def image(shape: tuple[int, ...]) -> ObservationPart:
    return ObservationPart(None, shape, "uint8", 1 / 255)


@pytest.mark.parametrize(
    ("shape", "stages"),
    [((64, 64, 3), 4), ((96, 96, 1), 4), ((10, 10, 4), 1), ((6, 6, 1), 1), ((48, 32, 3), 3)],
)
def test_the_cnn_halves_as_often_as_the_image_allows_up_to_the_references_four(shape, stages):
    assert image_stages((image(shape),)) == stages


def test_an_image_that_does_not_halve_to_3_to_16_pixels_is_refused_naming_its_size():
    with pytest.raises(ValueError, match="84x84 does not halve evenly"):
        image_stages((image((84, 84, 1)),))
    with pytest.raises(ValueError, match="share a resolution"):
        image_stages((ObservationPart("a", (64, 64, 3), "uint8"), ObservationPart("b", (32, 32, 3), "uint8")))


def test_the_stage_channels_are_the_model_depth_times_2_3_4_4():
    assert SIZE.depth == 4 and SIZES["200m"].depth == 64  # the reference's size1m and size200m depths
    assert channels(SIZE.depth, 4) == (8, 12, 16, 16)


def test_the_encoder_reads_64x64_pixels_into_the_last_stages_4x4_map_beside_the_vectors():
    parts = (ObservationPart("image", (64, 64, 3), "uint8", 1 / 255), ObservationPart("state", (5,)))
    encoder = ObservationEncoder(parts, SIZE.units, SIZE.depth)
    obs = {"image": jnp.zeros((2, 3, 64, 64, 3), jnp.uint8), "state": jnp.ones((2, 3, 5))}
    params = encoder.init(jax.random.PRNGKey(0), obs)
    assert encoder.apply(params, obs).shape == (2, 3, SIZE.units + 4 * 4 * 16)
    convs = [params["params"][f"Conv_{i}"]["kernel"].shape for i in range(4)]
    assert convs == [(5, 5, 3, 8), (5, 5, 8, 12), (5, 5, 12, 16), (5, 5, 16, 16)]


def test_the_encoder_reads_pixels_in_their_units_whatever_they_are_stored_as():
    """255 stored as uint8 at scale 1/255 is the same input as 1.0 stored as float32."""
    encoder = ObservationEncoder((image((10, 10, 2)),), SIZE.units, SIZE.depth)
    as_float = ObservationEncoder((ObservationPart(None, (10, 10, 2)),), SIZE.units, SIZE.depth)
    pixels = jax.random.bernoulli(jax.random.PRNGKey(1), 0.3, (4, 10, 10, 2))
    params = encoder.init(jax.random.PRNGKey(0), pixels.astype(jnp.uint8))
    stored = encoder.apply(params, pixels.astype(jnp.uint8) * 255)
    np.testing.assert_allclose(stored, as_float.apply(params, pixels.astype(jnp.float32)), rtol=1e-5, atol=1e-6)


def test_the_decoder_predicts_every_part_in_its_shape_and_pixels_in_0_1():
    parts = (ObservationPart("frame", (6, 6, 1), "uint8", 1 / 255), ObservationPart("flip", (1,)))
    decoder = ObservationDecoder(parts, SIZE.units, SIZE.depth, SIZE.deter)
    feat = features(initial_latent(SIZE, (2, 3)))
    feat = feat + jax.random.normal(jax.random.PRNGKey(0), feat.shape)
    params = decoder.init(jax.random.PRNGKey(1), feat)
    frame, flip = decoder.apply(params, feat)
    assert frame.shape == (2, 3, 6, 6, 1) and flip.shape == (2, 3, 1)
    assert float(frame.min()) > 0.0 and float(frame.max()) < 1.0
    # h reaches the map through one block per group of 8 channels, z through two linear maps
    assert params["params"]["BlockLinear_0"]["kernel"].shape == (8, SIZE.deter // 8, 3 * 3 * 8 // 8)


def test_the_reconstruction_is_pixels_squared_error_summed_plus_the_vectors_symlog_error():
    parts = (ObservationPart("frame", (2, 2, 1), "uint8", 1 / 255), ObservationPart("flip", (2,)))
    frame = jnp.array([255, 0, 0, 51], jnp.uint8).reshape(1, 2, 2, 1)
    obs = {"frame": frame, "flip": jnp.array([[3.0, -1.0]])}
    predictions = (jnp.full((1, 2, 2, 1), 0.5), jnp.zeros((1, 2)))
    pixels = 0.5**2 + 0.5**2 + 0.5**2 + (0.5 - 0.2) ** 2
    vectors = float(symlog(jnp.array(3.0)) ** 2 + symlog(jnp.array(-1.0)) ** 2)
    np.testing.assert_allclose(reconstruction_loss(predictions, obs, parts), [pixels + vectors], rtol=1e-6)


def test_the_reconstruction_loss_reaches_the_cnn_and_the_decoder():
    parts = (image((10, 10, 4)),)
    model = WorldModel(SIZE, 0, parts=parts)
    latent = initial_latent(SIZE, (2,))
    obs = jnp.ones((2, 10, 10, 4), jnp.uint8)
    params = model.init(jax.random.PRNGKey(0), latent, jnp.zeros((2, 3)), obs)
    feat = features(latent) + 1.0

    def loss(params):
        embedding = model.apply(params, obs, method=WorldModel.encode)
        return model.apply(params, feat, obs, method=WorldModel.reconstruction_loss).sum() + embedding.sum()

    grads = jax.grad(loss)(params)["params"]
    assert all(float(jnp.abs(g).sum()) > 0 for g in jax.tree.leaves(grads["encoder"]))
    assert all(float(jnp.abs(g).sum()) > 0 for g in jax.tree.leaves(grads["decoder"]))


def test_encoder_cnn_is_refused_where_it_cannot_read_and_other_encoders_are_refused():
    with pytest.raises(ValueError, match=r"observations have shape \(4,\)"):
        DreamerV3("CartPole-v1", encoder="cnn")
    with pytest.raises(ValueError, match="no decoder"):
        DreamerV3("Breakout-MinAtar", encoder="nature_cnn")
    agent = DreamerV3("Breakout-MinAtar", encoder="cnn")
    assert agent.env_args.observation_parts == (ObservationPart(None, (10, 10, 4), "uint8", 1.0),)


def test_a_dict_of_a_frame_and_a_coin_trains_with_the_frame_kept_as_uint8_in_replay():
    agent = DreamerV3(
        FlippedLitSide(),
        encoder="cnn",
        n_envs=2,
        batch_size=2,
        batch_length=4,
        train_ratio=8,
        buffer_size=64,
        warmup_updates=0,
    )
    state, evaluations = agent.train(
        seed=0, n_timesteps=48, num_episode_test=2, logging_config=LoggingConfig(log_frequency=24)
    )
    replay = state.collector_state.buffer_state.obs
    assert replay["frame"].dtype == jnp.uint8 and replay["frame"].shape[-3:] == (6, 6, 1)
    assert replay["flip"].dtype == jnp.float32
    frames = np.asarray(replay["frame"][:, :, :20])
    assert set(np.unique(frames)) == {0, 255} and (frames.reshape(-1, 36).sum(-1) == 255).all()
    assert int(state.n_updates[0]) > 0
    assert np.isfinite(np.asarray(evaluations["world_model/reconstruction_loss"])).all()
    assert np.isfinite(np.asarray(evaluations["Eval/episodic mean reward"])).all()


def test_the_mask_head_allows_what_it_gives_even_odds_or_better_and_everything_when_it_allows_nothing():
    logits = jnp.array([[2.0, -1.0, 0.5], [-3.0, -0.1, -2.0]])
    np.testing.assert_array_equal(predicted_mask(logits), [[True, False, True], [True, True, True]])


def test_a_masked_action_is_never_taken_though_it_pays_the_most():
    """MaskedBestAction pays 0, 1 and 10 for its three actions and forbids the third: DreamerV3
    acts, imagines and evaluates within the mask, and its mask head learns the mask."""
    agent = DreamerV3(
        MaskedBestAction(),
        n_envs=2,
        batch_size=4,
        batch_length=4,
        train_ratio=16,
        buffer_size=200,
        warmup_updates=0,
        learning_rate=1e-3,
    )
    state, evaluations = agent.train(
        seed=[0, 1], n_timesteps=200, num_episode_test=4, logging_config=LoggingConfig(log_frequency=100)
    )
    actions = np.asarray(state.collector_state.buffer_state.action)
    assert actions.shape == (2, 2, 100) and not (actions == 2).any()  # every row of both seeds
    np.testing.assert_array_equal(np.asarray(evaluations["Eval/episodic mean reward"])[:, -1], [1.0, 1.0])
    assert (np.asarray(evaluations["world_model/action_mask_loss"])[:, -1] < 0.05).all()
