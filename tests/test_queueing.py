"""Queueing formulas against textbook values and limiting cases."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.analytic.queueing import (allen_cunneen_wait, erlang_c, erlang_c_vec, gg_c_wait, md1_wait_mean,
                                      mg1_wait_mean, mmc_wait_mean, mmc_wait_quantile)


def test_erlang_c_textbook_values():
    # c = 1: P(wait) = rho
    assert erlang_c(1, 0.7) == pytest.approx(0.7)
    # c = 2, a = 1 (rho 0.5): C = 1/3 (Kleinrock 3.5)
    assert erlang_c(2, 1.0) == pytest.approx(1 / 3)
    # c = 7, a = 5.6 (rho 0.8): reference value from the closed form with factorials
    a, c = 5.6, 7
    s = sum(a**k / math.factorial(k) for k in range(c))
    top = a**c / math.factorial(c) * c / (c - a)
    assert erlang_c(c, a) == pytest.approx(top / (s + top))
    assert erlang_c(3, 3.0) == 1.0 and erlang_c(3, 0.0) == 0.0


@given(st.integers(1, 40), st.floats(0.01, 0.999))
def test_erlang_c_vector_matches_scalar(c, rho):
    assert erlang_c_vec(np.array([c]), np.array([rho * c]))[0] == pytest.approx(erlang_c(c, rho * c))


def test_mm1_and_md1_closed_forms():
    lam, mu = 8.0, 10.0
    assert mmc_wait_mean(lam, mu, 1) == pytest.approx(lam / (mu * (mu - lam)))  # rho / (mu - lam)
    assert md1_wait_mean(lam, 1 / mu) == pytest.approx(mmc_wait_mean(lam, mu, 1) / 2)
    assert mg1_wait_mean(lam, 1 / mu, 1.0) == pytest.approx(mmc_wait_mean(lam, mu, 1))
    # M/M/1 wait quantile: P(W > t) = rho exp(-(mu - lam) t)
    q = mmc_wait_quantile(lam, mu, 1, 0.99)
    assert 0.8 * math.exp(-(mu - lam) * q) == pytest.approx(0.01)


def test_allen_cunneen_is_exact_for_mmc_and_halves_for_deterministic():
    assert allen_cunneen_wait(50, 0.1, 7, 1, 1) == pytest.approx(mmc_wait_mean(50, 10, 7))
    assert allen_cunneen_wait(50, 0.1, 7, 1, 0) == pytest.approx(mmc_wait_mean(50, 10, 7) / 2)
    assert math.isinf(allen_cunneen_wait(70, 0.1, 7, 1, 1))


@given(st.integers(1, 16), st.floats(0.05, 0.95), st.floats(0.9, 0.999))
def test_wait_grows_with_load_and_quantile_with_p(c, rho, p):
    mean_s = 0.01
    lam = rho * c / mean_s
    w1, q1, _ = gg_c_wait(lam, mean_s, c, 1, 1, p)
    w2, q2, _ = gg_c_wait(lam * 1.02, mean_s, c, 1, 1, p) if rho * 1.02 < 1 else (math.inf, math.inf, 1)
    assert w2 >= w1 and q2 >= q1 and q1 >= 0
