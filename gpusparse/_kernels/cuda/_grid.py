"""Launch shapes of the CUDA kernels: 1-D grids clamped to the device limit.

Every kernel of ``cuda_kernels/`` indexes in 64 bits and loops: a per-item
kernel with a grid-stride loop (``gs_grid_stride``), a per-tile kernel over
tiles ``blockIdx.x + j * gridDim.x``. So a grid of any size from 1 block up
covers all the work, and :func:`blocks` may clamp the block count to
``gridDim.x <= 2**31 - 1`` (the limit of every GPU CuPy runs on) without
losing items: past ``2**31 - 1`` blocks of 256 threads (``2**39`` items) the
threads loop instead of failing to launch.

:data:`MAX_GRID_X` is read at each call, so the tests shrink it to a few
blocks and run every launcher with its kernels looping.
"""

from __future__ import annotations

__all__ = ["DEVICE_MAX_GRID_X", "MAX_GRID_X", "MAX_GRID_Y", "blocks", "launches", "tiles"]

#: gridDim.x limit of compute capability 3.0 and later.
DEVICE_MAX_GRID_X = 2**31 - 1
#: The clamp :func:`blocks` applies (the tests shrink it; ``gs_segment_reduce`` checks the device limit).
MAX_GRID_X = DEVICE_MAX_GRID_X
#: gridDim.y (and z) limit.
MAX_GRID_Y = 65535


def tiles(n: int, per_tile: int) -> int:
    """The number of tiles of ``per_tile`` items that hold ``n`` items (unclamped, 0 for none)."""
    return (max(int(n), 0) + per_tile - 1) // per_tile


def blocks(n: int, per_block: int = 256, limit: "int | None" = None) -> int:
    """Blocks of a 1-D launch over ``n`` items, ``per_block`` items a block: ``ceil(n / per_block)``,
    at least 1 and at most ``limit`` (default :data:`MAX_GRID_X`); the kernel loops over the rest."""
    cap = MAX_GRID_X if limit is None else min(int(limit), MAX_GRID_X)
    return max(1, min(tiles(n, per_block), cap))


def launches(n: int, per_block: int = 256):
    """``(first_block, blocks)`` of the launches that cover ``n`` items, ``per_block`` a block, for the
    kernels that take a 64-bit base offset instead of looping (``gs_segment_reduce``'s ``tile_base``,
    ``gs_sddmm``'s ``p_base``): one launch below :data:`MAX_GRID_X` blocks, more past it."""
    total = max(1, tiles(n, per_block))
    step = MAX_GRID_X
    return [(first, min(step, total - first)) for first in range(0, total, step)]
