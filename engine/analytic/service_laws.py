"""What a request's batch costs: the service-time laws of a partition's batches (means, quantiles, mixtures).

The GPU side's wait models (engine.analytic.rates) read these: a query's service time run alone
(mean_job, job_law), the batch-size law around a mean batch (batch_size_pmf), the size-biased batch a random
request is in (request_weighted_service, request_service_quantile: the inspection paradox) and the quantile of a
log-normal mixture they reduce to. Every batch time is log-normal with the partition's mean and p-quantile at its
size (Partition.service and Partition.tail, read once per partition through batch_tables). Times in s.
"""

from __future__ import annotations

import functools
import math
from statistics import NormalDist

import numpy as np
from scipy.special import gammaln, ndtr, ndtri

from engine.profiles.tails import lognormal_sigmas_for_ratios


def mean_job(part, q_pmf: np.ndarray) -> tuple[float, float, float]:
    """(mean, second moment, p99) of the service time of one query of random size run alone."""
    sizes = np.arange(1, len(q_pmf) + 1)
    t = np.array([part.service(min(s, len(part.mean_s))) for s in sizes])
    m = float(np.dot(q_pmf, t))
    return m, float(np.dot(q_pmf, t * t)), float(np.max(t[q_pmf > 0]))


def batch_size_pmf(b_mean: float, cap: int) -> np.ndarray:
    """P(batch = k), k = 1..cap: one request that opens the batch plus a Poisson number of others with mean
    b_mean - 1 (Poisson arrivals over a fixed gathering time), the mass beyond cap at cap."""
    k = np.arange(cap)
    m = max(b_mean - 1.0, 1e-300)
    pmf = np.exp(k * math.log(m) - m - log_factorials(cap))  # Poisson(m) pmf
    pmf[-1] += max(0.0, 1.0 - float(pmf.sum()))
    return pmf


@functools.lru_cache(maxsize=64)
def log_factorials(cap: int) -> np.ndarray:
    """log k! for k = 0..cap-1 (read-only: shared by every call)."""

    out = gammaln(np.arange(cap) + 1.0)
    out.setflags(write=False)
    return out


@functools.lru_cache(maxsize=64)
def normal_quantile(p: float) -> float:
    """The standard normal p-quantile, NormalDist().inv_cdf(p), remembered: a few percentiles, asked at every rate."""
    return NormalDist().inv_cdf(p)


def request_service_quantile(mix: list, p: float, size_biased: bool = True) -> float:
    """p-quantile (s) of the service time of the batch a random request is in, over (partition, mean batch,
    share of requests) triples: the mixture over partitions (by share) and batch sizes k (size-biased,
    weights k P(k) from batch_size_pmf) of log-normal batch times with mean t(k) and p-quantile tail(k)
    (the partitions' tables), solved on the mixture's survival function (lognormal_mixture_quantile)."""
    z = normal_quantile(p)
    weights, mus, sigmas = [], [], []
    for part, b_mean, share in mix:
        pmf = size_law(part, b_mean)
        if size_biased:
            sizes = np.arange(1, len(pmf) + 1)
            weights.append(share * sizes * pmf / float(np.dot(sizes, pmf)))
        else:
            weights.append(share * pmf)
        mu, sigma = lognormal_tables(part, len(pmf), z)
        mus.append(mu)
        sigmas.append(sigma)
    weight, mu, sigma = (np.concatenate(x) for x in (weights, mus, sigmas))
    keep = weight > 1e-12
    return lognormal_mixture_quantile(weight[keep] / weight[keep].sum(), mu[keep], sigma[keep], p)


MIXTURE_GRID = 12  # log-spaced points on which lognormal_mixture_quantile brackets its root (Newton does the rest)


def lognormal_mixture_quantile(weight: np.ndarray, mu: np.ndarray, sigma: np.ndarray, p: float) -> float:
    """p-quantile of a mixture of log-normals (weights summing to 1, log-means mu, log-sds sigma > 0).

    The survival function S(x) = sum_i w_i Phi(-(x - mu_i) / sigma_i) of x = log t is decreasing, so the root
    of S(x) = 1 - p is bracketed on a grid of MIXTURE_GRID points over [min mu - 4 max sigma, max mu + (|z| + 4)
    max sigma] in one vectorised evaluation, then found by Newton steps kept inside the bracket (S'(x) =
    -sum_i w_i phi((x - mu_i) / sigma_i) / sigma_i), to 1e-10 in x (a relative 1e-10 in t)."""

    target = 1.0 - p
    z = abs(normal_quantile(p))
    top = float(sigma.max())
    lo, hi = float(mu.min()) - 4 * top, float(mu.max()) + (z + 4) * top
    xs = _grid(lo, hi)
    surv = weight @ ndtr(-(xs[None, :] - mu[:, None]) / sigma[:, None])
    above = np.nonzero(surv > target)[0]
    if len(above) == 0:
        return float(math.exp(lo))
    i = int(above[-1])
    if i == MIXTURE_GRID - 1:
        return float(math.exp(hi))
    a, b = float(xs[i]), float(xs[i + 1])
    sa, sb = float(surv[i]) - target, float(surv[i + 1]) - target
    x = a + (b - a) * sa / (sa - sb)  # linear guess inside the bracket
    inv = 1.0 / sigma
    for _ in range(40):
        u = (x - mu) * inv
        f = float(weight @ ndtr(-u)) - target
        if f > 0:
            a = x
        else:
            b = x
        slope = -float(weight @ (np.exp(-0.5 * u * u) * inv)) * _INV_SQRT_2PI
        step = f / slope if slope < 0 else math.inf
        if abs(step) <= 1e-10:  # converged (tested before the bracket: the root may sit on its edge)
            x -= step
            break
        x = x - step if a < x - step < b else 0.5 * (a + b)
        if b - a <= 1e-10:
            break
    return float(math.exp(x))


_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_GRID_STEPS = np.arange(MIXTURE_GRID, dtype=float)


def _grid(lo: float, hi: float) -> np.ndarray:
    """np.linspace(lo, hi, MIXTURE_GRID), the same values (its arithmetic: k (hi - lo) / (n - 1) + lo, the end
    set to hi) without its per-call checks, which cost as much as the rest of the mixture's bracketing."""
    step = (hi - lo) / (MIXTURE_GRID - 1)
    if step == 0 or not math.isfinite(step):
        return np.linspace(lo, hi, MIXTURE_GRID)
    xs = _GRID_STEPS * step
    xs += lo
    xs[-1] = hi
    return xs


def request_weighted_service(part, b_mean) -> float:
    """Mean service time (s) of the batch a random request is in: sum_k k P(k) t(k) / sum_k k P(k), the
    size-biased batch (inspection paradox; Feller, An Introduction to Probability Theory Vol. II, section
    I.4). b_mean: a mean batch (the law of batch_size_pmf, capped at Batch_max) or the law itself."""
    pmf = size_law(part, b_mean)
    if len(pmf) == 1:
        return part.service(1)
    sizes = np.arange(1, len(pmf) + 1)
    times = batch_tables(part, len(pmf))[0]
    return float(np.dot(sizes * pmf, times) / np.dot(sizes, pmf))


def batch_tables(part, cap: int) -> tuple[np.ndarray, np.ndarray]:
    """(mean, tail) service times (s) of batches 1..cap, as Partition.service and Partition.tail give them
    (remembered by the partition; read-only)."""
    return _derived(part, ("tables", cap), lambda: _make_tables(part, cap))


def _make_tables(part, cap: int) -> tuple[np.ndarray, np.ndarray]:
    top = len(part.mean_s)
    idx = np.minimum(np.arange(cap), top - 1)
    mean = np.asarray(part.mean_s, dtype=float)[idx]
    tail = np.asarray(part.tail_s, dtype=float)[np.minimum(idx, len(part.tail_s) - 1)]
    mean.setflags(write=False)
    tail.setflags(write=False)
    return mean, tail


def lognormal_tables(part, cap: int, z: float) -> tuple[np.ndarray, np.ndarray]:
    """(log-mean, log-sd) of the log-normal batch time of each batch size 1..cap: mean t(k) and p-quantile
    tail(k) from the partition's tables, z the standard normal p-quantile (remembered by the partition)."""
    def make():
        mean, tail = batch_tables(part, cap)
        sigma = lognormal_sigmas_for_ratios(tail / mean, z)
        mu = np.log(mean) - sigma ** 2 / 2
        mu.setflags(write=False)
        sigma.setflags(write=False)
        return mu, sigma

    return _derived(part, ("lognormal", cap, z), make)


def _derived(part, key: tuple, make):
    """make(), remembered by the partition where it can (Partition.derived); any object with the tables works."""
    remember = getattr(part, "derived", None)
    return remember(key, make) if remember is not None else make()


def size_law(part, b) -> np.ndarray:
    """P(batch = k), k = 1..: `b` itself when it is a law, else batch_size_pmf around the mean b."""
    if isinstance(b, np.ndarray):
        return b
    cap = max(1, int(part.max_batch))
    return batch_size_pmf(b, cap) if b > 1 and cap > 1 else np.eye(1, cap, 0)[0]


JOB_NODES = 64  # quantile nodes per query size of a job's service law (job_law)


def job_law(part, q_pmf: np.ndarray, p: float) -> tuple[np.ndarray, np.ndarray]:
    """(values s, weights) of the service time of one query run alone: per query size k (probability
    q_pmf[k-1]) a log-normal batch time with the partition's mean and p-quantile at k, by JOB_NODES quantiles."""

    z = normal_quantile(p)
    means, tails = batch_tables(part, len(q_pmf))
    sigma = lognormal_sigmas_for_ratios(tails / means, z)
    u = ndtri((np.arange(JOB_NODES) + 0.5) / JOB_NODES)
    values = means[:, None] * np.exp(sigma[:, None] * u[None, :] - sigma[:, None] ** 2 / 2)
    weights = np.repeat(q_pmf[:, None] / JOB_NODES, JOB_NODES, axis=1)
    keep = weights.ravel() > 0
    return values.ravel()[keep], weights.ravel()[keep]
