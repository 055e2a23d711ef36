"""engine.order_stats against numpy's median and unique (which it replaces on the evaluate path), bit for bit,
and the reason it exists: neither imports numpy.ma."""

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.order_stats import distinct, median

samples = st.lists(st.floats(-1e300, 1e300, allow_nan=False, allow_infinity=False), min_size=1, max_size=40)


@given(samples)
def test_median_is_numpys_to_the_bit(values):
    ours, theirs = median(values), float(np.median(values))
    assert ours == theirs or (np.isnan(ours) and np.isnan(theirs))


@given(st.lists(st.floats(0.5, 3.0), min_size=1, max_size=12), st.integers(1, 4))
def test_median_flattens_a_table_as_numpy_does(values, rows):
    table = np.array(values * rows).reshape(rows, -1)
    assert median(table) == float(np.median(table))


def test_median_of_a_sample_with_nan_is_nan_and_of_no_sample_an_error():
    assert np.isnan(median([1.0, float("nan"), 2.0]))
    with pytest.raises(ValueError, match="empty"):
        median([])


@given(st.lists(st.integers(-50, 50), max_size=60))
def test_distinct_is_numpys_unique(values):
    ours, theirs = distinct(np.array(values, dtype=int)), np.unique(np.array(values, dtype=int))
    assert ours.dtype == theirs.dtype and np.array_equal(ours, theirs)


def test_neither_loads_numpy_ma():
    code = ("import sys; from engine.order_stats import distinct, median; median([3.0, 1.0, 2.0, 5.0]); "
            "distinct([3, 1, 3]); print('numpy.ma' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
