"""DreamerV3's networks: the world model (encoder, RSSM, decoder, reward and continue heads),
the actor and the critic, as the reference builds them (danijar/dreamerv3, `rssm.py`,
`agent.py`, `embodied/jax/heads.py`), for vector observations and, through
`observations.py`, images.

The RSSM's state is a deterministic part h (a block-diagonal GRU of `deter` units in 8
blocks) and a stochastic part z (32 one-hot categoricals of `classes` classes, sampled with
straight-through gradients). The posterior reads h and the observation's embedding, the
prior h alone; both mix 1% of a uniform into their probabilities (unimix), so no class's
log-probability collapses and the KL stays finite.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import distrax
import flax.linen as nn
import jax
import jax.numpy as jnp

from ajax.agents.DreamerV3.observations import ObservationDecoder, ObservationEncoder, reconstruction_loss
from ajax.distributional import symlog, unimix_logits
from ajax.networks.world_model import BlockLinear, NormedMLP, RMSNorm, dense
from ajax.state import ACTION_MASK, MASKED, ObservationPart, allowed_actions

N_BINS = 255  # two-hot bins of the reward and value heads
MIN_STD, MAX_STD = 0.1, 1.0  # the continuous actor's bounded standard deviation


@dataclass(frozen=True)
class ModelSize:
    """The widths a model size fixes (the reference's `size*` presets)."""

    deter: int
    hidden: int
    classes: int
    units: int
    stoch: int = 32
    blocks: int = 8

    @property
    def depth(self) -> int:
        """The image CNN's channel unit: units / 16 in every preset of the reference (4 at 1m, 64 at 200m)."""
        return self.units // 16


def _named(d: int) -> ModelSize:
    """The named sizes above 1m: units = hidden = d, deter = 8 d, classes = d / 16."""
    return ModelSize(deter=8 * d, hidden=d, classes=d // 16, units=d)


SIZES: dict[str, ModelSize] = {
    "1m": ModelSize(deter=512, hidden=64, classes=4, units=64),
    "12m": _named(256),
    "25m": _named(384),
    "50m": _named(512),
    "100m": _named(768),
    "200m": _named(1024),
    "400m": _named(1536),
}


class Latent(NamedTuple):
    """The RSSM's state: h (..., deter) and z (..., stoch, classes), one-hot."""

    deter: jax.Array
    stoch: jax.Array


def initial_latent(size: ModelSize, batch: tuple[int, ...]) -> Latent:
    return Latent(jnp.zeros((*batch, size.deter)), jnp.zeros((*batch, size.stoch, size.classes)))


def features(latent: Latent) -> jax.Array:
    """The vector every head reads: h next to the flattened z."""
    return jnp.concatenate([latent.deter, latent.stoch.reshape(*latent.stoch.shape[:-2], -1)], -1)


def sample_one_hot(logits: jax.Array, key: jax.Array) -> jax.Array:
    """A one-hot sample whose gradient is the probabilities' (straight-through)."""
    index = jax.random.categorical(key, logits)
    probs = jax.nn.softmax(logits)
    return jax.nn.one_hot(index, logits.shape[-1]) + probs - jax.lax.stop_gradient(probs)


def mode_one_hot(logits: jax.Array) -> jax.Array:
    return jax.nn.one_hot(jnp.argmax(logits, -1), logits.shape[-1])


class RSSM(nn.Module):
    """The recurrent state-space model: `step` (the GRU), `posterior` and `prior` logits."""

    size: ModelSize
    unimix: float = 0.01

    def setup(self) -> None:
        size = self.size
        self.deter_in = dense(size.hidden)
        self.stoch_in = dense(size.hidden)
        self.action_in = dense(size.hidden)
        self.deter_norm, self.stoch_norm, self.action_norm = (RMSNorm() for _ in range(3))
        self.hidden_layer = BlockLinear(size.deter, size.blocks)
        self.hidden_norm = RMSNorm()
        self.gates = BlockLinear(3 * size.deter, size.blocks)
        self.obs_layer = dense(size.hidden)
        self.obs_norm = RMSNorm()
        self.obs_logits = dense(size.stoch * size.classes)
        self.prior_layers = [dense(size.hidden) for _ in range(2)]
        self.prior_norms = [RMSNorm() for _ in range(2)]
        self.prior_logits_layer = dense(size.stoch * size.classes)

    def step(self, latent: Latent, action: jax.Array) -> jax.Array:
        """h' = GRU(h, z, a): the reference's block GRU, its update gate biased towards keeping h."""
        size = self.size
        action = action / jax.lax.stop_gradient(jnp.maximum(1.0, jnp.abs(action)))
        stoch = latent.stoch.reshape(*latent.stoch.shape[:-2], -1)
        x = jnp.concatenate(
            [
                nn.silu(self.deter_norm(self.deter_in(latent.deter))),
                nn.silu(self.stoch_norm(self.stoch_in(stoch))),
                nn.silu(self.action_norm(self.action_in(action))),
            ],
            -1,
        )
        groups = lambda v: v.reshape(*v.shape[:-1], size.blocks, -1)  # noqa: E731
        flat = lambda v: v.reshape(*v.shape[:-2], -1)  # noqa: E731
        # Each block of h sees its own units and all of the mixed input.
        x = jnp.concatenate([groups(latent.deter), jnp.repeat(x[..., None, :], size.blocks, -2)], -1)
        x = nn.silu(self.hidden_norm(self.hidden_layer(flat(x))))
        reset, candidate, update = (flat(g) for g in jnp.split(groups(self.gates(x)), 3, -1))
        candidate = jnp.tanh(jax.nn.sigmoid(reset) * candidate)
        update = jax.nn.sigmoid(update - 1.0)
        return update * candidate + (1.0 - update) * latent.deter

    def _logits(self, layer: nn.Module, x: jax.Array) -> jax.Array:
        logits = layer(x).reshape(*x.shape[:-1], self.size.stoch, self.size.classes)
        return unimix_logits(logits, self.unimix)

    def posterior(self, deter: jax.Array, embedding: jax.Array) -> jax.Array:
        """q(z | h, e): unimixed logits (..., stoch, classes)."""
        x = nn.silu(self.obs_norm(self.obs_layer(jnp.concatenate([deter, embedding], -1))))
        return self._logits(self.obs_logits, x)

    def prior(self, deter: jax.Array) -> jax.Array:
        """p(z | h): unimixed logits (..., stoch, classes)."""
        x = deter
        for layer, norm in zip(self.prior_layers, self.prior_norms, strict=True):
            x = nn.silu(norm(layer(x)))
        return self._logits(self.prior_logits_layer, x)

    def __call__(self, latent: Latent, action: jax.Array, embedding: jax.Array) -> tuple[jax.Array, jax.Array]:
        deter = self.step(latent, action)
        return self.posterior(deter, embedding), self.prior(deter)


class WorldModel(nn.Module):
    """Encoder, RSSM, decoder, reward and continue heads.

    Observations are one flat vector of `obs_dim`, or, with `parts`, arrays kept in their own
    shapes, images read by the reference's CNN (`observations.py`).
    """

    size: ModelSize
    obs_dim: int
    unimix: float = 0.01
    parts: tuple[ObservationPart, ...] | None = None
    mask_actions: int = 0  # with an action mask: the number of actions its head predicts

    def setup(self) -> None:
        size, units = self.size, self.size.units
        if self.parts is None:
            self.encoder = NormedMLP(3, units)
            self.decoder = NormedMLP(3, units)
            self.decoder_out = dense(self.obs_dim)
        else:
            read = tuple(part for part in self.parts if part.key != ACTION_MASK)  # a mask is predicted, not read
            self.encoder = ObservationEncoder(read, units, size.depth)
            self.decoder = ObservationDecoder(read, units, size.depth, size.deter)
        if self.mask_actions:
            self.mask_mlp = NormedMLP(1, units)
            self.mask_out = dense(self.mask_actions)
        self.rssm = RSSM(self.size, self.unimix)
        self.reward_mlp = NormedMLP(1, units)
        self.reward_out = dense(N_BINS, outscale=0.0)
        self.continue_mlp = NormedMLP(1, units)
        self.continue_out = dense(1)

    def step(self, latent: Latent, action: jax.Array) -> jax.Array:
        return self.rssm.step(latent, action)

    def posterior(self, deter: jax.Array, embedding: jax.Array) -> jax.Array:
        return self.rssm.posterior(deter, embedding)

    def prior(self, deter: jax.Array) -> jax.Array:
        return self.rssm.prior(deter)

    def encode(self, obs: Any) -> jax.Array:
        """The embedding e of an observation; vectors are read in symlog space (any scale of input)."""
        if self.parts is None:
            return self.encoder(symlog(obs))
        return self.encoder(obs)

    def decode(self, feat: jax.Array) -> Any:
        """The predicted observation: symlog vectors (the reconstruction is a symlog MSE), images in [0, 1]."""
        if self.parts is None:
            return self.decoder_out(self.decoder(feat))
        return self.decoder(feat)

    def reconstruction_loss(self, feat: jax.Array, obs: Any) -> jax.Array:
        """Each row's squared error of the decoded observation, summed over its values."""
        if self.parts is None:
            return jnp.sum(jnp.square(self.decode(feat) - symlog(obs)), -1)
        return reconstruction_loss(self.decode(feat), obs, self.encoder.parts)

    def allowed_logits(self, feat: jax.Array) -> jax.Array:
        """Each action's logit of being allowed: imagination has no observation to read a mask from."""
        return self.mask_out(self.mask_mlp(feat))

    def reward_logits(self, feat: jax.Array) -> jax.Array:
        return self.reward_out(self.reward_mlp(feat))

    def continue_logit(self, feat: jax.Array) -> jax.Array:
        return self.continue_out(self.continue_mlp(feat))[..., 0]

    def __call__(self, latent: Latent, action: jax.Array, obs: jax.Array) -> tuple[Any, ...]:
        posterior, prior = self.rssm(latent, action, self.encode(obs))
        feat = features(latent)
        heads = (self.decode(feat), self.reward_logits(feat), self.continue_logit(feat))
        return posterior, prior, *heads, *((self.allowed_logits(feat),) if self.mask_actions else ())


class Actor(nn.Module):
    """pi(a | s): a categorical over discrete actions, or the reference's bounded normal.

    The bounded normal's mean is tanh of a linear map and its deviation lies in [0.1, 1];
    the output layers start at a hundredth of the usual scale, so the first policy is near
    uniform (discrete) or centred with deviation close to 1 (continuous).
    """

    units: int
    action_dim: int
    continuous: bool

    @nn.compact
    def __call__(self, feat: jax.Array) -> distrax.Distribution:
        x = NormedMLP(3, self.units)(feat)
        if not self.continuous:
            return distrax.Categorical(logits=dense(self.action_dim, outscale=0.01, name="logits")(x))
        mean = jnp.tanh(dense(self.action_dim, outscale=0.01, name="mean")(x))
        std = (MAX_STD - MIN_STD) * jax.nn.sigmoid(dense(self.action_dim, outscale=0.01, name="std")(x) + 2.0)
        return distrax.MultivariateNormalDiag(mean, std + MIN_STD)


class Critic(nn.Module):
    """v(s) as two-hot logits over `N_BINS` symlog-spaced bins; the output layer starts at zero."""

    units: int

    @nn.compact
    def __call__(self, feat: jax.Array) -> jax.Array:
        return dense(N_BINS, outscale=0.0, name="logits")(NormedMLP(3, self.units)(feat))


def masked(policy: distrax.Distribution, allowed: jax.Array | None) -> distrax.Distribution:
    """A categorical policy with the actions `allowed` forbids at zero probability (None: unmasked;
    a row that allows none is left unmasked, `allowed_actions`)."""
    if allowed is None:
        return policy
    return distrax.Categorical(logits=jnp.where(allowed_actions(allowed), policy.logits, MASKED))


def observed_mask(obs: Any) -> jax.Array | None:
    """The observation's action mask, or None where it carries none."""
    return obs[ACTION_MASK] if isinstance(obs, dict) and ACTION_MASK in obs else None


def predicted_mask(allowed_logits: jax.Array) -> jax.Array:
    """The actions the mask head calls allowed (p > 1/2); all of them where it allows none."""
    allowed = allowed_logits > 0.0
    return allowed | ~allowed.any(-1, keepdims=True)


def rssm_action(actor: Actor, action: jax.Array) -> jax.Array:
    """The action as the RSSM reads it: one-hot when discrete (acting, training and evaluation alike)."""
    return action if actor.continuous else jax.nn.one_hot(action, actor.action_dim)


def observe_sampled(
    model: WorldModel,
    params: Any,
    latent: Latent,
    action: jax.Array,
    embedding: jax.Array,
    first: jax.Array,
    key: jax.Array,
) -> tuple[Latent, jax.Array]:
    """h_t = f(h_{t-1}, z_{t-1}, a_{t-1}), z_t ~ q(z | h_t, e_t); a reset starts from zeros."""
    return observe_step(model, params, latent, action, embedding, first, lambda logits: sample_one_hot(logits, key))


def observe_step(
    model: WorldModel,
    params: Any,
    latent: Latent,
    action: jax.Array,
    embedding: jax.Array,
    first: jax.Array,
    draw: Callable[[jax.Array], jax.Array],
) -> tuple[Latent, jax.Array]:
    """One posterior step of the RSSM, the stochastic state drawn from its logits by `draw`
    (a sample while collecting and training, the mode in evaluation): the latent and the logits."""
    keep = (~first)[..., None]
    latent = Latent(latent.deter * keep, latent.stoch * keep[..., None])
    deter = model.apply(params, latent, action * keep, method=WorldModel.step)
    logits = model.apply(params, deter, embedding, method=WorldModel.posterior)
    return Latent(deter, draw(logits)), logits
