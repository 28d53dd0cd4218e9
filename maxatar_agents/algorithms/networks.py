"""Networks shared by the agents: an observation encoder chosen from the environment, then a small MLP head.

* MinAtar games (bool (10, 10, C)): MinAtar's torso, one 3x3 convolution with 16 filters and no padding,
  written as patch extraction plus a dense layer. It computes exactly what a VALID `nn.Conv` computes, and
  XLA's CPU convolution is slow on such tiny images while a dense layer is not, so training runs faster on
  CPU (benchmarks/agents_bench.py measures it).
* Pixels (`obs_type="rgb"`/`"grayscale"`, uint8 scaled to [0, 1]): a small Nature-style CNN sized for
  MinAtar frames: a convolution whose kernel and stride are one grid cell (`obs_scale` pixels, so each
  output sees exactly one drawn cell) with 32 filters, then MinAtar's torso on the 10 x 10 cell features.
  Both are written as reshapes or patches plus dense layers, for the CPU reason above.
* Integer-coded observations (Doors, codes 0..nvec-1): one-hot, then flatten.
* Float vectors (CartPole): used as they are.

Heads: `MLPHead` (DQN, SAC: one output per action), `ActorCritic` (PPO: policy logits and a value on one
encoder) and `MLPHead` with `layer_norm` (PQN, whose stability without a target network rests on it).

DQN's and SAC's weights start like PyTorch's `nn.Linear` / `nn.Conv2d` defaults (uniform, bound
1/sqrt(fan_in)), as in the reference MinAtar DQN, so the published step sizes see the scale they were tuned
for (biases start at 0). PPO's dense layers start scaled by a gain per layer (small for the policy's
output), as in the PPO implementations it follows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from maxatar.core import Environment

# PyTorch's default weight init (kaiming_uniform with a=sqrt(5)) is uniform with variance 1 / (3 fan_in).
torch_like_init = nn.initializers.variance_scaling(1.0 / 3.0, "fan_in", "uniform")


def Dense(features: int) -> nn.Dense:
    """A dense layer with PyTorch's default init, so the reference's step sizes see the scale they expect."""
    return nn.Dense(features, kernel_init=torch_like_init)


def patches3x3(x: jax.Array) -> jax.Array:
    """(..., H, W, C) -> (..., H-2, W-2, 9C): every 3x3 window (VALID), row-major over the window."""
    h, w = x.shape[-3], x.shape[-2]
    windows = [x[..., i : i + h - 2, j : j + w - 2, :] for i in range(3) for j in range(3)]
    return jnp.concatenate(windows, axis=-1)


class MinAtarTorso(nn.Module):
    """3x3 VALID convolution + ReLU, flattened: (10, 10, C) -> 8 * 8 * features."""

    features: int = 16

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        x = nn.relu(Dense(self.features)(patches3x3(x.astype(jnp.float32))))
        return x.reshape(*x.shape[:-3], -1)


class PixelTorso(nn.Module):
    """uint8 frames (..., H, W, 3) or (..., H, W) of `cell` x `cell` pixel blocks: a cell-sized, cell-strided
    convolution with `cell_features` filters and ReLU, then `MinAtarTorso` on the grid of cell features."""

    cell: int
    cell_features: int = 32
    features: int = 16

    @nn.compact
    def __call__(self, x: jax.Array, obs_ndim: int) -> jax.Array:
        x = x.astype(jnp.float32) / 255.0
        if obs_ndim == 2:  # grayscale: one channel
            x = x[..., None]
        *batch, height, width, channels = x.shape
        rows, cols, c = height // self.cell, width // self.cell, self.cell
        if rows * c != height or cols * c != width:
            raise ValueError(f"a {height}x{width} frame is no grid of {c}x{c} cells")
        x = x.reshape(*batch, rows, c, cols, c, channels)
        x = jnp.moveaxis(x, -4, -3).reshape(*batch, rows, cols, c * c * channels)  # one row per cell
        x = nn.relu(Dense(self.cell_features)(x))
        return MinAtarTorso(self.features)(x)


class Encoder(nn.Module):
    """Turns one environment's observation (with any leading batch axes) into a flat float vector."""

    kind: str  # "minatar", "pixels", "onehot" or "vector"
    obs_ndim: int
    num_codes: int = 0
    conv_features: int = 16
    cell: int = 1  # pixels per grid cell ("pixels")

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        batch_shape = obs.shape[: obs.ndim - self.obs_ndim]
        if self.kind == "minatar":
            return MinAtarTorso(self.conv_features)(obs)
        if self.kind == "pixels":
            return PixelTorso(self.cell, features=self.conv_features)(obs, self.obs_ndim)
        if self.kind == "onehot":
            return jax.nn.one_hot(obs, self.num_codes, dtype=jnp.float32).reshape(*batch_shape, -1)
        return obs.astype(jnp.float32).reshape(*batch_shape, -1)


def encoder_for(env: Environment, conv_features: int = 16) -> Encoder:
    """Pick the encoder from the environment's static observation description."""
    shape, dtype = tuple(env.obs_shape), jnp.dtype(env.obs_dtype)
    if env.obs_pixels:
        return Encoder("pixels", len(shape), conv_features=conv_features, cell=env.scale)
    if len(shape) == 3 and dtype == jnp.bool_:
        return Encoder("minatar", 3, conv_features=conv_features)
    if jnp.issubdtype(dtype, jnp.integer):
        return Encoder("onehot", len(shape), num_codes=int(env.obs_nvec))
    return Encoder("vector", len(shape))


class MLPHead(nn.Module):
    """Encoder, ReLU hidden layers (each normalised first with `layer_norm`), then a linear layer with one
    output per action (Q-values or logits)."""

    encoder: Encoder
    hidden: Sequence[int]
    num_outputs: int
    layer_norm: bool = False

    @nn.compact
    def __call__(self, obs: jax.Array) -> jax.Array:
        # The activations are kept only when `hidden_activations` asks for them (never in `init`'s variables).
        keep = self.is_mutable_collection("activations") and not self.is_initializing()
        x = self.encoder(obs)
        if keep:
            self.sow("activations", "encoded", x)
        for i, width in enumerate(self.hidden):
            x = Dense(width)(x)
            x = nn.relu(nn.LayerNorm()(x) if self.layer_norm else x)
            if keep:
                self.sow("activations", f"hidden{i}", x)
        return Dense(self.num_outputs)(x)


def hidden_activations(network: MLPHead, params: Any, obs: jax.Array) -> list[jax.Array]:
    """The activations of `network`'s hidden layers on `obs`, the encoder's output first and the last hidden
    layer's (the features the output layer reads) last, each (batch, units): what the plasticity diagnostics
    (`continual.diagnostics`) measure."""
    _, captured = network.apply(params, obs, mutable=["activations"])
    layers = captured["activations"]
    return [layers["encoded"][0]] + [layers[f"hidden{i}"][0] for i in range(len(network.hidden))]


def make_network(env: Environment, hidden: Sequence[int], conv_features: int = 16, layer_norm: bool = False) -> MLPHead:
    """One output per action of `env`, on top of the encoder its observations need."""
    return MLPHead(encoder_for(env, conv_features), tuple(hidden), env.num_actions, layer_norm)


def scaled_dense(features: int, gain: float) -> nn.Dense:
    """A dense layer whose outputs start with about `gain` times the scale of its inputs (normal weights of
    variance gain^2 / fan_in, zero biases): the role orthogonal initialisation plays in PureJaxRL's PPO,
    without its QR decomposition, a LAPACK call that intermittently deadlocked XLA's CPU runtime inside the
    vmapped training program (see docs/architecture.md)."""
    return nn.Dense(features, kernel_init=nn.initializers.variance_scaling(gain**2, "fan_in", "normal"))


class ActorCritic(nn.Module):
    """One encoder, then two MLPs of `hidden` layers: policy logits (num_actions) and a state value. The
    output layers start small for the policy (near-uniform at first) and at gain 1 for the value."""

    encoder: Encoder
    hidden: Sequence[int]
    num_actions: int
    activation: str = "tanh"

    @nn.compact
    def __call__(self, obs: jax.Array) -> tuple[jax.Array, jax.Array]:
        activation = {"tanh": nn.tanh, "relu": nn.relu}[self.activation]
        x = self.encoder(obs)
        logits, value = x, x
        for width in self.hidden:
            logits = activation(scaled_dense(width, 2**0.5)(logits))
            value = activation(scaled_dense(width, 2**0.5)(value))
        return scaled_dense(self.num_actions, 0.01)(logits), scaled_dense(1, 1.0)(value)[..., 0]


def make_actor_critic(
    env: Environment, hidden: Sequence[int], conv_features: int = 16, activation: str = "tanh"
) -> ActorCritic:
    """Policy logits and value for `env`, on top of the encoder its observations need."""
    return ActorCritic(encoder_for(env, conv_features), tuple(hidden), env.num_actions, activation)
