"""What a request sees of the GPU side (engine.analytic.rates, engine.analytic.queueing): the wait while its batch
gathers, the wait of a timer-released batch for an instance, the size-biased batch service, the bulk-service
queue of one work-conserving instance and the M/G/1 wait tail. The analytic engine against the simulator for
the variable-length models is in test_sim_analytic.py."""

import math

import numpy as np
import pytest

from engine.analytic.queueing import bulk_service_queue, mg1_wait_quantile, mmc_wait_quantile, timeout_batch_wait
from engine.analytic.timerqueue import timer_batch_queue
from engine.analytic.rates import gather_wait_mean
from engine.analytic.service_laws import batch_size_pmf, request_weighted_service


def test_gather_wait_counts_the_first_request_waiting_the_whole_time():
    # a batch gathered over 10 ms: its first request waits 10 ms, the other b - 1 uniformly 0..10 ms
    rng = np.random.default_rng(0)
    b = 3
    waits = np.concatenate([np.full(100_000, 10.0), rng.uniform(0, 10, (b - 1) * 100_000)])
    assert gather_wait_mean(10.0, b) == pytest.approx(waits.mean(), rel=5e-3)
    assert gather_wait_mean(10.0, 1.0) == 0.0 and gather_wait_mean(10.0, 1e6) == pytest.approx(5.0, rel=1e-5)


def test_timeout_batch_wait_on_one_instance_with_fixed_service():
    # one instance, service d, timer tq, next batch opens after an Exp(lambda) gap: W = (d - tq - A)^+, whose
    # mean is x - (1 - exp(-lambda x)) / lambda with x = d - tq
    d, tq, lam = 0.05, 0.03, 200.0
    x = d - tq
    mean, q99 = timeout_batch_wait(d, 0.0, 1, tq, lam, 0.99)
    assert mean == pytest.approx(x - (1 - math.exp(-lam * x)) / lam, rel=1e-9)
    # P(W > w) = P(A < x - w) = 1 - exp(-lam (x - w)) = 0.01 at w = x + ln(0.99) / lam
    assert q99 == pytest.approx(x + math.log(0.99) / lam, rel=1e-6)
    assert timeout_batch_wait(0.02, 0.0, 1, 0.03, lam, 0.99) == (0.0, 0.0)  # done before the next timer fires


class _Linear:
    """A partition whose batch of b takes 10 + 2 b ms (the tables a Partition carries)."""
    max_batch = 16
    mean_s = 0.010 + 0.002 * np.arange(1, 17)
    tail_s = mean_s * 1.1

    def service(self, b):
        return 0.010 + 0.002 * min(b, 16)


def test_request_weighted_service_is_the_size_biased_mean():
    rng = np.random.default_rng(1)
    sizes = np.minimum(1 + rng.poisson(3.0, 400_000), 16)
    mc = np.sum(sizes * (0.010 + 0.002 * sizes)) / sizes.sum()
    assert request_weighted_service(_Linear(), 4.0) == pytest.approx(mc, rel=2e-3)
    assert request_weighted_service(_Linear(), 4.0) > _Linear().service(4.0)  # larger batches hold more requests
    assert batch_size_pmf(4.0, 16).sum() == pytest.approx(1.0)


def test_bulk_service_queue_with_batches_of_one_is_md1():
    # Batch_max 1 and (nearly) fixed service: M/D/1, Wq = rho d / (2 (1 - rho))
    q = bulk_service_queue(80.0, np.array([0.01]), np.array([1e-6]))
    assert q.wait_mean_s == pytest.approx(0.8 * 0.01 / (2 * 0.2), rel=1e-4)
    assert q.p_wait == pytest.approx(0.8, rel=1e-6) and q.batch_pmf.tolist() == [1.0]


def test_bulk_service_queue_against_a_direct_simulation():
    # one server taking up to 4 waiting requests, service 10, 16, 20, 22 ms by batch (log-sd 0.2), 150 req/s
    means, sigma, lam = np.array([0.010, 0.016, 0.020, 0.022]), 0.2, 150.0
    q = bulk_service_queue(lam, means, np.full(4, sigma))
    rng = np.random.default_rng(2)
    n = 200_000
    arrival = np.cumsum(rng.exponential(1 / lam, n))
    jitter = np.exp(sigma * rng.standard_normal(n) - sigma ** 2 / 2)
    start = np.empty(n)
    free, i, batches = 0.0, 0, []
    while i < n:
        t = max(free, arrival[i])
        j = min(int(np.searchsorted(arrival, t, side="right")), i + 4)
        start[i:j] = t
        free = t + means[j - i - 1] * jitter[len(batches)]
        batches.append(j - i)
        i = j
    wait = (start - arrival)[n // 10:]
    assert q.wait_mean_s == pytest.approx(wait.mean(), rel=0.05)
    sim_pmf = np.bincount(batches, minlength=5)[1:] / len(batches)
    np.testing.assert_allclose(q.batch_pmf, sim_pmf, atol=0.01)


def test_timer_batch_queue_with_a_fast_instance_is_the_timer_window():
    # service far shorter than the timer: every batch is the first request plus the Poisson arrivals in
    # Time_queue, cut at Batch_max, and its requests wait by position in it
    from scipy.stats import poisson

    lam, tq, cap = 100.0, 0.05, 8
    q = timer_batch_queue(lam, tq, np.full(cap, 1e-6), np.full(cap, 0.05))
    law = poisson.pmf(np.arange(cap), lam * tq)
    law[-1] += 1 - law.sum()
    np.testing.assert_allclose(q.batch_pmf, law, atol=1e-6)
    assert q.wait_mean_s == pytest.approx(q.gather_mean_s, rel=1e-4) and q.p_wait < 1e-6
    # without the cap, the uncut window: (tq + lambda tq^2 / 2) / (1 + lambda tq) = gather_wait_mean(tq, b)
    wide = timer_batch_queue(lam, tq, np.full(64, 1e-6), np.full(64, 0.05))
    assert wide.wait_mean_s == pytest.approx(gather_wait_mean(tq, 1 + lam * tq), rel=1e-6)


def test_timer_batch_queue_against_a_direct_simulation():
    # one instance, Batch_max 8, Time_queue 60 ms, service 14-56 ms by batch (log-sd 0.1), at 85 and 120 req/s:
    # the timer long against the service, batches often full and waiting for the instance
    means = np.array([0.0137, 0.0225, 0.029, 0.0336, 0.0403, 0.0462, 0.0512, 0.0557])
    sigma, tq, cap = 0.1, 0.06, 8
    rng = np.random.default_rng(3)
    for lam in (85.0, 120.0):
        q = timer_batch_queue(lam, tq, means, np.full(cap, sigma))
        n = 200_000
        arrival = np.cumsum(rng.exponential(1 / lam, n))
        start = np.full(n, np.nan)
        free, i, batches = 0.0, 0, []
        while i < n - cap:
            t = max(free, min(arrival[i] + tq, arrival[i + cap - 1]))
            j = min(int(np.searchsorted(arrival, t, side="right")), i + cap)
            start[i:j] = t
            free = t + means[j - i - 1] * math.exp(sigma * rng.standard_normal() - sigma ** 2 / 2)
            batches.append(j - i)
            i = j
        wait = (start - arrival)[n // 10:i]
        assert q.wait_mean_s == pytest.approx(wait.mean(), rel=0.03)
        sim_pmf = np.bincount(batches, minlength=cap + 1)[1:] / len(batches)
        np.testing.assert_allclose(q.batch_pmf, sim_pmf, atol=0.01)


def test_mg1_wait_quantile_exact_for_mm1_and_light_for_md1():
    u = (np.arange(20_000) + 0.5) / 20_000
    exponential = -np.log(1 - u)  # service Exp(1) by its quantiles
    assert mg1_wait_quantile(0.7, exponential, np.ones_like(u), 0.99) == pytest.approx(
        mmc_wait_quantile(0.7, 1.0, 1, 0.99), rel=0.01)
    # M/D/1 at rho 0.3 (service 10 ms) against Lindley's recursion; the exponential fitted to the mean wait
    # (the former tail) says about 1.5 times more
    rng = np.random.default_rng(4)
    gaps = rng.exponential(1 / 30.0, 400_000)
    w = np.empty(len(gaps))
    w[0] = 0.0
    for i in range(1, len(gaps)):
        w[i] = max(0.0, w[i - 1] + 0.01 - gaps[i])
    assert mg1_wait_quantile(30.0, np.array([0.01]), np.array([1.0]), 0.99) == pytest.approx(
        np.quantile(w, 0.99), rel=0.05)


@pytest.mark.parametrize("gap", [1e-3, 1e-6, 1e-9, 1e-12])
def test_mg1_wait_quantile_near_saturation_is_finite_and_grows(gap):
    """At rho = 1 - gap the decay rate is about 2 (1 - rho) / (lam E[S^2]): small but positive. exp(x) - 1
    rounded it away and the root bracket failed (resnet50 unbatched on a whole A100 could not be evaluated)."""
    service, weight = np.array([0.004, 0.006]), np.array([0.5, 0.5])
    lam = (1 - gap) / 0.005
    wait = mg1_wait_quantile(lam, service, weight, 0.99)
    assert math.isfinite(wait) and wait > 0
    # heavy traffic: the wait is about exponential with rate eta, so its p99 is about ln(100) / eta
    eta = 2 * gap / (lam * float(np.dot(weight, service ** 2)))
    assert wait == pytest.approx(math.log(100) / eta, rel=0.05)
    assert mg1_wait_quantile((1 - 10 * gap) / 0.005, service, weight, 0.99) < wait


def test_timer_chain_convolves_the_same_by_shifted_products_as_by_fft(monkeypatch):
    # Batch_max 16 (<= DIRECT_UP_TO) by shifted products, and the same chain by FFT: the same answer to rounding
    from engine.analytic import timerqueue

    means = np.linspace(0.002, 0.012, 16)
    direct = timer_batch_queue(1200.0, 0.003, means, np.full(16, 0.1))
    monkeypatch.setattr(timerqueue, "DIRECT_UP_TO", 0)
    by_fft = timer_batch_queue(1200.0, 0.003, means, np.full(16, 0.1))
    np.testing.assert_allclose(direct.batch_pmf, by_fft.batch_pmf, rtol=0, atol=1e-13)
    for field in ("wait_mean_s", "p_wait", "gather_mean_s"):
        assert getattr(direct, field) == pytest.approx(getattr(by_fft, field), rel=1e-12)
    assert direct.batch_pmf.min() >= 0  # sums of products of probabilities: no rounding below zero to clip
