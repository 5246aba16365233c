"""Shared graph arithmetic for the generators: tasks are numbered so every edge goes forward."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


def _csr(key: IntArray, other: IntArray, n: int) -> tuple[IntArray, IntArray]:
    order = np.argsort(key, kind="stable")
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(key, minlength=n), out=ptr[1:])
    return ptr, other[order]


def critical_mask(n: int, src: IntArray, dst: IntArray, runtime_s: FloatArray) -> BoolArray:
    """Tasks on a longest path of runtimes at speed 1.0, transfers free (edges must satisfy src < dst).

    A task is critical when its earliest start plus its bottom level equals the
    critical-path length, so every task of every tied longest path is marked.
    """
    if np.any(src >= dst):
        raise AssertionError("generator bug: edges must go from a lower to a higher task index")
    pred_ptr, pred_idx = _csr(dst, src, n)
    succ_ptr, succ_idx = _csr(src, dst, n)
    finish_s = np.zeros(n)
    for t in range(n):
        lo, hi = pred_ptr[t], pred_ptr[t + 1]
        finish_s[t] = runtime_s[t] + (finish_s[pred_idx[lo:hi]].max() if hi > lo else 0.0)
    bottom_s = np.zeros(n)  # runtime of t plus the longest path below it
    for t in range(n - 1, -1, -1):
        lo, hi = succ_ptr[t], succ_ptr[t + 1]
        bottom_s[t] = runtime_s[t] + (bottom_s[succ_idx[lo:hi]].max() if hi > lo else 0.0)
    length_s = finish_s.max()
    through_s = finish_s - runtime_s + bottom_s
    mask: BoolArray = np.isclose(through_s, length_s, rtol=1e-9, atol=1e-9)
    return mask
