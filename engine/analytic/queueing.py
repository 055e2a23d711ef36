"""Queueing formulas (pure functions; rates in 1/s, times in s).

Sources: Erlang C and the M/M/c waiting-time distribution (Kleinrock, Queueing
Systems Vol. 1, section 3.5; Gross and Harris, Fundamentals of Queueing Theory,
eq. 2.32-2.35); M/D/1 and M/G/1 mean wait by Pollaczek-Khinchine (Kleinrock
eq. 5.85); the Allen-Cunneen approximation for G/G/c (Allen, Probability,
Statistics and Queueing Theory, 1990, eq. 6.1.24), exact for M/M/c and within
about 10 % for moderate variability; the waiting-time tail of G/G/c taken as
exponential with the Allen-Cunneen mean, P(W > t) = C exp(-t C / Wq), which
is exact for M/M/c and an approximation otherwise.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import numpy as np

from engine.analytic.special import erlang_cdfs, gammainc, gammaln, ndtri


def erlang_c(c: int, a: float) -> float:
    """Probability an arrival waits in M/M/c with offered load a = lambda/mu (Erlang); 1 if a >= c."""
    if c < 1:
        raise ValueError(f"need at least one server, got {c}")
    if a <= 0:
        return 0.0
    if a >= c:
        return 1.0
    # stable recursion on Erlang B, then convert (avoids factorials)
    b = 1.0
    for k in range(1, c + 1):
        b = a * b / (k + a * b)
    rho = a / c
    return b / (1 - rho + rho * b)


def erlang_c_vec(c: np.ndarray, a: np.ndarray) -> np.ndarray:
    """Vectorised Erlang C over arrays of server counts and offered loads."""
    c = np.asarray(c, dtype=int)
    a = np.asarray(a, dtype=float)
    b = np.ones(np.broadcast(c, a).shape)
    cmax = int(np.max(c)) if c.size else 0
    aa = np.broadcast_to(a, b.shape)
    cc = np.broadcast_to(c, b.shape)
    if c.size and int(np.min(c)) == cmax:  # one server count (a G/G/c stage at many rates): no mask to apply
        for k in range(1, cmax + 1):
            ab = aa * b
            b = ab / (k + ab)
    else:
        for k in range(1, cmax + 1):
            ab = aa * b
            b = np.where(k <= cc, ab / (k + ab), b)
    rho = aa / cc
    with np.errstate(divide="ignore", invalid="ignore"):
        out = b / (1 - rho + rho * b)
    return np.where(aa <= 0, 0.0, np.where(aa >= cc, 1.0, out))


def mmc_wait_mean(lam: float, mu: float, c: int) -> float:
    """Mean wait in queue of M/M/c: C(c, a) / (c mu - lambda)."""
    if lam >= c * mu:
        return math.inf
    return erlang_c(c, lam / mu) / (c * mu - lam)


def mmc_wait_quantile(lam: float, mu: float, c: int, p: float) -> float:
    """p-quantile of the M/M/c wait in queue: W > t with probability C exp(-(c mu - lambda) t)."""
    if lam >= c * mu:
        return math.inf
    pw = erlang_c(c, lam / mu)
    if pw <= 1 - p:
        return 0.0
    return math.log(pw / (1 - p)) / (c * mu - lam)


def md1_wait_mean(lam: float, d: float) -> float:
    """Mean wait in queue of M/D/1 with service time d: rho d / (2 (1 - rho))."""
    rho = lam * d
    if rho >= 1:
        return math.inf
    return rho * d / (2 * (1 - rho))


def mg1_wait_mean(lam: float, mean_s: float, scv: float) -> float:
    """Pollaczek-Khinchine mean wait of M/G/1: rho E[S] (1 + cs^2) / (2 (1 - rho))."""
    rho = lam * mean_s
    if rho >= 1:
        return math.inf
    return rho * mean_s * (1 + scv) / (2 * (1 - rho))


def allen_cunneen_wait(lam: float, mean_s: float, c: float, ca2: float, cs2: float) -> float:
    """Mean wait in queue of G/G/c: Wq(M/M/c) x (ca^2 + cs^2) / 2 (Allen-Cunneen).

    A fractional server count (a host CPU share) is rounded down for Erlang C,
    keeping at least one server, with the service rate scaled to keep capacity.
    """
    k = max(1, int(math.floor(c)))
    mu = (c / k) / mean_s  # per-server rate with the capacity of c servers
    if lam >= k * mu:
        return math.inf
    return mmc_wait_mean(lam, mu, k) * (ca2 + cs2) / 2


def wait_quantile(wq_mean: float, p_wait: float, p: float) -> float:
    """p-quantile of a wait with an atom at 0 and an exponential tail: P(W > t) = p_wait exp(-t p_wait / Wq)."""
    if math.isinf(wq_mean):
        return math.inf
    if wq_mean <= 0 or p_wait <= 1 - p:
        return 0.0
    return math.log(p_wait / (1 - p)) * wq_mean / p_wait


def gg_c_wait(lam: float, mean_s: float, c: float, ca2: float, cs2: float, p: float) -> tuple[float, float, float]:
    """(mean wait, p-quantile of wait, probability of waiting) for a G/G/c stage (Allen-Cunneen)."""
    k = max(1, int(math.floor(c)))
    mu = (c / k) / mean_s
    if lam >= k * mu:
        return math.inf, math.inf, 1.0
    pw = erlang_c(k, lam / mu)
    wq = pw / (k * mu - lam) * (ca2 + cs2) / 2  # allen_cunneen_wait, with the Erlang C just worked out
    # the exponential tail keeps its M/M/c shape but is stretched by the variability factor
    return wq, wait_quantile(wq, pw, p), pw


def mmc_sojourn_survival(t: float, lam: float, mu: float, c: int) -> float:
    """P(T > t) of the M/M/c (FIFO) sojourn time T = W + S, t in s, rates in 1/s.

    The wait W is 0 with probability 1 - C and otherwise exponential with rate theta = c mu - lambda
    (C = Erlang C); the service S is exponential with rate mu, independent of W. Hence
    P(T > t) = (1 - C) e^(-mu t) + C P(W' + S > t), the hypoexponential survival
    P(W' + S > t) = (theta e^(-mu t) - mu e^(-theta t)) / (theta - mu), or (1 + mu t) e^(-mu t) when
    theta = mu (Gross and Harris, Fundamentals of Queueing Theory, 4th ed., section 2.3, the sojourn-time
    distribution of M/M/c; Kleinrock, Queueing Systems Vol. 1, section 3.5).
    """
    if lam >= c * mu:
        return 1.0
    pw = erlang_c(c, lam / mu)
    theta = c * mu - lam
    if abs(theta - mu) < 1e-12 * mu:
        both = (1 + mu * t) * math.exp(-mu * t)
    else:
        both = (theta * math.exp(-mu * t) - mu * math.exp(-theta * t)) / (theta - mu)
    return (1 - pw) * math.exp(-mu * t) + pw * both


def mmc_sojourn_quantile(lam: float, mu: float, c: int, p: float) -> float:
    """p-quantile (s) of the M/M/c sojourn time: mmc_sojourn_survival(t) = 1 - p, solved by bisection
    (the survival is continuous and decreasing, so to 1e-12 relative in 200 halvings at most)."""
    if lam >= c * mu:
        return math.inf
    lo, hi = 0.0, 1.0 / mu
    while mmc_sojourn_survival(hi, lam, mu, c) > 1 - p:
        hi *= 2
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if mmc_sojourn_survival(mid, lam, mu, c) > 1 - p else (lo, mid)
        if hi - lo <= 1e-12 * hi:
            break
    return 0.5 * (lo + hi)


SERVICE_NODES = 64  # midpoint quantiles of the batch service time in timeout_batch_wait
SERVICE_Z = ndtri((np.arange(SERVICE_NODES) + 0.5) / SERVICE_NODES)  # their standard normal quantiles, worked out once
SERVICE_Z.setflags(write=False)


@functools.lru_cache(maxsize=256)  # pure in its arguments; GPU sides of different layouts often ask the same wait at
# the same rate (2 in 5 calls in the search benchmark's space repeat a recent one)
def timeout_batch_wait(service_mean: float, service_sigma: float, servers: int, time_queue: float, lam: float,
                       p: float) -> tuple[float, float]:
    """(mean, p-quantile) of a batch's wait for an instance (s) under a timeout batcher with a shared queue.

    A batch is released Time_queue after its first request arrives (or when full), to whichever of the
    `servers` instances frees first; requests that arrive while it waits join it, so batches never queue
    behind one another: the next batch's timer starts only after this one leaves. The instance it takes
    is, in the steady cycle, the one that started `servers` batches earlier, so the batch waits
    W = (S - T)^+ with S the batch service time (log-normal, mean service_mean, log-sd service_sigma) and
    T = servers x Time_queue + G, G ~ Gamma(servers, lambda) the waits for each of those batches' first
    request (lambda in requests/s). An approximation (the cycle is taken as steady and a waiting batch's
    growth ignored), exact for one instance with deterministic service. With the Gamma partial
    expectation E[G; G <= y] = (k / lambda) P(k + 1, lambda y) (P the regularised lower incomplete gamma
    function; Johnson, Kotz and Balakrishnan, Continuous Univariate Distributions Vol. 1, ch. 17):
    E[(s - T)^+] = y P(k, lambda y) - (k / lambda) P(k + 1, lambda y), y = s - k Time_queue, and
    P(W > w) = E_S[P(k, lambda (S - k Time_queue - w))], averaged over SERVICE_NODES quantiles of S.
    """

    if lam <= 0 or service_mean <= 0:
        return 0.0, 0.0
    k = max(1, int(servers))
    s = service_mean * np.exp(service_sigma * SERVICE_Z - service_sigma ** 2 / 2)
    y = np.maximum(s - k * time_queue, 0.0)
    if not y.any():  # no batch outlasts the timers: P(k, 0) = 0 at every node, so the mean and the quantile are 0
        return 0.0, 0.0
    below, below_next = erlang_cdfs(k, lam * y)  # P(k, lam y), P(k + 1, lam y)
    mean = float(np.mean(y * below - (k / lam) * below_next))

    def exceed(w: float) -> float:
        return float(np.mean(gammainc(k, lam * np.maximum(y - w, 0.0))))

    if float(np.mean(below)) <= 1 - p:  # exceed(0.0): y - 0 is y, already >= 0
        return mean, 0.0
    from scipy.optimize import brentq

    return mean, float(brentq(lambda w: exceed(w) - (1 - p), 0.0, float(y.max()), xtol=1e-12, rtol=1e-9))


BULK_NODES = 24  # quadrature nodes of a batch's service time in bulk_service_queue and timer_batch_queue


class BatchingQueue(NamedTuple):
    """The stationary answer for one batching instance (bulk_service_queue, timer_batch_queue)."""

    batch_pmf: np.ndarray  # P(batch = b), b = 1..B, over batches
    wait_mean_s: float  # mean wait from arrival to the start of service (s)
    p_wait: float  # probability that the wait has a queueing part: a request finds the instance busy (bulk), a
    # batch is due before the instance frees (timer); wait_quantile's atom
    stable: bool  # False when the arrival rate reaches B / mean_s[-1]
    gather_mean_s: float = 0.0  # the mean wait in an isolated timer batch, the part due to batching (timer only)


def saturated_batching(cap: int) -> BatchingQueue:
    """The answer at or beyond capacity: every batch full, the wait unbounded."""
    return BatchingQueue(batch_pmf=np.eye(1, cap, cap - 1)[0], wait_mean_s=math.inf, p_wait=1.0, stable=False,
                         gather_mean_s=math.inf)


def lognormal_nodes(mean_s: np.ndarray, sigma: np.ndarray, nodes: int) -> np.ndarray:
    """Batch service times (s) at `nodes` equal-probability quantiles of each batch size's log-normal (mean
    mean_s[b-1], log-sd sigma[b-1]), shape (B, nodes): the quadrature both batching chains mix over."""

    mid_quantiles = (np.arange(nodes) + 0.5) / nodes
    return mean_s[:, None] * np.exp(sigma[:, None] * ndtri(mid_quantiles)[None, :] - sigma[:, None] ** 2 / 2)


class ChainInputs(NamedTuple):
    """What both batching chains (bulk_service_queue, timer_batch_queue) start from."""

    mean_s: np.ndarray  # mean batch time (s) of batch b at index b - 1
    cap: int  # Batch_max B
    times: np.ndarray  # (B, BULK_NODES) batch times at equal-probability quantiles (lognormal_nodes)
    drift: float  # B - lam S_B: how fast a backlog of full batches drains, items per batch


def chain_inputs(lam: float, mean_s: np.ndarray, sigma: np.ndarray) -> ChainInputs | BatchingQueue:
    """The batching chains' common start: the tables as arrays, their quadrature nodes and the drift, or the
    saturated answer (saturated_batching) when lam reaches B / S_B."""
    mean_s, sigma = np.asarray(mean_s, dtype=float), np.asarray(sigma, dtype=float)
    cap = len(mean_s)
    if lam * mean_s[-1] >= cap:
        return saturated_batching(cap)
    return ChainInputs(mean_s, cap, lognormal_nodes(mean_s, sigma, BULK_NODES), cap - lam * mean_s[-1])


def stationary_law(transition: np.ndarray) -> np.ndarray:
    """pi with pi (P - I) = 0 and sum pi = 1 for a finite chain's transition matrix P (rows sum to 1)."""
    states = len(transition)
    system = transition.T.copy()  # (P - I)^T: the identity taken off the diagonal alone (off it, x - 0 is x)
    system[np.diag_indices(states)] -= 1.0
    system[-1] = 1.0  # one balance equation is redundant: normalise instead
    rhs = np.zeros(states)
    rhs[-1] = 1.0
    pi = np.clip(np.linalg.solve(system, rhs), 0.0, None)
    return pi / pi.sum()


def bulk_service_queue(lam: float, mean_s: np.ndarray, sigma: np.ndarray, max_states: int = 600) -> BatchingQueue:
    """One server taking every waiting request, up to B = len(mean_s), whenever it frees (work-conserving
    batching): the M/G^[1,B]/1 bulk-service queue (Neuts, "A general class of bulk queues with Poisson input",
    Ann. Math. Statist. 38, 1967; Chaudhry and Templeton, A First Course in Bulk Queues, 1983, ch. 4).

    Embedded at departures, the number waiting Q moves as Q' = max(Q - B, 0) + A, where the batch just started
    holds b = min(Q, B) requests (one, after an idle period, when Q = 0) and A is the number of Poisson(lam)
    arrivals during its service, a log-normal time with mean mean_s[b-1] (s) and log-sd sigma[b-1] (so A is
    mixed Poisson, by BULK_NODES-point quadrature). The chain is solved for its stationary law pi; per cycle
    (an idle period of mean 1/lam when Q = 0, then a service) the number waiting integrates to
    r S + lam S^2 / 2 with r = max(Q - B, 0) left behind, so by the renewal-reward theorem and Little's law
    the mean wait in queue is E[integral] / E[cycle] / lam. p_wait is the fraction of requests that find the
    server busy.
    """

    chain = chain_inputs(lam, mean_s, sigma)
    if isinstance(chain, BatchingQueue):
        return chain
    mean_s, cap, times, drift = chain
    # how far the chain reaches: the backlog's geometric tail decays over about (lam S_B) B / drift states
    states = int(min(max_states, 4 * cap + 10 * lam * mean_s[-1] * cap / max(drift, 1e-9)))
    arrivals = np.arange(states)
    rate = np.maximum(lam * times, 1e-300)[:, None, :]  # (B, 1, nodes): Poisson pmf by logs, mixed over nodes
    arrivals_pmf = np.exp(arrivals[None, :, None] * np.log(rate) - rate
                          - gammaln(arrivals + 1)[None, :, None]).mean(axis=2)
    transition = np.zeros((states, states))
    for waiting in range(states):
        batch = min(max(waiting, 1), cap)
        left = max(waiting - cap, 0)
        row = arrivals_pmf[batch - 1, : states - left]
        transition[waiting, left:] = row
        transition[waiting, -1] += max(0.0, 1.0 - row.sum())  # the truncated tail stays in the last state
    pi = stationary_law(transition)
    waiting = np.arange(states)
    batch_of = np.minimum(np.maximum(waiting, 1), cap)
    first_moment = mean_s[batch_of - 1]
    second_moment = (times ** 2).mean(axis=1)[batch_of - 1]
    left = np.maximum(waiting - cap, 0)
    cycle = float(np.dot(pi, (waiting == 0) / lam + first_moment))
    area = float(np.dot(pi, left * first_moment + lam * second_moment / 2))
    batch_pmf = np.bincount(batch_of - 1, weights=pi, minlength=cap)
    idle = float(pi[0] / lam) / cycle
    return BatchingQueue(batch_pmf=batch_pmf, wait_mean_s=area / cycle / lam, p_wait=1.0 - idle, stable=True)


def mg1_wait_quantile(lam: float, service: np.ndarray, weight: np.ndarray, p: float) -> float:
    """p-quantile (s) of the M/G/1 wait in queue by the Cramer-Lundberg approximation, for a service time
    given as a discrete law (values `service` in s with probabilities `weight`).

    P(W > t) ~ C exp(-eta t), with eta > 0 the root of lam (E[exp(eta S)] - 1) = eta and
    C = (1 - rho) / (lam E[S exp(eta S)] - 1) (Asmussen, Applied Probability and Queues, 2nd ed., 2003,
    section XIII.5; exact for M/M/1, where C = rho and eta = mu - lambda). Unlike an exponential tail fitted
    to the mean wait, it keeps the light tail of low-variability service (M/D/1 at rho 0.3 decays about
    1.5 times faster than that fit says).
    """
    from scipy.optimize import brentq

    service, weight = np.asarray(service, dtype=float), np.asarray(weight, dtype=float)
    weight = weight / weight.sum()
    rho = lam * float(np.dot(weight, service))
    if rho >= 1:
        return math.inf
    if rho <= 0:
        return 0.0

    def balance(eta: float) -> float:
        # expm1, not exp - 1: near eta = 0 the difference cancels, and at rho close to 1 the rounding
        # outweighed (rho - 1) eta and flipped the sign the bracket below relies on
        return lam * float(np.dot(weight, np.expm1(eta * service))) - eta

    hi = 1.0 / float(service.max())
    while balance(hi) <= 0:
        hi *= 2
    # balance is convex, 0 at 0 with slope rho - 1 < 0: negative on (0, eta), so halving finds the lower end
    lo = hi / 2
    while balance(lo) >= 0:
        lo /= 2
        if lo < 1e-300:  # rho is 1 to machine precision: no decay rate to find
            return math.inf
    eta = brentq(balance, lo, hi, xtol=1e-14, rtol=1e-12)
    c = (1 - rho) / (lam * float(np.dot(weight, service * np.exp(eta * service))) - 1)
    if c <= 1 - p:
        return 0.0
    return math.log(c / (1 - p)) / eta
