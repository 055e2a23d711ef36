"""engine.search.pareto: the non-dominated filter, checked against the definition of dominance."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.search.pareto import MAX, MIN, front_order, non_dominated


def dominates(a, b, directions) -> bool:
    """a dominates b: no worse in every objective, strictly better in one (the textbook definition)."""
    better_or_equal = all((x <= y) if d == MIN else (x >= y) for x, y, d in zip(a, b, directions))
    strictly = any((x < y) if d == MIN else (x > y) for x, y, d in zip(a, b, directions))
    return better_or_equal and strictly


@st.composite
def point_sets(draw):
    k = draw(st.integers(1, 3))
    n = draw(st.integers(0, 40))
    # a small value range forces ties and duplicates, the cases a sort-based filter gets wrong
    value = st.one_of(st.integers(-4, 4).map(float), st.sampled_from([np.inf, -np.inf]))
    pts = draw(st.lists(st.lists(value, min_size=k, max_size=k), min_size=n, max_size=n))
    directions = draw(st.lists(st.sampled_from([MIN, MAX]), min_size=k, max_size=k))
    return np.array(pts, dtype=float).reshape(n, k), directions


@settings(max_examples=150, deadline=None)
@given(point_sets())
def test_front_members_are_not_dominated(case):
    pts, directions = case
    mask = non_dominated(pts, directions)
    for i in np.flatnonzero(mask):
        assert not any(dominates(pts[j], pts[i], directions) for j in range(len(pts)))


@settings(max_examples=150, deadline=None)
@given(point_sets())
def test_every_other_point_is_dominated_by_a_member(case):
    pts, directions = case
    mask = non_dominated(pts, directions)
    members = np.flatnonzero(mask)
    for i in np.flatnonzero(~mask):
        assert any(dominates(pts[j], pts[i], directions) for j in members)
    if len(pts):
        assert mask.any()  # a finite non-empty set always has a non-dominated point


@settings(max_examples=100, deadline=None)
@given(point_sets(), st.randoms(use_true_random=False))
def test_the_front_does_not_depend_on_the_order_of_points(case, rnd):
    pts, directions = case
    perm = list(range(len(pts)))
    rnd.shuffle(perm)
    assert np.array_equal(non_dominated(pts, directions)[perm], non_dominated(pts[perm], directions))


@settings(max_examples=100, deadline=None)
@given(point_sets())
def test_front_order_lists_the_members_best_first(case):
    pts, directions = case
    mask = non_dominated(pts, directions)
    order = front_order(pts, mask, directions)
    assert sorted(order.tolist()) == np.flatnonzero(mask).tolist()
    first = pts[order, 0] * (1 if directions[0] == MIN else -1)
    assert np.all(first[1:] >= first[:-1])  # (np.diff of two infinities is NaN)


def test_a_two_objective_front_by_hand():
    # (cost, p99) both minimised: (1, 9) and (3, 2) trade off; (4, 5) loses to (3, 2); the duplicate stays
    pts = [[1, 9], [3, 2], [4, 5], [3, 2], [2, 9]]
    assert non_dominated(pts, [MIN, MIN]).tolist() == [True, True, False, True, False]
    # both maximised: (4, 5) and (2, 9) trade off, and (2, 9) beats (1, 9)
    assert non_dominated(pts, [MAX, MAX]).tolist() == [False, False, True, False, True]


@pytest.mark.parametrize("values, directions, words", [
    ([[1.0, np.nan]], [MIN, MIN], "NaN"),
    ([[1.0, 2.0]], [MIN], "2 objectives"),
    ([[1.0, 2.0]], [MIN, "up"], "'up' is not a direction"),
    ([1.0, 2.0], [MIN], "2-D"),
])
def test_bad_input_is_a_clear_value_error(values, directions, words):
    with pytest.raises(ValueError, match=words):
        non_dominated(values, directions)
