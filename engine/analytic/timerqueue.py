"""Timeout batching on one instance ("fixed"): the embedded Markov chain at batch starts (timer_batch_queue) and
its parts, the waits in a timer window and the batch-size law. Rates in 1/s, times in s."""

from __future__ import annotations

import math

import numpy as np

from engine.analytic.queueing import BULK_NODES


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
