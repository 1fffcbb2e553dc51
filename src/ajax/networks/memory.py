"""Recurrent memory for agents that act from a history: GRU, LSTM, a windowed transformer and Mamba.

Every kind runs a whole sequence at once, as training on stored rollouts does, and one step at
a time, as acting does, with the same numbers: a step is a sequence of length 1 whose carry
came from the previous call. Rollouts cross episode ends, so each step comes with a reset
flag: the carry is zeroed before a reset step is processed, in every layer, and no kind lets
anything cross that boundary, forwards or in the gradient.

Shapes are time-major: inputs (T, B, D), resets (T, B), outputs (T, B, hidden_size).
"""

from __future__ import annotations

import dataclasses
import difflib
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp

from ajax.checks import require_counts
from ajax.networks.initializers import orthogonal

KINDS = ("gru", "lstm", "transformer", "mamba")
DT_MIN, DT_MAX = 1e-3, 1e-1  # Mamba's range for the initial step size Delta


@dataclass(frozen=True)
class MemoryConfig:
    """Which memory an agent keeps, and its sizes.

    `window` bounds how many steps, the current one included, a transformer layer attends to;
    `num_heads` splits its width. `d_state`, `d_conv` and `expand` are Mamba's N, the width of
    its causal convolution and the factor from hidden_size to its inner width.
    """

    kind: str
    hidden_size: int
    num_layers: int = 1
    gradient_checkpoint: bool = False
    window: int = 32
    num_heads: int = 4
    d_state: int = 16
    d_conv: int = 4
    expand: int = 2

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            close = difflib.get_close_matches(str(self.kind).lower(), KINDS, n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise ValueError(f"Unknown memory kind {self.kind!r}.{hint} Choose one of {', '.join(KINDS)}.")
        require_counts(
            hidden_size=self.hidden_size,
            num_layers=self.num_layers,
            window=self.window,
            num_heads=self.num_heads,
            d_state=self.d_state,
            d_conv=self.d_conv,
            expand=self.expand,
        )
        if not isinstance(self.gradient_checkpoint, bool):
            raise ValueError(f"gradient_checkpoint must be True or False, got {self.gradient_checkpoint!r}.")
        if self.kind == "transformer" and self.hidden_size % self.num_heads:
            divisors = [n for n in range(1, self.hidden_size + 1) if self.hidden_size % n == 0]
            raise ValueError(
                f"A transformer memory splits hidden_size across its heads, but hidden_size {self.hidden_size} "
                f"is not a multiple of num_heads {self.num_heads}; choose num_heads among {divisors}."
            )

    @classmethod
    def of(cls, value: MemoryConfig | Mapping[str, Any] | None) -> MemoryConfig | None:
        """The config from what a caller may hold: None (no memory), a config, or its fields as a dict (YAML, CLI)."""
        if value is None or isinstance(value, cls):
            return value
        if not isinstance(value, Mapping):
            raise TypeError(
                f"A memory is None, a MemoryConfig or a dict of its fields, got {type(value).__name__} {value!r}."
            )
        names = [field.name for field in dataclasses.fields(cls)]
        for key in value:
            if key not in names:
                close = difflib.get_close_matches(str(key), names, n=1)
                hint = f" Did you mean {close[0]!r}?" if close else ""
                raise TypeError(f"MemoryConfig has no field {key!r}.{hint} Its fields: {', '.join(names)}.")
        missing = [name for name in ("kind", "hidden_size") if name not in value]
        if missing:
            raise TypeError(f"A memory dict needs {' and '.join(missing)}; got {dict(value)!r}.")
        return cls(**value)


class AttentionCache(NamedTuple):
    """A transformer layer's carry: the keys and values of its last window - 1 steps.

    `valid` (B, window - 1) is 1.0 where the cached step belongs to the current episode; the
    keys and values of the others are kept at zero, so that equal histories give equal carries.
    """

    keys: jax.Array  # (B, window - 1, num_heads, head_dim)
    values: jax.Array  # (B, window - 1, num_heads, head_dim)
    valid: jax.Array  # (B, window - 1)


class MambaState(NamedTuple):
    """A Mamba layer's carry: its SSM state h and the convolution's last d_conv - 1 inputs (zero before the episode)."""

    ssm: jax.Array  # (B, d_inner, d_state)
    conv: jax.Array  # (B, d_conv - 1, d_inner)


LayerCarry = jax.Array | tuple[jax.Array, jax.Array] | AttentionCache | MambaState
Carry = tuple[LayerCarry, ...]


def inner_size(config: MemoryConfig) -> int:
    """Mamba's d_inner: the width its convolution and state space run at."""
    return config.expand * config.hidden_size


def _layer_carry(config: MemoryConfig, batch_size: int) -> LayerCarry:
    """One layer's zero carry."""
    zeros = lambda *shape: jnp.zeros((batch_size, *shape), jnp.float32)  # noqa: E731
    hidden = config.hidden_size
    if config.kind == "gru":
        return zeros(hidden)
    if config.kind == "lstm":
        return zeros(hidden), zeros(hidden)  # (c, h), as flax's LSTM cells take it
    if config.kind == "transformer":
        head_dim = hidden // config.num_heads
        kv = (config.window - 1, config.num_heads, head_dim)
        return AttentionCache(zeros(*kv), zeros(*kv), zeros(config.window - 1))
    d_inner = inner_size(config)
    return MambaState(zeros(d_inner, config.d_state), zeros(config.d_conv - 1, d_inner))


def initial_carry(config: MemoryConfig, batch_size: int) -> Carry:
    """The carry of `batch_size` environments at the start of an episode: one zero carry per layer."""
    require_counts(batch_size=batch_size)
    return tuple(_layer_carry(config, batch_size) for _ in range(config.num_layers))


def carry_size(config: MemoryConfig) -> int:
    """How many floats one environment's carry holds, every layer's together."""
    shapes = jax.eval_shape(lambda: initial_carry(config, 1))
    return sum(math.prod(leaf.shape) for leaf in jax.tree.leaves(shapes))


def episode_index(resets: jax.Array) -> jax.Array:
    """(T, B): how many resets came at or before each step, so two steps share an episode iff equal.

    What the carry holds is episode 0 of this call; a step before any reset is in it too.
    """
    return jnp.cumsum(resets, axis=0, dtype=jnp.int32)


class _ResettingCell(nn.Module):
    """A GRU (Cho et al. 2014) or LSTM (Hochreiter & Schmidhuber 1997) step that zeroes its carry at a reset."""

    config: MemoryConfig

    @nn.compact
    def __call__(self, carry: LayerCarry, step: tuple[jax.Array, jax.Array]) -> tuple[LayerCarry, jax.Array]:
        x, reset = step
        carry = jax.tree.map(lambda c: jnp.where(reset[:, None], 0.0, c), carry)
        cell = nn.GRUCell if self.config.kind == "gru" else nn.OptimizedLSTMCell
        # Ajax's orthogonal initialiser: flax's runs QR through LAPACK (see ajax.networks.initializers).
        return cell(self.config.hidden_size, recurrent_kernel_init=orthogonal(), name="cell")(carry, x)


class _RecurrentLayer(nn.Module):
    """One GRU or LSTM layer, scanned over time with its parameters shared by every step."""

    config: MemoryConfig

    @nn.compact
    def __call__(self, carry: LayerCarry, x: jax.Array, resets: jax.Array) -> tuple[LayerCarry, jax.Array]:
        scan = nn.scan(_ResettingCell, variable_broadcast="params", split_rngs={"params": False})
        return scan(self.config, name="scan")(carry, (x, resets))


class _TransformerLayer(nn.Module):
    """A pre-norm transformer block (Xiong et al. 2020) of causal sliding-window self-attention.

    Each step attends to itself and at most window - 1 earlier steps of its own episode: the
    ones in the cache, then the ones earlier in this call. Positions enter only through a
    learned bias per head and distance (T5's, Raffel et al. 2020, without buckets; started
    from ALiBi's recency slopes, `_recency_bias_init`), so a step computes the same whether
    it is the first of a call or the tenth; that is what makes a sequence and its steps agree.
    Like Transformer-XL's memory (Dai et al. 2019), the cache spans calls, but it holds each
    past step's keys and values rather than its input.
    """

    config: MemoryConfig

    @nn.compact
    def __call__(self, cache: AttentionCache, x: jax.Array, resets: jax.Array) -> tuple[AttentionCache, jax.Array]:
        hidden, heads, window = self.config.hidden_size, self.config.num_heads, self.config.window
        head_dim = hidden // heads
        normed = nn.LayerNorm(name="attention_norm")(x)
        project = lambda name: nn.DenseGeneral((heads, head_dim), name=name)(normed)  # noqa: E731
        query, key, value = project("query"), project("key"), project("value")  # (T, B, heads, head_dim)
        keys = jnp.concatenate([cache.keys.swapaxes(0, 1), key])  # (S, B, heads, head_dim), S = window - 1 + T
        values = jnp.concatenate([cache.values.swapaxes(0, 1), value])
        episode = episode_index(resets)
        key_episode = jnp.concatenate([jnp.where(cache.valid.T > 0, 0, -1), episode])  # -1: in no episode
        steps = x.shape[0]

        # Step t sees the positions t .. t + window - 1 of [cache; call] (distance window - 1 .. 0):
        # `window` static slices, so the cost grows as T * window rather than T^2, and the backward
        # pass adds slices back instead of scattering into a gather's indices.
        def band(sequence: jax.Array) -> jax.Array:
            if steps == 1:  # acting: the band is all of [cache; step]; window slices would cost window^2 backwards
                return sequence[None]
            return jnp.stack([sequence[w : w + steps] for w in range(window)], axis=1)  # (T, window, ...)

        visible = band(key_episode) == episode[:, None]  # (T, window, B): same episode; every step sees itself
        bias = self.param("relative_position_bias", _recency_bias_init, (heads, window))  # by distance
        logits = jnp.einsum("tbhd,twbhd->bhtw", query, band(keys)) / math.sqrt(head_dim) + bias[:, None, ::-1]
        logits = jnp.where(visible.transpose(2, 0, 1)[:, None], logits, jnp.finfo(logits.dtype).min)
        attended = jnp.einsum("bhtw,twbhd->tbhd", jax.nn.softmax(logits, axis=-1), band(values))
        x = x + nn.DenseGeneral(hidden, axis=(-2, -1), name="attention_out")(attended)
        mlp = nn.Dense(4 * hidden, name="mlp_in")(nn.LayerNorm(name="mlp_norm")(x))
        x = x + nn.Dense(hidden, name="mlp_out")(nn.gelu(mlp))
        kept = key_episode[steps:] == episode[-1]  # (window - 1, B): the last steps, of the last step's episode
        keep = lambda kv: jnp.where(kept[..., None, None], kv[steps:], 0.0).swapaxes(0, 1)  # noqa: E731
        return AttentionCache(keep(keys), keep(values), kept.T.astype(jnp.float32)), x


def _recency_bias_init(key: jax.Array, shape: tuple[int, ...], dtype: jnp.dtype = jnp.float32) -> jax.Array:
    """-m_h * distance with slopes m_h = 1, 1/2, 1/4, ...: ALiBi's geometric recency biases (Press et al. 2022),
    from a steeper first slope, as the start of the learned bias.

    A zero bias starts every head averaging its whole window, and Adam moves a bias by about
    the learning rate per step: thousands of updates before a head singles out the last
    steps, which is what a task like CartPole without its velocities needs first. With these
    slopes the steepest head starts on the last two or three steps and the flattest on the
    whole window.
    """
    del key  # deterministic
    heads, window = shape
    slopes = 2.0 ** -jnp.arange(heads, dtype=dtype)
    return -slopes[:, None] * jnp.arange(window, dtype=dtype)[None, :]


def ssm_combine(
    earlier: tuple[jax.Array, jax.Array], later: tuple[jax.Array, jax.Array]
) -> tuple[jax.Array, jax.Array]:
    """Two steps of h <- a h + b as one: (a1, b1) then (a2, b2) is (a1 a2, a2 b1 + b2).

    The operator is associative, so `jax.lax.associative_scan` evaluates a linear recurrence
    over T steps in O(log T) depth (Blelloch 1990; Martin & Cundy 2018; Smith et al. 2023).
    """
    a1, b1 = earlier
    a2, b2 = later
    return a1 * a2, a2 * b1 + b2


def _episode_conv(
    kernel: jax.Array, bias: jax.Array, history: jax.Array, u: jax.Array, episode: jax.Array
) -> tuple[jax.Array, jax.Array]:
    """A causal depthwise convolution over time where inputs of an earlier episode count as zero.

    `history` (B, width - 1, d) holds the inputs before this call, of episode 0 or zero; tap k
    of `kernel` (width, d) reads the input k steps back. Returns the outputs (T, B, d) and the
    next history, the last width - 1 inputs with those of an earlier episode zeroed.
    """
    width, steps = kernel.shape[0], u.shape[0]
    extended = jnp.concatenate([history.swapaxes(0, 1), u])  # (width - 1 + T, B, d)
    extended_episode = jnp.concatenate([jnp.zeros((width - 1, u.shape[1]), jnp.int32), episode])
    out = bias
    for k in range(width):
        start = width - 1 - k
        same = extended_episode[start : start + steps] == episode
        out = out + kernel[k] * jnp.where(same[..., None], extended[start : start + steps], 0.0)
    kept = extended_episode[steps:] == episode[-1]
    return out, jnp.where(kept[..., None], extended[steps:], 0.0).swapaxes(0, 1)


def _dt_bias_init(key: jax.Array, shape: tuple[int, ...], dtype: jnp.dtype = jnp.float32) -> jax.Array:
    """Biases whose softplus, the initial step size Delta, is log-uniform in [DT_MIN, DT_MAX] (Mamba's start)."""
    dt = jnp.exp(jax.random.uniform(key, shape, dtype, math.log(DT_MIN), math.log(DT_MAX)))
    return dt + jnp.log(-jnp.expm1(-dt))  # softplus^-1(dt)


def _s4d_real_init(key: jax.Array, shape: tuple[int, ...], dtype: jnp.dtype = jnp.float32) -> jax.Array:
    """log of A's negated diagonal 1, 2, ..., N for every channel: S4D-Real (Gu et al. 2022), Mamba's default."""
    del key  # deterministic
    return jnp.log(jnp.broadcast_to(jnp.arange(1, shape[-1] + 1, dtype=dtype), shape))


class _MambaLayer(nn.Module):
    """A pre-norm residual block around Mamba's selective state-space mixer (Gu & Dao 2023, arXiv:2312.00752).

    Delta, B and C are computed from each step's input (the selection of Sec. 3.2), the
    recurrence is discretised as the paper's code does it (A_bar = exp(Delta A), B_bar =
    Delta B) and evaluated in parallel over time with `ssm_combine`. A reset sets a step's
    decay A_bar to zero, so the state it receives from before the reset is multiplied away,
    in value and in gradient. Unlike the paper's fused kernel, the states (T, B, d_inner,
    d_state) are materialised: fine for an RL agent's widths. LayerNorm stands where the
    paper's code uses RMSNorm.
    """

    config: MemoryConfig

    @nn.compact
    def __call__(self, state: MambaState, x: jax.Array, resets: jax.Array) -> tuple[MambaState, jax.Array]:
        hidden, d_state, d_inner = self.config.hidden_size, self.config.d_state, inner_size(self.config)
        dt_rank = math.ceil(hidden / 16)  # the paper's low-rank projection of Delta
        u, z = jnp.split(nn.Dense(2 * d_inner, use_bias=False, name="in_proj")(nn.LayerNorm(name="norm")(x)), 2, -1)
        episode = episode_index(resets)
        kernel = self.param("conv_kernel", nn.initializers.lecun_normal(), (self.config.d_conv, d_inner))
        conv_bias = self.param("conv_bias", nn.initializers.zeros, (d_inner,))
        u, conv_state = _episode_conv(kernel, conv_bias, state.conv, u, episode)
        u = nn.silu(u)
        dt, b, c = jnp.split(
            nn.Dense(dt_rank + 2 * d_state, use_bias=False, name="x_proj")(u), [dt_rank, dt_rank + d_state], -1
        )
        dt = nn.softplus(nn.Dense(d_inner, bias_init=_dt_bias_init, name="dt_proj")(dt))  # (T, B, d_inner)
        a = -jnp.exp(self.param("A_log", _s4d_real_init, (d_inner, d_state)))
        decay = jnp.where(resets[..., None, None], 0.0, jnp.exp(dt[..., None] * a))  # A_bar, eq. (4); 0 at a reset
        drive = (dt * u)[..., None] * b[:, :, None, :]  # B_bar x = Delta B x
        cumulative_decay, h = jax.lax.associative_scan(ssm_combine, (decay, drive))
        h = h + cumulative_decay * state.ssm[None]  # the carried state, decayed to each step (zero past a reset)
        y = jnp.einsum("tbdn,tbn->tbd", h, c) + self.param("D", nn.initializers.ones, (d_inner,)) * u
        y = y * nn.silu(z)
        return MambaState(h[-1], conv_state), x + nn.Dense(hidden, use_bias=False, name="out_proj")(y)


LAYERS: dict[str, type[nn.Module]] = {
    "gru": _RecurrentLayer,
    "lstm": _RecurrentLayer,
    "transformer": _TransformerLayer,
    "mamba": _MambaLayer,
}


def _check_shapes(config: MemoryConfig, carry: Carry, inputs: jax.Array, resets: jax.Array) -> None:
    """Refuse, at trace time, inputs without a time axis or a carry built for another config or batch."""
    if inputs.ndim != 3 or resets.shape != inputs.shape[:2]:
        raise ValueError(
            f"Memory takes inputs (T, B, D) and resets (T, B), got {inputs.shape} and {resets.shape}; "
            "to act one step, pass x[None] and reset[None]."
        )
    batch = {leaf.shape[0] for leaf in jax.tree.leaves(carry)}
    if len(carry) != config.num_layers or batch != {inputs.shape[1]}:
        raise ValueError(
            f"The carry holds {len(carry)} layers for batch sizes {sorted(batch)}, but the config has "
            f"num_layers {config.num_layers} and the inputs batch {inputs.shape[1]}; "
            "start from initial_carry(config, batch_size)."
        )


class Memory(nn.Module):
    """A stack of `config.num_layers` memory layers over a sequence, after a projection to hidden_size.

    `__call__(carry, inputs, resets)` takes the carry from `initial_carry` (or the last call),
    inputs (T, B, D) and resets (T, B), True where a step is the first of an episode, and
    returns (new_carry, outputs (T, B, hidden_size)). The transformer and Mamba stacks end in
    a LayerNorm, since their residual streams are unbounded where an RNN's h lies in (-1, 1).
    """

    config: MemoryConfig

    @nn.compact
    def __call__(self, carry: Carry, inputs: jax.Array, resets: jax.Array) -> tuple[Carry, jax.Array]:
        config = self.config
        x, resets = jnp.asarray(inputs, jnp.float32), jnp.asarray(resets, bool)
        _check_shapes(config, carry, x, resets)
        if x.shape[-1] != config.hidden_size:
            x = nn.Dense(config.hidden_size, name="input_projection")(x)
        layer = nn.remat(LAYERS[config.kind]) if config.gradient_checkpoint else LAYERS[config.kind]
        new_carry = []
        for i, layer_carry in enumerate(carry):
            layer_carry, x = layer(config, name=f"layer_{i}")(layer_carry, x, resets)
            new_carry.append(layer_carry)
        if config.kind in ("transformer", "mamba"):
            x = nn.LayerNorm(name="final_norm")(x)
        return tuple(new_carry), x
