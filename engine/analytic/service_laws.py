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
from math import erfc, exp
from statistics import NormalDist

import numpy as np

from engine.analytic.special import gammaln, ndtr, ndtri
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
    if len(weights) == 1:  # one partition kind (most sides): its arrays as they are, not copied
        weight, mu, sigma = weights[0], mus[0], sigmas[0]
    else:
        weight, mu, sigma = (np.concatenate(x) for x in (weights, mus, sigmas))
    keep = weight > 1e-12
    return lognormal_mixture_quantile(weight[keep] / weight[keep].sum(), mu[keep], sigma[keep], p)


MIXTURE_GRID = 12  # log-spaced points on which gather_scan's vectorised mixture quantile brackets its roots
MIXTURE_STEP_TOL = 1e-6  # a step (in x = log t) this small is the last if Newton's own miss estimate is below 1e-12


def lognormal_mixture_quantile(weight: np.ndarray, mu: np.ndarray, sigma: np.ndarray, p: float) -> float:
    """p-quantile of a mixture of log-normals (weights summing to 1, log-means mu, log-sds sigma > 0).

    The survival function S(x) = sum_i w_i Phi(-(x - mu_i) / sigma_i) of x = log t is decreasing, and S(q_i) =
    1 - p at each component's own quantile q_i = mu_i + z sigma_i, so S >= 1 - p at min q_i and S <= 1 - p at
    max q_i: they bracket the root. From max q_i, Halley steps on g(x) = log S(x) - log(1 - p) (g' = S'/S,
    g'' = S''/S - g'^2 with S'(x) = -sum_i w_i phi(u_i) / sigma_i, S''(x) = sum_i w_i phi(u_i) u_i / sigma_i^2,
    u_i = (x - mu_i) / sigma_i) find it in ~3 evaluations: log S of normal tails is near quadratic, where
    Newton on S itself took 7-9 (Halley, Philos. Trans. 18, 1694; Press et al., Numerical Recipes, 3rd ed.,
    section 9.4). Halley's correction is used only where it changes the Newton step by less than half (a flat
    stretch of S next to a steep edge, as narrow components far apart make, would otherwise shrink the steps
    until they looked converged); a step leaving the bracket is replaced by bisection. The last step is at most
    1e-10 in x, or at most MIXTURE_STEP_TOL with Newton's estimate of its miss (g''/(2 g') step^2) below 1e-12."""

    # remembered by value for the last MIXTURE_MEMO mixtures: GPU sides of different layouts often run the same
    # partitions' batch laws at the same rate (4 in 5 calls of the search benchmark's space repeat a recent one),
    # and the Halley steps cost ~50 us where the key costs ~1 us
    weight, mu, sigma = (np.ascontiguousarray(x, dtype=float) for x in (weight, mu, sigma))
    return _mixture_quantile(weight.tobytes(), mu.tobytes(), sigma.tobytes(), float(p))


MIXTURE_MEMO = 256  # mixtures lognormal_mixture_quantile remembers
MIXTURE_LOOP = 24  # up to this many components its sums run as one Python loop (math.erfc, math.exp per
# component), which costs less than a numpy pass does (~10 numpy calls an iteration, ~0.6 us each)


@functools.lru_cache(maxsize=MIXTURE_MEMO)
def _mixture_quantile(weight_bytes: bytes, mu_bytes: bytes, sigma_bytes: bytes, p: float) -> float:
    """lognormal_mixture_quantile of the mixture whose arrays' bytes are given."""
    weight, mu, sigma = (np.frombuffer(x) for x in (weight_bytes, mu_bytes, sigma_bytes))
    target = 1.0 - p
    log_target = math.log(target)
    own = mu + normal_quantile(p) * sigma  # each component's p-quantile (log s)
    a, b = float(own.min()), float(own.max())
    if b - a <= 1e-10:
        return float(math.exp(b))
    inv = 1.0 / sigma
    w_dens = weight * inv * _INV_SQRT_2PI
    if len(weight) <= MIXTURE_LOOP:
        parts = list(zip((0.5 * weight).tolist(), mu.tolist(), inv.tolist(), w_dens.tolist()))

        def sums(x: float) -> tuple[float, float, float]:
            s = dens = curv = 0.0
            for w_half, m, i, wd in parts:
                v = (m - x) * i  # -u
                s += w_half * erfc(v * -_SQRT1_2)  # w Phi(v) = w erfc(-v / sqrt 2) / 2
                phi = exp(v * v * -0.5)
                dens += wd * phi
                curv += wd * (phi * v * i)
            return s, dens, curv
    else:
        def sums(x: float) -> tuple[float, float, float]:
            v = (mu - x) * inv  # -u
            phi = np.exp(v * v * -0.5)
            return float(weight @ ndtr(v)), float(w_dens @ phi), float(w_dens @ (phi * v * inv))

    x = b
    for _ in range(80):
        s, dens, curv = sums(x)  # S(x), -S'(x), S''(x)
        if s > target:
            a = x
        else:
            b = x
        curve = math.inf
        if dens > 0 and s > 0:
            g1 = -dens / s
            step = (math.log(s) - log_target) / g1  # Newton on log S
            g2 = -curv / s - g1 * g1
            curve = 0.5 * step * g2 / g1  # Newton's step misses the root by about curve * step
            if abs(curve) < 0.5:  # Halley's correction where the curve is smooth at the step's scale; a larger
                step /= 1 - curve  # one (a flat stretch next to a steep edge) would creep: Newton, or bisection
        else:  # S flat here (or lost to underflow): bisect
            step = math.inf
        # converged (tested before the bracket: the root may sit on its edge): a step of 1e-10, or a small one whose
        # own miss is below 1e-12
        if abs(step) <= 1e-10 or (abs(step) <= MIXTURE_STEP_TOL and abs(curve * step) <= 1e-12):
            x -= step
            break
        x = x - step if a < x - step < b else 0.5 * (a + b)
        if b - a <= 1e-10:
            break
    return float(math.exp(x))


_SQRT1_2 = math.sqrt(0.5)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


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
