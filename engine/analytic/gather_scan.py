"""The gather-and-queue wait model (engine.analytic.rates) at many arrival rates at once, over numpy.

sla_bounded_rate scans a GPU side at up to ~50 rates before refining; the scalar step (rates.compute_gpu_point)
costs ~0.5 ms a rate, nearly all of it per-call overhead on arrays of a few dozen batch sizes. Here the same formulas
run with the rates as one more array axis: the batch mix (batch_mix.batch_mix), the all-busy regime
(batch_mix.all_busy_regime), the timer's batch wait (queueing.timeout_batch_wait) or the G/G/c queue of batches,
and the request's service time (service_laws.request_weighted_service, request_service_quantile). Only the
pooled schedulers' GATHER_AND_QUEUE model is covered (what a multi-instance sweep spends its time on); the
answers equal the scalar step's to ~1e-10 relative (root finders stop at slightly different points).
Times in s, rates in requests/s (lam) or items/s (lam_items).
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np

from engine.analytic.special import gammainc_ufunc, ndtr_ufunc
from engine.analytic.queueing import SERVICE_Z, erlang_c_vec
from engine.analytic.service_laws import MIXTURE_GRID, log_factorials, lognormal_tables, batch_tables
from engine.profiles.tails import lognormal_sigmas_for_ratios

_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def service_at(part, b: np.ndarray) -> np.ndarray:
    """Partition.service over an array of batch sizes b (items): the mean batch time (s), linear between
    integer batches, clipped to 1..len(mean_s)."""
    mean = np.asarray(part.mean_s, dtype=float)
    top = len(mean)
    b = np.clip(b, 1.0, top)
    whole = np.floor(b).astype(int)
    frac = b - whole
    inner = np.minimum(whole, top - 1)  # whole == top takes mean_s[-1] exactly (frac is 0 there)
    out = mean[inner - 1] * (1 - frac) + mean[inner] * frac if top > 1 else np.full(b.shape, mean[0])
    return np.where(whole >= top, mean[-1], out)


def tail_at(part, b: np.ndarray) -> np.ndarray:
    """Partition.tail over an array of batch sizes: the p-quantile batch time (s) of the nearest integer batch."""
    tail = np.asarray(part.tail_s, dtype=float)
    return tail[np.round(np.clip(b, 1.0, len(tail))).astype(int) - 1]


def gg_c_wait_vec(lam: np.ndarray, mean_s: np.ndarray, c: float, ca2: np.ndarray, cs2: float,
                  p: float) -> tuple[np.ndarray, np.ndarray]:
    """queueing.gg_c_wait over arrays: (mean wait, p-quantile of the wait) of G/G/c by Allen-Cunneen,
    Wq = C(k, lam/mu) / (k mu - lam) x (ca^2 + cs^2) / 2 with k = floor(c) servers of rate mu = (c / k) / mean_s
    (Allen 1990, eq. 6.1.24), the tail exponential with an atom at 0: q = ln(C / (1 - p)) Wq / C."""
    k = max(1, int(math.floor(c)))
    lam, mean_s, ca2 = np.broadcast_arrays(np.asarray(lam, float), np.asarray(mean_s, float),
                                           np.asarray(ca2, float))
    mu = (c / k) / mean_s
    stable = lam < k * mu
    pw = erlang_c_vec(np.full(lam.shape, k), np.where(stable, lam / mu, 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        wq = np.where(stable, pw / (k * mu - lam) * (ca2 + cs2) / 2, math.inf)
        q = np.where((wq > 0) & (pw > 1 - p), np.log(np.maximum(pw, 1e-300) / (1 - p)) * wq / np.maximum(pw, 1e-300),
                     0.0)
    return wq, np.where(stable, q, math.inf)


def timeout_batch_wait_vec(service_mean: np.ndarray, sigma: np.ndarray, servers: int, time_queue: float,
                           lam: np.ndarray, p: float) -> tuple[np.ndarray, np.ndarray]:
    """queueing.timeout_batch_wait at each (service_mean, sigma, lam): W = (S - T)^+, T = servers x Time_queue +
    Gamma(servers, lam); E[W] = E_S[y P(k, lam y) - (k / lam) P(k + 1, lam y)], y = S - k Time_queue, and the
    p-quantile solves E_S[P(k, lam (y - w)^+)] = 1 - p (bisection to 1e-13 s; the scalar uses brentq)."""

    k = max(1, int(servers))
    u = SERVICE_Z
    s = service_mean[:, None] * np.exp(sigma[:, None] * u[None, :] - sigma[:, None] ** 2 / 2)
    y = np.maximum(s - k * time_queue, 0.0)
    lam_c = lam[:, None]
    mean = np.mean(y * gammainc_ufunc(k, lam_c * y) - (k / lam_c) * gammainc_ufunc(k + 1, lam_c * y), axis=1)
    lo, hi = np.zeros(len(lam)), y.max(axis=1)
    waits = np.mean(gammainc_ufunc(k, lam_c * y), axis=1) > 1 - p
    while np.any(waits & (hi - lo > 1e-13)):  # the root's bracket halves each pass (~40 passes from 10 ms)
        mid = 0.5 * (lo + hi)
        over = np.mean(gammainc_ufunc(k, lam_c * np.maximum(y - mid[:, None], 0.0)), axis=1) > 1 - p
        lo, hi = np.where(over, mid, lo), np.where(over, hi, mid)
    bad = (lam <= 0) | (service_mean <= 0)
    return np.where(bad, 0.0, mean), np.where(bad | ~waits, 0.0, 0.5 * (lo + hi))


def size_laws(part, b_mean: np.ndarray) -> np.ndarray:
    """service_laws.batch_size_pmf at each mean batch (rows), k = 1..Batch_max: one opening request plus
    Poisson(b - 1) others, the mass beyond Batch_max at Batch_max; a point mass at 1 when b <= 1."""
    cap = max(1, int(part.max_batch))
    if cap == 1:
        return np.ones((len(b_mean), 1))
    k = np.arange(cap)
    m = np.maximum(b_mean - 1.0, 1e-300)[:, None]
    pmf = np.exp(k * np.log(m) - m - log_factorials(cap))
    pmf[:, -1] += np.maximum(0.0, 1.0 - pmf.sum(axis=1))
    return np.where((b_mean > 1)[:, None], pmf, np.eye(1, cap, 0))


def request_service_vec(reps, bt: np.ndarray, share_t: np.ndarray, p: float) -> tuple[np.ndarray, np.ndarray]:
    """(mean, p-quantile) of the service time (s) of the batch a random request is in, at each rate (columns of
    bt, share_t: per distinct partition its mean batch and share of items): the size-biased mixture, weights
    k P(k) / sum_k k P(k) (service_laws.request_weighted_service, request_service_quantile)."""
    z = NormalDist().inv_cdf(p)
    weights, mus, sigmas, means = [], [], [], []
    for t, part in enumerate(reps):
        pmf = size_laws(part, bt[t])
        sizes = np.arange(1, pmf.shape[1] + 1)
        biased = sizes * pmf / (pmf @ sizes)[:, None]
        weights.append(share_t[t][:, None] * biased)
        means.append(biased @ batch_tables(part, pmf.shape[1])[0] if pmf.shape[1] > 1
                     else np.full(len(bt[t]), part.service(1)))
        mu, sigma = lognormal_tables(part, pmf.shape[1], z)
        mus.append(mu)
        sigmas.append(sigma)
    weight, mu, sigma = np.concatenate(weights, axis=1), np.concatenate(mus), np.concatenate(sigmas)
    weight = np.where(weight > 1e-12, weight, 0.0)  # the scalar drops components this light
    svc_mean = sum(share_t[t] * means[t] for t in range(len(reps)))
    return svc_mean, lognormal_mixture_quantile_vec(weight / weight.sum(axis=1)[:, None], mu, sigma, p)


def lognormal_mixture_quantile_vec(weight: np.ndarray, mu: np.ndarray, sigma: np.ndarray, p: float) -> np.ndarray:
    """service_laws.lognormal_mixture_quantile for each row of weights (components mu, sigma shared): the root
    of S(x) = sum_i w_i Phi(-(x - mu_i) / sigma_i) = 1 - p, x = log t, bracketed on MIXTURE_GRID points over
    [min mu - 4 max sigma, max mu + (|z| + 4) max sigma] (over each row's components), then Newton steps kept
    in the bracket, to 1e-10 in x."""

    target = 1.0 - p
    z = abs(NormalDist().inv_cdf(p))
    used = weight > 0
    top = np.where(used, sigma, -np.inf).max(axis=1)
    lo = np.where(used, mu, np.inf).min(axis=1) - 4 * top
    hi = np.where(used, mu, -np.inf).max(axis=1) + (z + 4) * top
    xs = lo[:, None] + (hi - lo)[:, None] * np.linspace(0.0, 1.0, MIXTURE_GRID)[None, :]
    surv = np.einsum("ri,rig->rg", weight, ndtr_ufunc(-(xs[:, None, :] - mu[None, :, None]) / sigma[None, :, None]))
    above = surv > target
    last = MIXTURE_GRID - 1 - np.argmax(above[:, ::-1], axis=1)  # last grid point above the target
    none, edge = ~above.any(axis=1), last == MIXTURE_GRID - 1
    i = np.minimum(last, MIXTURE_GRID - 2)
    rows = np.arange(len(lo))
    a, b = xs[rows, i], xs[rows, i + 1]
    sa, sb = surv[rows, i] - target, surv[rows, i + 1] - target
    with np.errstate(divide="ignore", invalid="ignore"):
        x = np.where(sa != sb, a + (b - a) * sa / (sa - sb), 0.5 * (a + b))
    inv = 1.0 / sigma
    done = none | edge
    for _ in range(40):
        u = (x[:, None] - mu[None, :]) * inv[None, :]
        f = np.einsum("ri,ri->r", weight, ndtr_ufunc(-u)) - target
        a, b = np.where(f > 0, x, a), np.where(f > 0, b, x)
        slope = -np.einsum("ri,ri->r", weight, np.exp(-0.5 * u * u) * inv[None, :]) * _INV_SQRT_2PI
        with np.errstate(divide="ignore", invalid="ignore"):
            step = np.where(slope < 0, f / slope, math.inf)
        conv = np.abs(step) <= 1e-10
        nxt = np.where(conv, x - step, np.where((a < x - step) & (x - step < b), x - step, 0.5 * (a + b)))
        x = np.where(done, x, nxt)
        done |= conv | (b - a <= 1e-10)
        if done.all():
            break
    return np.exp(np.where(none, lo, np.where(edge, hi, x)))


def service_sigma_vec(reps, bt: np.ndarray, share_t: np.ndarray, p: float) -> np.ndarray:
    """rates._service_sigma at each rate: the log-sd of a batch's time from the share-weighted tail-to-mean ratio
    of the partitions at their batches (lognormal_sigmas_for_ratios)."""
    z = NormalDist().inv_cdf(p)
    ratio = sum(share_t[t] * tail_at(part, bt[t]) / service_at(part, bt[t]) for t, part in enumerate(reps))
    return lognormal_sigmas_for_ratios(np.asarray(ratio, dtype=float), z)
