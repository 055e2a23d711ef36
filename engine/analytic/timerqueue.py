"""Timeout batching on one instance ("fixed"): the embedded Markov chain at batch starts (timer_batch_queue) and
its parts, the waits in a timer window and the batch-size law. Rates in 1/s, times in s."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from engine.analytic.queueing import BatchingQueue, chain_inputs, stationary_law
from engine.analytic.service_laws import log_factorials


TIMER_NODES = 8  # Gauss-Legendre nodes over the oldest waiting request's arrival time in timer_batch_queue
# their nodes and weights on [-1, 1], worked out once (numpy's leggauss finds them as eigenvalues at every call)
_TIMER_NODES, _TIMER_WEIGHTS = np.polynomial.legendre.leggauss(TIMER_NODES)
NEGLIGIBLE_LOG_PMF = -100.0  # Poisson terms below e^this (4e-44) are left out of the chain's arrival laws
DIRECT_UP_TO = 32  # Batch_max up to which _batch_sizes convolves by shifted products rather than by FFT


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

    r = np.asarray(r, dtype=float)
    wait, area, pois = _windows_by_count(lam, r.reshape(-1), cap)
    # wait and area as the views numpy's indexing of the last axis gave before (the q axis outermost in memory): the
    # products taken of them keep that layout, and so the sums over them their order, to the last bit
    lead = r.shape
    return (wait.T.reshape(lead + (cap - 1,)), area.T.reshape(lead + (cap - 1,)),
            np.ascontiguousarray(pois.T).reshape(lead + (cap,)))


def _windows_by_count(lam: float, r: np.ndarray, cap: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """_timer_windows of a flat array of timers r, with the counts (q, arrivals) on the first axis: (cap - 1, len(r)),
    (cap - 1, len(r)), (cap, len(r)), C-ordered. Every entry is the same float operation on the same operands as
    with the counts last (prefix sums run in the same order, _prefix_sums), but each operation sweeps len(r) entries
    at once instead of cap: several times faster for the thousands of timers of a chain's rows."""
    x = lam * np.maximum(r, 0.0)[None, :]
    k = np.arange(cap)[:, None]
    with np.errstate(divide="ignore"):
        pois = np.where(x > 0, np.exp(k * np.log(np.maximum(x, 1e-300)) - x - log_factorials(cap)[:, None]),
                        (k == 0) * 1.0)
    # P(k + 1, x) = P(N(x) > k) = 1 - sum_{j<=k} pois[j]; gammainc itself would cost 5x more here
    part = np.maximum(1.0 - _prefix_sums(pois), 0.0) / lam
    upto = cap - np.arange(1, cap) - 1  # m - 1 for q = 1..cap-1
    wait = _prefix_sums(part)[upto]
    area = _prefix_sums(k * part)[upto]
    return wait, area, pois


def _prefix_sums(a: np.ndarray) -> np.ndarray:
    """np.cumsum(a, axis=0), row by row: the same additions in the same order (a running sum), but each a sweep over
    a whole row; numpy's cumsum along the first axis runs one short strided sum per column."""
    out = np.empty_like(a)
    if len(a):
        out[0] = a[0]
    for i in range(1, len(a)):
        np.add(out[i - 1], a[i], out=out[i])
    return out


def _batch_sizes(weight: np.ndarray, pois: np.ndarray) -> np.ndarray:
    """Mass of batch sizes 1..cap (last axis) from `weight` on q = 1..cap-1 waiting (last axis) and the law
    pois of the arrivals within each one's timer (_timer_windows, same leading axes): the batch is q + j with
    probability pois[j] below cap, and cap takes the rest: a convolution over q, by shifted products up to
    DIRECT_UP_TO, by FFT beyond."""
    cap = pois.shape[-1]
    out = np.zeros(weight.shape[:-1] + (cap,))
    if cap <= DIRECT_UP_TO:  # cap - 1 shifted products: cheaper than three FFTs at these lengths, and exact sums
        # on the batch-size axis moved first, so each product runs over contiguous memory (the same products
        # added in the same order as slicing the last axis: the same values, several times faster); the arrivals
        # copied contiguous, so each product reads memory in order (~2x faster than the strided view)
        lead = weight.shape[:-1]
        w = np.moveaxis(weight, -1, 0).reshape(cap - 1, -1)
        arrivals = np.ascontiguousarray(np.moveaxis(np.broadcast_to(pois, lead + (cap,)), -1, 0).reshape(cap, -1))
        acc = np.zeros((cap - 1, w.shape[1]))
        for lag in range(cap - 1):  # q = lag + 1 waiting, j arrivals: batch q + j at index lag + j
            acc[lag:] += w[lag] * arrivals[:cap - 1 - lag]
        out[..., :cap - 1] = np.moveaxis(acc.reshape((cap - 1,) + lead), 0, -1)
    else:
        size = 2 * cap  # FFT length that holds the linear convolution's first cap - 1 terms without wrap-around
        conv = np.fft.irfft(np.fft.rfft(weight, size, axis=-1) * np.fft.rfft(pois, size, axis=-1), size, axis=-1)
        out[..., :cap - 1] = np.maximum(conv[..., :cap - 1], 0.0)  # batch q + j: lag q - 1 + j; rounding, not mass
    out[..., cap - 1] = weight.sum(axis=-1) - out[..., :cap - 1].sum(axis=-1)
    return out


def _negligible_count(mean: float) -> int:
    """The least count k > mean at which the Poisson(mean) log-pmf k log(mean) - mean - log k! is below
    NEGLIGIBLE_LOG_PMF. Beyond the mode the pmf falls with k and, for k > mean, rises with the mean, so the count
    found for the largest of several means bounds them all (_Chain.poisson)."""
    if not mean > 0 or not math.isfinite(mean):
        return 1 if mean == 0 else 1 << 30  # P(N = 0) = 1 only; a NaN or infinite mean: the whole axis, as before
    k = int(mean) + 1
    log_mean = math.log(mean)
    log_pmf = k * log_mean - mean - math.lgamma(k + 1)
    while log_pmf >= NEGLIGIBLE_LOG_PMF:
        k += 1
        log_pmf += log_mean - math.log(k)
    return k


@dataclass(frozen=True)
class _Chain:
    """The embedded chain's shape: B = cap, states (b, 0) for b = 1..B then (B, L) for L = 1..states - B, and
    the two helpers every row builder uses."""

    lam: float
    cap: int
    states: int

    def poisson(self, mean: np.ndarray) -> np.ndarray:
        """P(N = k) along a new last axis, k = 0..states + cap - 1, the tail in the last entry.

        Only the counts below _negligible_count(max mean) are worked out: beyond it every pmf term is below
        e^-100 (4e-44), left 0.0; their mass, far below double precision's 1e-16 of the whole, would not move
        the tail entry (a near-capacity chain's axis is ~430 long, its means ~10-40: ~100 counts are worked
        out instead of ~430)."""

        n = self.states + self.cap
        x = mean[..., None]
        top = min(n, _negligible_count(float(np.max(mean)) if mean.size else 0.0))
        pmf = np.zeros(mean.shape + (n,))
        pmf[..., :top] = np.exp(np.arange(top) * np.log(x) - x - log_factorials(n)[:top])
        pmf[..., -1] += np.maximum(0.0, 1.0 - pmf.sum(axis=-1))
        return pmf

    def spill(self, arrivals_pmf: np.ndarray, first: int) -> np.ndarray:
        """Destinations of q >= B waiting (q = first + k arrivals): state (B, q - B), index q - 1, the rest in
        the last state."""
        states, cap = self.states, self.cap
        out = np.zeros(arrivals_pmf.shape[:-1] + (states,))
        skip = max(0, cap - first)
        first_dest = first + skip - 1
        width = states - 1 - first_dest  # destinations first_dest .. states - 2 one by one, the last the rest
        out[..., first_dest:states - 1] = arrivals_pmf[..., skip:skip + width]
        out[..., states - 1] = arrivals_pmf[..., skip + width:].sum(axis=-1)
        return out


class _Rows(NamedTuple):
    """Per starting state: the transition row, and the cycle's expected waiting area (request-s), length (s) and
    probability that the next batch is due before the instance frees."""

    transition: np.ndarray
    area: np.ndarray
    cycle: np.ndarray
    busy: np.ndarray


def _fresh_batch(lam: float, time_queue: float, cap: int) -> tuple[float, float, np.ndarray]:
    """After an idle instance the first arrival starts a timer: (E[its wait], E[area of the later arrivals'
    waits], law of the batch size 1..cap)."""
    if cap == 1:  # a batch of one leaves at once: no window
        return 0.0, 0.0, np.ones(1)
    wait, area, arrivals_pmf = _timer_windows(lam, np.array(time_queue), cap)
    return float(wait[0]), float(area[0]), _batch_sizes(np.eye(1, cap - 1, 0)[0], arrivals_pmf)


def _rows_after_clean_start(chain: _Chain, times: np.ndarray, time_queue: float,
                            fresh: tuple[float, float, np.ndarray]) -> _Rows:
    """States (b, 0): a batch of b just started with nothing left behind; during its service S (the quadrature
    nodes `times`, (B, nodes)) q = N(S) arrive. q = 0 idles into a fresh batch; 0 < q < B wait for the
    oldest's timer, which has r = (Time_queue - S (1 - U))^+ left, P(U > u) = (1 - u)^q (the oldest is the first
    of q uniform arrivals; Ross section 5.3.5), by TIMER_NODES Gauss-Legendre nodes; q >= B starts at once."""
    lam, cap = chain.lam, chain.cap
    fresh_wait, fresh_area, fresh_sizes = fresh
    arrivals_pmf = chain.poisson(lam * times)  # (B, nodes, N)
    row = chain.spill(arrivals_pmf, 0)
    row[..., :cap] += arrivals_pmf[..., :1] * fresh_sizes
    area = lam * times ** 2 / 2 + arrivals_pmf[..., 0] * (fresh_wait + fresh_area)
    cycle = times + arrivals_pmf[..., 0] * (1 / lam + fresh_wait)
    busy = arrivals_pmf[..., cap:].sum(axis=-1)
    if cap > 1:
        waiting = np.arange(1, cap)
        u_nodes, u_weights = 0.5 * (_TIMER_NODES + 1), 0.5 * _TIMER_WEIGHTS
        left = np.maximum(0.0, time_queue - times[:, :, None] * (1 - u_nodes)[None, None, :])  # (B, nodes, U)
        wait, gathered, window_pmf = _timer_windows(lam, left, cap)  # (B, nodes, U, q), (B, nodes, U, arrivals)
        density = u_weights[None, :] * waiting[:, None] * (1 - u_nodes[None, :]) ** (waiting[:, None] - 1)
        density = density / density.sum(axis=1, keepdims=True)  # (q, U)
        weight = arrivals_pmf[..., None, 1:cap] * density.T[None, None]  # (B, nodes, U, q)
        row[..., :cap] += _batch_sizes(weight, window_pmf).sum(axis=2)
        area += (weight * (waiting * wait + gathered)).sum(axis=(2, 3))
        cycle += (weight * wait).sum(axis=(2, 3))
        busy += (weight.sum(axis=3) * (left <= 0)).sum(axis=2)
    return _Rows(row.mean(axis=1), area.mean(axis=1), cycle.mean(axis=1), busy.mean(axis=1))


def _rows_behind_full(chain: _Chain, full_times: np.ndarray, full_pmf: np.ndarray) -> tuple[np.ndarray, _Rows]:
    """States (B, L), L >= B: behind B or more leftovers every batch is full and starts at once, so the row is
    the arrivals' law shifted (one entry per destination). Returns the state indices and their rows."""
    cap, states = chain.cap, chain.states
    deep = np.arange(2 * cap - 1, states)
    row = np.zeros((len(deep), states))
    if len(deep):
        arrivals_pmf = full_pmf.mean(axis=0)
        first = deep - cap
        # destinations first = L - B .. states - 2 one by one: arrivals_pmf[destination - first], none below first;
        # row by row a window sliding back one place over the law behind states - 1 zeros (a copy, no indexing)
        padded = np.concatenate([np.zeros(states - 1), arrivals_pmf[:states - 1]])
        row[:, :states - 1] = sliding_window_view(padded, states - 1)[states - 1 - first]
        # the rest, arrivals j with first + j >= states - 1, in the last state: the law's suffix sums, read at
        # states - 1 - first (summed from the far end: the same mass as summing each row, to its last bits)
        beyond = np.cumsum(arrivals_pmf[::-1])[::-1]
        row[:, states - 1] = beyond[states - 1 - first]
    area = (deep - cap + 1) * full_times.mean() + chain.lam * (full_times ** 2).mean() / 2
    return deep, _Rows(row, area, np.full(len(deep), full_times.mean()), np.ones(len(deep)))


def _rows_behind_leftovers(chain: _Chain, full_times: np.ndarray, full_pmf: np.ndarray,
                           time_queue: float) -> tuple[np.ndarray, _Rows]:
    """States (B, L), 0 < L < B: L waited through a full batch's service; q = L + N(S) below B waits for the
    oldest's timer, whose age is taken as S + L / lam (the L-th latest arrival before the last start; the one
    approximation here), so r = (Time_queue - S - L / lam)^+ is left. Returns the state indices and rows."""
    lam, cap, states = chain.lam, chain.cap, chain.states
    lefts = np.arange(1, min(cap, states - cap + 1))
    if not len(lefts):
        return lefts, _Rows(np.zeros((0, states)), np.zeros(0), np.zeros(0), np.zeros(0))
    waiting = np.arange(1, cap)
    arrived = waiting[None, :] - lefts[:, None]  # arrivals that leave q = 1..B-1 waiting, (L, q); valid >= 0
    arrived_pmf = np.where(arrived[None] >= 0, full_pmf[:, np.maximum(arrived, 0)], 0.0)  # (nodes, L, q)
    remaining = np.maximum(0.0, time_queue - full_times[:, None] - lefts[None, :] / lam)  # (nodes, L)
    wait, gathered, window_pmf = _timer_windows(lam, remaining, cap)  # (nodes, L, q), (nodes, L, arrivals)
    row = np.stack([chain.spill(full_pmf, int(left)) for left in lefts], axis=1)  # (nodes, L, states)
    row[..., :cap] += _batch_sizes(arrived_pmf, window_pmf)
    area = (lefts[None, :] * full_times[:, None] + lam * full_times[:, None] ** 2 / 2
            + (arrived_pmf * (waiting * wait + gathered)).sum(axis=2))
    cycle = full_times[:, None] + (arrived_pmf * wait).sum(axis=2)
    busy = (np.stack([full_pmf[:, cap - left:].sum(axis=-1) for left in lefts], axis=1)
            + arrived_pmf.sum(axis=2) * (remaining <= 0))
    return cap - 1 + lefts, _Rows(row.mean(axis=0), area.mean(axis=0), cycle.mean(axis=0), busy.mean(axis=0))


def timer_batch_queue(lam: float, time_queue: float, mean_s: np.ndarray, sigma: np.ndarray,
                      max_states: int = 400) -> BatchingQueue:
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
      min(Poisson(lam r), B - q) (_timer_windows; the oldest's age in _rows_after_clean_start and
      _rows_behind_leftovers).
    The number waiting integrates over a cycle to L S + lam S^2 / 2 during the service, plus q E[wait] +
    E[integral of the later arrivals] after it; by the renewal-reward theorem and Little's law the mean wait
    before service is E[area] / E[cycle] / lam over the chain's stationary law. p_wait is the fraction of
    batches due before the instance frees; gather_mean_s the mean wait in an isolated timer batch.
    """
    chain_start = chain_inputs(lam, mean_s, sigma)
    if isinstance(chain_start, BatchingQueue):
        return chain_start
    mean_s, cap, times, drift = chain_start
    # the leftovers move as a random walk with drift lam S_B - B and variance about lam S_B, so their law decays
    # about as exp(-2 drift L / (lam S_B)): 40 of those lengths hold all but e^-40 of it
    left_max = int(min(max_states, 2 * cap + 20 * lam * mean_s[-1] / max(drift, 1e-9)))
    chain = _Chain(lam=lam, cap=cap, states=cap + left_max)
    fresh = _fresh_batch(lam, time_queue, cap)
    gather = (fresh[0] + fresh[1]) / float(np.dot(np.arange(1, cap + 1), fresh[2]))
    transition = np.zeros((chain.states, chain.states))
    area, cycle, busy = np.zeros(chain.states), np.zeros(chain.states), np.zeros(chain.states)
    full_times = times[cap - 1]
    full_pmf = chain.poisson(lam * full_times)  # (nodes, N)
    parts = [(np.arange(cap), _rows_after_clean_start(chain, times, time_queue, fresh)),
             _rows_behind_full(chain, full_times, full_pmf),
             _rows_behind_leftovers(chain, full_times, full_pmf, time_queue)]
    for index, rows in parts:
        transition[index], area[index], cycle[index], busy[index] = rows
    pi = stationary_law(transition)
    batch_pmf = np.concatenate([pi[:cap - 1], [pi[cap - 1:].sum()]])
    wait = float(np.dot(pi, area)) / float(np.dot(pi, cycle)) / lam
    return BatchingQueue(batch_pmf=batch_pmf, wait_mean_s=wait, p_wait=float(np.dot(pi, busy)), stable=True,
                         gather_mean_s=gather)
