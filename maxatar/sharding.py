"""Several devices with JAX's own SPMD machinery: a 1-D `Mesh`, `NamedSharding`, and `jit`.

A batch of environments (or of seeds) is split along its leading axis over the devices of a mesh; everything
without that axis (environment params, network weights, a step's shared key) is replicated. The functions
stay the plain pure ones: placing their inputs with a sharding is all it takes, `jit` partitions the
computation and every device steps its own slice of the batch. Each environment's arithmetic is unchanged,
so a sharded batch gives the same results, bit for bit, as the same batch on one device.

    import jax, maxatar
    from maxatar import sharding

    env, params = maxatar.make("maxatar/Breakout-v0")
    mesh = sharding.make_mesh("all")                          # every local device, one axis named "envs"
    keys = sharding.shard_batch(jax.random.split(jax.random.key(0), 4096), mesh)
    params = sharding.replicate(params, mesh)
    obs, state = sharding.reset(env, keys, params)            # obs and state are split over the devices
    obs, state, reward, terminated, truncated, info = sharding.step(env, keys, state, actions, params)
    host = sharding.to_numpy((obs, reward))                   # gathered (and copied) only when asked

The batch must divide evenly by the number of devices: an uneven batch is refused with a `ValueError`
(no silent padding). Under `jax.distributed.initialize` a mesh over `jax.devices()` (`local=False`) spans
every process; `shard_batch` then builds the global array from the same host value on every process and
`to_numpy` gathers it on all of them (a collective: every process must call it).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from maxatar.checks import InputError, check_size
from maxatar.core import Environment, EnvParams
from maxatar.episode import AutoReset

AXIS = "envs"

DevicesArg = str | int | Sequence[jax.Device] | None


def select_devices(devices: DevicesArg = "all", *, local: bool = True) -> list[jax.Device]:
    """The devices a batch is split over.

    devices: "all" (every device), an int N (the first N), a sequence of `jax.Device`, or None (the first
    device only: today's single-device behaviour). `local=True` picks from this process's devices
    (`jax.local_devices()`), `local=False` from every process's (`jax.devices()`, for multi-host meshes).
    """
    pool = list(jax.local_devices() if local else jax.devices())
    where = "local " if local else ""
    if devices is None:
        return pool[:1]
    if isinstance(devices, str):
        if devices != "all":
            raise InputError(f"devices must be 'all', a positive integer or a list of devices, got {devices!r}")
        return pool
    if isinstance(devices, (int, np.integer)) and not isinstance(devices, bool):
        count = check_size("devices", devices, what=" (a number of devices)")
        if count > len(pool):
            hint = ""
            if pool[0].platform == "cpu":
                hint = (
                    "; on CPU, set XLA_FLAGS=--xla_force_host_platform_device_count=N before JAX starts to get N "
                    "(virtual) CPU devices"
                )
            raise InputError(f"asked for {count} devices but only {len(pool)} {where}device(s) exist: {pool}{hint}")
        return pool[:count]
    if isinstance(devices, Sequence) and devices and all(isinstance(d, jax.Device) for d in devices):
        chosen = list(devices)
        if len(set(chosen)) != len(chosen):
            raise InputError(f"devices lists a device twice: {chosen}")
        unknown = [d for d in chosen if d not in pool]
        if unknown:
            raise InputError(f"devices {unknown} are not among the {where}devices {pool}")
        return chosen
    raise InputError(f"devices must be 'all', a positive integer or a list of jax devices, got {devices!r}")


def make_mesh(devices: DevicesArg = "all", axis_name: str = AXIS, *, local: bool = True) -> Mesh:
    """A 1-D mesh named `axis_name` over `select_devices(devices, local=local)` (automatic sharding
    propagation, so plain `jit` partitions the computation)."""
    return Mesh(np.asarray(select_devices(devices, local=local), dtype=object), (axis_name,))


def batch_sharding(mesh: Mesh) -> NamedSharding:
    """Leading axis split over the mesh's (single) axis, the other axes whole."""
    return NamedSharding(mesh, P(mesh.axis_names[0]))


def replicated(mesh: Mesh) -> NamedSharding:
    """A full copy on every device of the mesh."""
    return NamedSharding(mesh, P())


def check_divisible(size: int, mesh: Mesh, what: str = "batch") -> None:
    """Raise an `InputError` unless `size` splits evenly over the mesh's devices."""
    count = mesh.devices.size
    if size % count:
        below, above = size - size % count, size + count - size % count
        raise InputError(
            f"{what} of {size} cannot be split evenly over {count} devices: use a multiple of {count} "
            f"(e.g. {below or above} or {above}), or fewer devices"
        )


def _place(x: Any, sharding: NamedSharding) -> jax.Array:
    if sharding.is_fully_addressable:
        return jax.device_put(x, sharding)
    # Several processes: every process holds the same global value and contributes its own slices.
    if isinstance(x, jax.Array) and jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):
        data = np.asarray(jax.random.key_data(x))
        impl = jax.random.key_impl(x)
        raw = jax.make_array_from_callback(data.shape, sharding, lambda index: data[index])
        return jax.random.wrap_key_data(raw, impl=impl)
    host = np.asarray(x)
    return jax.make_array_from_callback(host.shape, sharding, lambda index: host[index])


def shard_batch(tree: Any, mesh: Mesh) -> Any:
    """Place every leaf of `tree` with its leading (batch) axis split over the mesh. Every leaf needs that
    axis, of a length divisible by the number of devices (else `InputError`)."""
    sharding = batch_sharding(mesh)
    for leaf in jax.tree.leaves(tree):
        shape = np.shape(leaf)
        if not shape:
            raise InputError("shard_batch needs a leading batch axis on every leaf; got a scalar")
        check_divisible(shape[0], mesh)
    return jax.tree.map(lambda x: _place(x, sharding), tree)


def replicate(tree: Any, mesh: Mesh) -> Any:
    """Place every leaf of `tree` (params, network weights, a shared key) whole on every device."""
    sharding = replicated(mesh)
    return jax.tree.map(lambda x: _place(x, sharding), tree)


def _host_copy(x: Any) -> Any:
    if not isinstance(x, jax.Array):
        return np.array(x) if isinstance(x, np.ndarray) else x
    if not isinstance(x.dtype, np.dtype):
        return x  # PRNG keys (an extended dtype) stay JAX values
    if len(x.sharding.device_set) == 1:
        return np.array(x)  # one copy: writable, and never a view of a device buffer
    if not x.is_fully_addressable:
        from jax.experimental import multihost_utils

        return np.array(multihost_utils.process_allgather(x, tiled=True))
    shards = x.addressable_shards
    if x.is_fully_replicated:
        return np.array(shards[0].data)
    out = np.empty(x.shape, x.dtype)
    for shard in shards:
        if shard.replica_id == 0:
            out[shard.index] = np.asarray(shard.data)
    return out


def to_numpy(tree: Any) -> Any:
    """Writable numpy copies of every array leaf, sharded ones assembled from their devices' slices.

    Mutating the result never touches a device buffer. Arrays spread over several processes are gathered
    on every process (`process_allgather`, a collective).
    """
    leaves, treedef = jax.tree.flatten(tree)
    arrays = [leaf for leaf in leaves if isinstance(leaf, jax.Array)]
    if len(arrays) > 1 and next(iter(arrays[0].sharding.device_set)).platform != "cpu":
        for leaf in arrays:  # start every transfer before waiting for any (on CPU there is nothing to start)
            if leaf.is_fully_addressable and isinstance(leaf.dtype, np.dtype):
                leaf.copy_to_host_async()
    return jax.tree.unflatten(treedef, [_host_copy(leaf) for leaf in leaves])


@partial(jax.jit, static_argnums=0)
def reset(env: Environment, keys: jax.Array, params: EnvParams) -> tuple[jax.Array, Any]:
    """`env.reset` over a batch of keys (gymnax/PureJaxRL style): `(obs, state)`, each leading with the batch
    axis and split as `keys` is."""
    return jax.vmap(env.reset, in_axes=(0, None))(keys, params)


@partial(jax.jit, static_argnums=(0, 5))
def step(env: Environment, keys: jax.Array, state: Any, actions: jax.Array, params: EnvParams, autoreset: bool = True):
    """`env.step` over a batch (one key per environment); with `autoreset` (default) finished environments
    start a new episode in the same step (`maxatar.AutoReset`). Outputs are split as the inputs are."""
    stepper = AutoReset(env) if autoreset else env
    return jax.vmap(stepper.step, in_axes=(0, 0, 0, None))(keys, state, actions, params)


__all__ = [
    "AXIS",
    "batch_sharding",
    "check_divisible",
    "make_mesh",
    "replicate",
    "replicated",
    "reset",
    "select_devices",
    "shard_batch",
    "step",
    "to_numpy",
]
