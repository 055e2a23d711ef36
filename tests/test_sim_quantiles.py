"""The simulator's default percentiles (engine.sim.quantiles: DuckDB's quantile_cont in numpy) are DuckDB's own to
the last bit, on the same data, grouped and not; and a run's results are the same whichever of the two computes
them."""

import numpy as np
import pytest

from engine.sim.quantiles import OrderStatistics, group_quantiles, numpy_quantiles, quantile_cont, split_by
from engine.sim.stats import quantile_table
from engine.store.summary import summarize

QS = (0.0, 0.5, 0.95, 0.99, 0.999, 1.0)


def duckdb_quantiles(values, qs):
    frame = summarize({"v": values}, "v", None, qs)
    return [float(frame[column].iloc[0]) for column in frame.columns if column.startswith("q")]


@pytest.mark.parametrize("seed", range(6))
def test_quantile_cont_is_duckdbs(seed):
    rng = np.random.default_rng(seed)
    for n in (1, 2, 3, 17, 101, 4096, int(rng.integers(5_000, 120_000))):
        values = rng.lognormal(size=n) * 10.0 ** rng.uniform(-4, 1)
        if seed % 3 == 1:  # ties
            values = np.round(values, 2)
        qs = QS + tuple(round(float(q), 6) for q in rng.uniform(0.5, 1.0, 4))
        assert quantile_cont(values, qs) == duckdb_quantiles(values, qs), n


def test_quantile_cont_of_a_constant_and_of_nothing():
    assert quantile_cont(np.full(10, 0.25), QS) == [0.25] * len(QS)
    assert all(np.isnan(quantile_cont(np.zeros(0), (0.5,))))


@pytest.mark.parametrize("ordered", [False, True])
def test_grouped_tables_are_duckdbs(ordered):
    """By partition (groups in any order) and by time bin (groups already in order): the same rows as DuckDB's
    GROUPING SETS, with and without the overall row."""
    rng = np.random.default_rng(7)
    n = 60_000
    groups = rng.integers(0, 9, n)
    if ordered:
        groups = np.sort(groups)
    groups[groups == 4] = 5  # a group with no rows
    cols = {"latency": rng.exponential(size=n), "g": groups}
    for total in (True, False):
        ours = quantile_table(cols, "latency", "g", (0.5, 0.99), "quantile_cont", total=total)
        theirs = quantile_table(cols, "latency", "g", (0.5, 0.99), "duckdb", total=total)
        assert ours == theirs
        assert [row[0] for row in ours] == ([None] if total else []) + [0, 1, 2, 3, 5, 6, 7, 8]


def test_split_by_keeps_each_groups_order():
    rng = np.random.default_rng(2)
    groups = rng.integers(0, 300, 5000)  # wider than int8: sorted on int16 keys
    values = np.arange(5000.0)
    for group, chunk in split_by(groups, values):
        np.testing.assert_array_equal(chunk, values[groups == group])
    assert [group for group, _ in split_by(groups, values)] == sorted(set(groups.tolist()))


def test_in_place_quantiles_read_the_same_numbers_and_leave_the_columns_alone():
    """quantile_cont(overwrite=True) partitions its argument in place (a scratch copy: a group gathered by a mask
    or a sort) and gives the same numbers; quantile_table uses it only where a group's values are such a copy, so
    the columns it is given come back as they were, in every branch of split_by (groups in order, few, many)."""
    rng = np.random.default_rng(11)
    values = rng.exponential(size=20_001)
    scratch = values.copy()
    assert quantile_cont(scratch, QS, overwrite=True) == quantile_cont(values, QS)
    assert not np.array_equal(scratch, values)  # it did partition in place
    for groups in (np.sort(rng.integers(0, 9, 20_001)), rng.integers(0, 4, 20_001), rng.integers(0, 300, 20_001)):
        cols = {"latency": values.copy(), "g": groups.copy()}
        rows = quantile_table(cols, "latency", "g", (0.5, 0.99), "quantile_cont")
        np.testing.assert_array_equal(cols["latency"], values)
        np.testing.assert_array_equal(cols["g"], groups)
        present = sorted(set(groups.tolist()))
        assert [(row[0], row[1], row[3]) for row in rows[1:]] == [
            (group, int(np.sum(groups == group)), quantile_cont(values[groups == group], (0.5, 0.99)))
            for group in present]


@pytest.mark.parametrize("seed", range(6))
def test_numpy_quantiles_from_order_statistics_are_np_quantile(seed):
    """The confidence intervals' ends (np.quantile's numbers, engine.sim.stats.quantile_cis) read from order
    statistics selected a stretch at a time, asked for in several rounds as the intervals are: the same floats as
    np.quantile, with ties, at 0 and 1, next to the positions already in place, and nan where a value is nan."""
    rng = np.random.default_rng(seed)
    for n in (1, 2, 3, 9, 100, 4097, int(rng.integers(5_000, 60_000))):
        values = rng.lognormal(size=n) * 10.0 ** rng.uniform(-4, 1)
        if seed % 3 == 1:
            values = np.round(values, 2)
        order = OrderStatistics(values.copy())
        rounds = [list(QS), rng.uniform(0, 1, 5).tolist(), [0.5 - 1 / n, 0.5 + 1 / n, 0.99 + 0.5 / n, 1 - 1e-9]]
        for qs in rounds:
            qs = [min(1.0, max(0.0, q)) for q in qs]
            assert numpy_quantiles(order, qs) == np.quantile(values, qs).tolist(), (n, qs)
        assert sorted(order.values.tolist()) == sorted(values.tolist())  # a permutation, partitioned in place
    with_nan = np.array([1.0, np.nan, 3.0])
    assert all(np.isnan(numpy_quantiles(OrderStatistics(with_nan.copy()), (0.0, 0.5))))


@pytest.mark.parametrize("layout", ["few", "in order", "many", "one low", "ties and nan"])
def test_group_tail_quantiles_are_each_groups_own(layout):
    """group_quantiles reads high quantiles (p99 by partition, by time bin) from the values above a threshold: the
    same numbers as quantile_cont of each group's own values, in every layout of groups, where a group's tail lies
    below the threshold (read from all its values), with ties and a nan; and the values are left alone."""
    rng = np.random.default_rng(len(layout))
    n = 50_000
    groups = {"few": rng.integers(0, 4, n), "in order": np.sort(rng.integers(0, 100, n)),
              "many": rng.integers(0, 300, n), "one low": rng.integers(0, 4, n),
              "ties and nan": rng.integers(0, 5, n)}[layout]
    values = rng.lognormal(size=n)
    if layout == "one low":
        values[groups == 2] *= 0.01  # its p99 far below the pool's p90
    if layout == "ties and nan":
        values = np.round(values, 1)
        values[17] = np.nan
    before = values.copy()
    for qs in ((0.99,), (0.95, 0.999), (0.5, 0.99)):
        ours = list(group_quantiles(groups, values, qs))
        theirs = [(group, quantile_cont(values[groups == group], qs)) for group in sorted(set(groups.tolist()))]
        assert [group for group, _ in ours] == [group for group, _ in theirs]
        for (_, mine), (_, expected) in zip(ours, theirs):
            np.testing.assert_array_equal(mine, expected)
    np.testing.assert_array_equal(values, before)
