"""Non-dominated filter (Pareto front) with a direction per objective, vectorised with numpy.

Point a dominates b when a is at least as good as b in every objective and strictly better in one
(Deb, Multi-Objective Optimization using Evolutionary Algorithms, 2001, section 2.4). Equal points
do not dominate each other, so duplicates of a front member are all on the front. +-inf is an
ordinary (worst or best) value; NaN has no order and is refused.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

MIN, MAX = "min", "max"


def _minimised(values, directions: Sequence[str]) -> np.ndarray:
    x = np.asarray(values, dtype=float)
    if x.ndim != 2:
        raise ValueError(f"values: expected a 2-D array (points x objectives), got shape {x.shape}")
    if x.shape[1] == 0:
        raise ValueError("values: at least one objective is needed")
    if len(directions) != x.shape[1]:
        raise ValueError(f"directions: {len(directions)} given for {x.shape[1]} objectives")
    bad = [d for d in directions if d not in (MIN, MAX)]
    if bad:
        raise ValueError(f"directions: {bad[0]!r} is not a direction; valid: {MIN}, {MAX}")
    if np.isnan(x).any():
        raise ValueError("values: NaN has no order; drop or replace those points first")
    sign = np.array([1.0 if d == MIN else -1.0 for d in directions])
    return x * sign  # every objective minimised from here on


def non_dominated(values, directions: Sequence[str]) -> np.ndarray:
    """Boolean mask of the points no other point dominates.

    values: n points x k objectives; directions: 'min' or 'max' per objective. O(n log n) for two
    objectives (a sweep over the sorted distinct points), else one vectorised pass per front member.
    """
    x = _minimised(values, directions)
    if len(x) == 0:
        return np.zeros(0, dtype=bool)
    # distinct points in lexicographic order: a dominator always sorts before the points it dominates
    uniq, inverse = np.unique(x, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    if uniq.shape[1] == 2:
        keep = _front_2d(uniq)
    else:
        keep = _front_nd(uniq)
    return keep[inverse]


def _front_2d(u: np.ndarray) -> np.ndarray:
    """Sorted distinct points: each earlier point has a smaller-or-equal first objective and differs,
    so it dominates a later point exactly when its second objective is smaller or equal."""
    best_before = np.minimum.accumulate(np.concatenate(([np.inf], u[:-1, 1])))
    keep = u[:, 1] < best_before
    keep[0] = True  # the lexicographic minimum is never dominated (even when its value is +inf)
    return keep


def _front_nd(u: np.ndarray) -> np.ndarray:
    keep = np.ones(len(u), dtype=bool)
    for i in range(len(u)):
        if keep[i]:  # all its possible dominators came before it and are settled, so it is on the front
            worse = np.all(u[i] <= u, axis=1) & np.any(u[i] < u, axis=1)
            keep &= ~worse
    return keep


def front_order(values, mask: np.ndarray, directions: Sequence[str]) -> np.ndarray:
    """Indices of the front members, sorted along the front by the first objective (best first)."""
    x = _minimised(values, directions)
    idx = np.flatnonzero(mask)
    return idx[np.lexsort(x[idx].T[::-1])]
