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

import math

import numpy as np


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
    for k in range(1, cmax + 1):
        nb = aa * b / (k + aa * b)
        b = np.where(k <= cc, nb, b)
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
    wq = allen_cunneen_wait(lam, mean_s, c, ca2, cs2)
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
    from scipy.special import gammainc, ndtri

    if lam <= 0 or service_mean <= 0:
        return 0.0, 0.0
    k = max(1, int(servers))
    u = (np.arange(SERVICE_NODES) + 0.5) / SERVICE_NODES
    s = service_mean * np.exp(service_sigma * ndtri(u) - service_sigma ** 2 / 2)
    y = np.maximum(s - k * time_queue, 0.0)
    mean = float(np.mean(y * gammainc(k, lam * y) - (k / lam) * gammainc(k + 1, lam * y)))

    def exceed(w: float) -> float:
        return float(np.mean(gammainc(k, lam * np.maximum(y - w, 0.0))))

    if exceed(0.0) <= 1 - p:
        return mean, 0.0
    from scipy.optimize import brentq

    return mean, float(brentq(lambda w: exceed(w) - (1 - p), 0.0, float(y.max()), xtol=1e-12, rtol=1e-9))


BULK_NODES = 24  # quadrature nodes of a batch's service time in bulk_service_queue


def bulk_service_queue(lam: float, mean_s: np.ndarray, sigma: np.ndarray, max_states: int = 600) -> dict:
    """One server taking every waiting request, up to B = len(mean_s), whenever it frees (work-conserving
    batching): the M/G^[1,B]/1 bulk-service queue (Neuts, "A general class of bulk queues with Poisson input",
    Ann. Math. Statist. 38, 1967; Chaudhry and Templeton, A First Course in Bulk Queues, 1983, ch. 4).

    Embedded at departures, the number waiting Q moves as Q' = max(Q - B, 0) + A, where the batch just started
    holds b = min(Q, B) requests (one, after an idle period, when Q = 0) and A is the number of Poisson(lam)
    arrivals during its service, a log-normal time with mean mean_s[b-1] (s) and log-sd sigma[b-1] (so A is
    mixed Poisson, by BULK_NODES-point quadrature). The chain is solved for its stationary law pi; per cycle
    (an idle period of mean 1/lam when Q = 0, then a service) the number waiting integrates to
    r S + lam S^2 / 2 with r = max(Q - B, 0) left behind, so by the renewal-reward theorem and Little's law
    the mean wait in queue is E[integral] / E[cycle] / lam.

    Returns {"batch_pmf": P(batch = b), b = 1..B, over batches; "wait_mean": s; "p_wait": the fraction of
    requests that find the server busy; "stable": False when lam reaches B / mean_s[-1]}.
    """
    from scipy.special import gammaln, ndtri

    mean_s, sigma = np.asarray(mean_s, dtype=float), np.asarray(sigma, dtype=float)
    cap = len(mean_s)
    if lam * mean_s[-1] >= cap:
        return {"batch_pmf": np.eye(1, cap, cap - 1)[0], "wait_mean": math.inf, "p_wait": 1.0, "stable": False}
    u = (np.arange(BULK_NODES) + 0.5) / BULK_NODES
    times = mean_s[:, None] * np.exp(sigma[:, None] * ndtri(u)[None, :] - sigma[:, None] ** 2 / 2)  # (B, nodes)
    # how far the chain reaches: the backlog's geometric tail decays over about (lam S_B) B / drift states
    drift = cap - lam * mean_s[-1]
    states = int(min(max_states, 4 * cap + 10 * lam * mean_s[-1] * cap / max(drift, 1e-9)))
    arrivals = np.arange(states)
    rate = np.maximum(lam * times, 1e-300)[:, None, :]  # (B, 1, nodes): Poisson pmf by logs, mixed over nodes
    a_pmf = np.exp(arrivals[None, :, None] * np.log(rate) - rate - gammaln(arrivals + 1)[None, :, None]).mean(axis=2)
    transition = np.zeros((states, states))
    for q in range(states):
        b = min(max(q, 1), cap)
        left = max(q - cap, 0)
        row = a_pmf[b - 1, : states - left]
        transition[q, left:] = row
        transition[q, -1] += max(0.0, 1.0 - row.sum())  # the truncated tail stays in the last state
    # stationary law: pi (P - I) = 0, sum pi = 1
    system = (transition - np.eye(states)).T
    system[-1] = 1.0  # one balance equation is redundant: normalise instead
    rhs = np.zeros(states)
    rhs[-1] = 1.0
    pi = np.linalg.solve(system, rhs)
    pi = np.clip(pi, 0.0, None)
    pi /= pi.sum()
    q = np.arange(states)
    b_of = np.minimum(np.maximum(q, 1), cap)
    s1 = mean_s[b_of - 1]
    s2 = (times ** 2).mean(axis=1)[b_of - 1]
    left = np.maximum(q - cap, 0)
    cycle = float(np.dot(pi, (q == 0) / lam + s1))
    waiting = float(np.dot(pi, left * s1 + lam * s2 / 2))
    batch_pmf = np.bincount(b_of - 1, weights=pi, minlength=cap)
    idle = float(pi[0] / lam) / cycle
    return {"batch_pmf": batch_pmf, "wait_mean": waiting / cycle / lam, "p_wait": 1.0 - idle, "stable": True}


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
        return lam * (float(np.dot(weight, np.exp(eta * service))) - 1) - eta

    hi = 1.0 / float(service.max())
    while balance(hi) <= 0:
        hi *= 2
    eta = brentq(balance, hi / 2 if balance(hi / 2) < 0 else 1e-12 / float(service.max()), hi, xtol=1e-14,
                 rtol=1e-12)
    c = (1 - rho) / (lam * float(np.dot(weight, service * np.exp(eta * service))) - 1)
    if c <= 1 - p:
        return 0.0
    return math.log(c / (1 - p)) / eta


TIMER_NODES = 8  # Gauss-Legendre nodes over the oldest waiting request's arrival time in timer_batch_queue


def _timer_windows(lam: float, r: np.ndarray, cap: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """q requests (1 <= q < cap) wait for a batch whose timer has r s left (an array); it leaves when the timer
    runs out or the batch reaches cap with Poisson(lam) arrivals. Returns (E[wait], E[integral over the wait of
    the arrivals so far]), each with a new last axis over q = 1..cap-1, and P(k arrive within r), k = 0..cap-1,
    along a new last axis (the batch is q + min(arrivals, cap - q): _batch_sizes).

    With N(t) the arrivals after the start and T_m the m-th one's time (m = cap - q places left), the wait is
    min(r, T_m) and {t < T_m} = {N(t) <= m - 1}, so E[min(r, T_m)] = sum_{k<m} integral_0^r P(N(t) = k) dt and
    E[integral_0^wait N(t) dt] = sum_{k<m} k integral_0^r P(N(t) = k) dt, where integral_0^r P(N(t) = k) dt =
    P(k + 1, lam r) / lam (P the regularised lower incomplete gamma function, the Erlang(k + 1) CDF; Ross,
    Introduction to Probability Models, section 5.3). Both sums are prefix sums over k, read at m - 1 = cap - q - 1
    for every q at once: nothing here grows with the number of q values times the arrivals."""
    from scipy.special import gammaln

    x = lam * np.maximum(np.asarray(r, dtype=float), 0.0)[..., None]
    k = np.arange(cap)
    with np.errstate(divide="ignore"):
        pois = np.where(x > 0, np.exp(k * np.log(np.maximum(x, 1e-300)) - x - gammaln(k + 1)), (k == 0) * 1.0)
    # P(k + 1, x) = P(N(x) > k) = 1 - sum_{j<=k} pois[j]; gammainc itself would cost 5x more here
    part = np.maximum(1.0 - np.cumsum(pois, axis=-1), 0.0) / lam
    upto = cap - np.arange(1, cap) - 1  # m - 1 for q = 1..cap-1
    wait = np.cumsum(part, axis=-1)[..., upto]
    area = np.cumsum(k * part, axis=-1)[..., upto]
    return wait, area, pois


def _batch_sizes(weight: np.ndarray, pois: np.ndarray) -> np.ndarray:
    """Mass of batch sizes 1..cap (last axis) from `weight` on q = 1..cap-1 waiting (last axis) and the law
    pois of the arrivals within each one's timer (_timer_windows, same leading axes): the batch is q + j with
    probability pois[j] below cap, and cap takes the rest: a convolution over q, by FFT."""
    cap = pois.shape[-1]
    size = 2 * cap  # FFT length that holds the linear convolution's first cap - 1 terms without wrap-around
    conv = np.fft.irfft(np.fft.rfft(weight, size, axis=-1) * np.fft.rfft(pois, size, axis=-1), size, axis=-1)
    out = np.empty(weight.shape[:-1] + (cap,))
    out[..., :cap - 1] = np.maximum(conv[..., :cap - 1], 0.0)  # batch q + j: lag q - 1 + j; rounding, not mass
    out[..., cap - 1] = weight.sum(axis=-1) - out[..., :cap - 1].sum(axis=-1)
    return out


def timer_batch_queue(lam: float, time_queue: float, mean_s: np.ndarray, sigma: np.ndarray,
                      max_states: int = 400) -> dict:
    """One instance under timeout batching ("fixed"): a batch leaves when the instance is free and either
    B = len(mean_s) requests wait or the oldest has waited Time_queue; it takes the waiting requests up to B
    (engine.sim.batcher).

    Embedded at the epochs a batch starts, the state is its size b and the number L of requests left waiting
    (L > 0 only behind a full batch). During its service S (log-normal, mean mean_s[b-1], log-sd sigma[b-1],
    by BULK_NODES quantiles) N(S) ~ Poisson(lam S) arrive, so q = L + N(S) wait when it ends:
    - q >= B: the next batch (B) starts at once and q - B stay;
    - q = 0: the instance idles (mean 1 / lam) until one arrives, whose timer then runs: the batch is that
      request plus the arrivals in min(Time_queue, time of the (B - 1)-th), 1 + min(Poisson(lam Time_queue),
      B - 1) (the batch-size law of a timer-or-size-triggered batcher), and its requests wait by position:
      the first the whole window, each later one from its arrival (_timer_windows);
    - 0 < q < B: the oldest's timer has r = (Time_queue - its age)^+ left and the batch grows by
      min(Poisson(lam r), B - q) (_timer_windows). Without leftovers the oldest is the first of q arrivals,
      uniform over S (Poisson arrivals given their number; Ross section 5.3.5), so its age is S (1 - U) with
      P(U > u) = (1 - u)^q, integrated by TIMER_NODES Gauss-Legendre nodes; behind leftovers its age is taken
      as S + L / lam (the L-th latest arrival before the last start; the one approximation here).
    The number waiting integrates over a cycle to L S + lam S^2 / 2 during the service, plus q E[wait] +
    E[integral of the later arrivals] after it; by the renewal-reward theorem and Little's law the mean wait
    before service is E[area] / E[cycle] / lam over the chain's stationary law.

    Returns {"batch_pmf": P(batch = b), b = 1..B, over batches; "wait_mean": s, from arrival to the start of
    service; "gather_mean": s, the mean wait in an isolated timer batch (the part due to batching);
    "p_busy": the fraction of batches due before the instance frees; "stable": False when lam reaches
    B / mean_s[-1]}.
    """
    from scipy.special import gammaln, ndtri

    mean_s, sigma = np.asarray(mean_s, dtype=float), np.asarray(sigma, dtype=float)
    cap = len(mean_s)
    if lam * mean_s[-1] >= cap:
        return {"batch_pmf": np.eye(1, cap, cap - 1)[0], "wait_mean": math.inf, "gather_mean": math.inf,
                "p_busy": 1.0, "stable": False}
    u = (np.arange(BULK_NODES) + 0.5) / BULK_NODES
    times = mean_s[:, None] * np.exp(sigma[:, None] * ndtri(u)[None, :] - sigma[:, None] ** 2 / 2)  # (B, nodes)
    drift = cap - lam * mean_s[-1]
    # the leftovers move as a random walk with drift lam S_B - B and variance about lam S_B, so their law decays
    # about as exp(-2 drift L / (lam S_B)): 40 of those lengths hold all but e^-40 of it
    left_max = int(min(max_states, 2 * cap + 20 * lam * mean_s[-1] / max(drift, 1e-9)))
    n = cap + left_max  # states: (b, 0) for b = 1..B, then (B, L) for L = 1..left_max
    gl_x, gl_w = np.polynomial.legendre.leggauss(TIMER_NODES)
    ux, uw = 0.5 * (gl_x + 1), 0.5 * gl_w
    # the fresh timer batch after an idle instance: the first request and up to B - 1 more
    if cap == 1:  # a batch of one leaves at once: no window
        w0, a0, fresh = 0.0, 0.0, np.ones(1)
    else:
        ew0, ea0, pois0 = _timer_windows(lam, np.array(time_queue), cap)
        w0, a0 = float(ew0[0]), float(ea0[0])
        fresh = _batch_sizes(np.eye(1, cap - 1, 0)[0], pois0)
    gather = (w0 + a0) / float(np.dot(np.arange(1, cap + 1), fresh))
    qs = np.arange(1, cap)  # waiting when the instance frees, below B

    trans = np.zeros((n, n))
    area = np.zeros(n)
    cycle = np.zeros(n)
    busy = np.zeros(n)
    arrivals = np.arange(n + cap)

    def poisson(mean: np.ndarray) -> np.ndarray:  # P(N = k) along a new last axis, the tail in the last entry
        x = mean[..., None]
        pmf = np.exp(arrivals * np.log(x) - x - gammaln(arrivals + 1))
        pmf[..., -1] += np.maximum(0.0, 1.0 - pmf.sum(axis=-1))
        return pmf

    def spill(pn: np.ndarray, first: int) -> np.ndarray:
        """Destinations of q >= B waiting (q = first + k): state (B, q - B), index q - 1, the rest in the last."""
        out = np.zeros(pn.shape[:-1] + (n,))
        k0 = max(0, cap - first)
        d0 = first + k0 - 1
        width = n - 1 - d0  # destinations d0 .. n - 2 one by one, the last takes the rest
        out[..., d0:n - 1] = pn[..., k0:k0 + width]
        out[..., n - 1] = pn[..., k0 + width:].sum(axis=-1)
        return out

    s_full = times[cap - 1]
    # states (b, 0): the batch of b just started with nothing left behind
    pn = poisson(lam * times)  # (B, nodes, N)
    row = spill(pn, 0)
    row[..., :cap] += pn[..., :1] * fresh
    ar = lam * times ** 2 / 2 + pn[..., 0] * (w0 + a0)
    cy = times + pn[..., 0] * (1 / lam + w0)
    bz = pn[..., cap:].sum(axis=-1)
    # 0 < q < B arrived during the service: the oldest (first of q uniform arrivals) has r of its timer left
    if cap > 1:
        r = np.maximum(0.0, time_queue - times[:, :, None] * (1 - ux)[None, None, :])  # (B, nodes, U)
        ew, ea, pois = _timer_windows(lam, r, cap)  # (B, nodes, U, q), (B, nodes, U, arrivals)
        dens = uw[None, :] * qs[:, None] * (1 - ux[None, :]) ** (qs[:, None] - 1)
        dens = dens / dens.sum(axis=1, keepdims=True)  # (q, U): P(U > u) = (1 - u)^q
        wts = pn[..., None, 1:cap] * dens.T[None, None]  # (B, nodes, U, q)
        row[..., :cap] += _batch_sizes(wts, pois).sum(axis=2)
        ar += (wts * (qs * ew + ea)).sum(axis=(2, 3))
        cy += (wts * ew).sum(axis=(2, 3))
        bz += (wts.sum(axis=3) * (r <= 0)).sum(axis=2)
    trans[:cap] = row.mean(axis=1)
    area[:cap], cycle[:cap], busy[:cap] = ar.mean(axis=1), cy.mean(axis=1), bz.mean(axis=1)
    # states (B, L), L >= 1: L waited through the service of a full batch; the oldest's age is S + L / lam
    pf = poisson(lam * s_full)  # (nodes, N)
    # behind B or more leftovers every batch is full and starts at once: the row is the arrivals' law, shifted
    a_full = pf.mean(axis=0)
    deep = np.arange(2 * cap - 1, n)
    if len(deep):
        dest = deep[:, None] - cap + arrivals[None, :]
        inside = dest < n - 1
        rows = np.broadcast_to(deep[:, None], dest.shape)
        vals = np.broadcast_to(a_full[None, :], dest.shape)
        trans[rows[inside], dest[inside]] = vals[inside]  # one entry per (row, destination)
        trans[deep, n - 1] = np.where(inside, 0.0, vals).sum(axis=1)
        area[deep] = (deep - cap + 1) * s_full.mean() + lam * (s_full ** 2).mean() / 2
        cycle[deep] = s_full.mean()
        busy[deep] = 1.0
    # 0 < L < B: q = L + N(S) below B waits for the oldest's timer, r = (Time_queue - S - L / lam)^+ left
    lefts = np.arange(1, min(cap, n - cap + 1))
    if len(lefts):
        k = qs[None, :] - lefts[:, None]  # arrivals that leave q = 1..B-1 waiting, (L, q); valid where >= 0
        pk = np.where(k[None] >= 0, pf[:, np.maximum(k, 0)], 0.0)  # (nodes, L, q)
        r = np.maximum(0.0, time_queue - s_full[:, None] - lefts[None, :] / lam)  # (nodes, L)
        ew, ea, pois = _timer_windows(lam, r, cap)  # (nodes, L, q), (nodes, L, arrivals)
        row = np.stack([spill(pf, int(left)) for left in lefts], axis=1)  # (nodes, L, n)
        row[..., :cap] += _batch_sizes(pk, pois)
        ar = lefts[None, :] * s_full[:, None] + lam * s_full[:, None] ** 2 / 2 + (pk * (qs * ew + ea)).sum(axis=2)
        cy = s_full[:, None] + (pk * ew).sum(axis=2)
        bz = np.stack([pf[:, cap - left:].sum(axis=-1) for left in lefts], axis=1) + pk.sum(axis=2) * (r <= 0)
        states = cap - 1 + lefts
        trans[states] = row.mean(axis=0)
        area[states], cycle[states], busy[states] = ar.mean(axis=0), cy.mean(axis=0), bz.mean(axis=0)
    system = (trans - np.eye(n)).T
    system[-1] = 1.0
    rhs = np.zeros(n)
    rhs[-1] = 1.0
    pi = np.clip(np.linalg.solve(system, rhs), 0.0, None)
    pi /= pi.sum()
    batch_pmf = np.concatenate([pi[:cap - 1], [pi[cap - 1:].sum()]])
    wait = float(np.dot(pi, area)) / float(np.dot(pi, cycle)) / lam
    return {"batch_pmf": batch_pmf, "wait_mean": wait, "gather_mean": gather, "p_busy": float(np.dot(pi, busy)),
            "stable": True}
