"""Seaquest's packed state layout, and its one numpy/Python decoder and encoder (the twin's converters and the
input checks share them; the JAX step reads the same layout with its own traced code in `rules.py`).

* The enemy ring: `NUM_ENEMY_SLOTS` slots, one uint32 per flag (bit i = slot i) and one uint32 per bit of each
  small integer field (its "planes": plane b holds bit b of every slot's value).
* Friendly bullets and divers: two records each in one int32, record k in bits `k * record_width(layout)` on,
  each field at its (bit offset in the record, width); record 0 is the older.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

NUM_ENEMY_SLOTS = 30

# Bit planes of the enemy ring's integer fields (the stored value is the field plus an offset).
X_PLANES = 4  # x + 1: 0 (x = -1, just left the board) .. 11 (x = 10)
Y_PLANES = 3  # y - 1: rows 1..8
MOVE_PLANES = 3  # move timer 0..5
SHOT_PLANES = 4  # shot timer 0..10
BULLET_X_PLANES = 4  # enemy bullet x + 2: -2 .. 11

# Packed 2-record lists: field name -> (bit offset in the record, width). The first two fields are flags.
BULLET_RECORD = {"alive": (0, 1), "dir": (1, 1), "x": (2, 4), "y": (6, 4)}
DIVER_RECORD = {"alive": (0, 1), "lr": (1, 1), "x": (2, 4), "y": (6, 4), "move": (10, 3)}

_SLOTS = np.arange(NUM_ENEMY_SLOTS)


def record_width(layout: dict) -> int:
    """The bits one record of `layout` takes in its packed word."""
    return max(offset + bits for offset, bits in layout.values())


# --- decoding: numpy, any batch shape -------------------------------------------------------------------------


def slot_flags(mask) -> np.ndarray:
    """The per-slot flags (..., 30) of uint32 slot masks (...)."""
    return (np.asarray(mask, np.int64)[..., None] >> _SLOTS) & 1 == 1


def slot_values(planes: Sequence) -> np.ndarray:
    """The per-slot values (..., 30) of one ring field from its bit planes (each of shape (...))."""
    bits = np.stack([slot_flags(plane) for plane in planes], axis=-1).astype(np.int64)  # (..., 30, planes)
    return np.sum(bits << np.arange(len(planes)), axis=-1)


def record_fields(word, layout: dict) -> dict[str, np.ndarray]:
    """Every field of the two records packed in int32 words (...), as ints (..., 2), record 0 the older."""
    records = np.asarray(word, np.int64)[..., None] >> (np.arange(2) * record_width(layout))
    return {name: (records >> offset) & ((1 << bits) - 1) for name, (offset, bits) in layout.items()}


# --- encoding: plain Python, one state (the twin's `to_pure`) -------------------------------------------------


def slot_mask(flags: Sequence[bool]) -> np.uint32:
    """The uint32 slot mask of 30 per-slot flags: the inverse of `slot_flags`."""
    return np.uint32(sum(1 << i for i, flag in enumerate(flags) if flag))


def slot_planes(values: Sequence[int], n: int) -> tuple[np.uint32, ...]:
    """The n bit planes of 30 small unsigned per-slot values: the inverse of `slot_values`."""
    return tuple(np.uint32(sum(((v >> b) & 1) << i for i, v in enumerate(values))) for b in range(n))


def pack_records(records: Sequence[Sequence], layout: dict) -> np.int32:
    """The int32 word of two records, each its field values in `layout`'s order: the inverse of `record_fields`."""
    width, word = record_width(layout), 0
    for k, record in enumerate(records):
        for value, (offset, bits) in zip(record, layout.values(), strict=True):
            word |= (int(value) & ((1 << bits) - 1)) << (k * width + offset)
    return np.int32(word)
