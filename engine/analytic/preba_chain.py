"""PREBA on variable-length inputs (PREBA section 4.3): the one-instance queue whose batches grow cheaper as the
backlog grows, a Markov chain over the backlog at batch starts.

What the batch cut from n waiting requests costs comes from the length buckets (engine.analytic.preba_buckets:
backlog_cost_ratios, the backlog table a partition carries); this module turns that table and the partition's
random-member batch times into the queue's stationary answer (backlog_chain_queue), with its rate-independent
half made once per partition (backlog_states, preba_states).

Units: costs and times in s, rates in 1/s.
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import NamedTuple, Optional

import numpy as np

from engine.analytic.special import gammaln, ndtri
from engine.analytic.queueing import stationary_law
from engine.analytic.service_laws import batch_tables, lognormal_mixture_quantile
from engine.order_stats import distinct
from engine.profiles.tails import lognormal_sigmas_for_ratios

STATE_NODES = 6  # equal-probability quantiles of a batch's service time in preba_backlog_queue
MAX_STATES = 400  # most backlogs the chain follows (the rest is lumped in the last)
TAIL_MASS = 1e-17  # arrival counts less likely than this in every state's law are left out (lumped)


class PrebaQueue(NamedTuple):
    """The stationary answer of preba_backlog_queue (times in s)."""

    batch_pmf: np.ndarray  # P(batch = b), b = 1..B, over batches
    wait_mean_s: float  # mean wait from arrival to the start of service
    gather_mean_s: float  # the mean wait in an isolated timer batch (the part due to Time_queue)
    p_wait: float  # fraction of batches that start when the instance frees, not at their timer
    service_mean_s: float  # mean service time of the batch a random request is in
    service_q_s: float  # its p-quantile


def backlog_table(table: np.ndarray, cap: int, full_s: float, states: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(mean s, scv between buckets) of the batch cut from n waiting requests, n in `states` (all > B), from the
    partition's random-member time at B (`full_s`) and its backlog table (backlog_cost_ratios)."""
    finite = np.isfinite(table[0])
    ratio = np.interp(states, table[0][finite], table[1][finite], right=table[1][-1])
    scv = np.interp(states, table[0][finite], table[2][finite], right=table[2][-1])
    return full_s * ratio, scv


class BacklogStates(NamedTuple):
    """The rate-independent half of preba_backlog_queue's chain over backlogs n = 1..MAX_STATES (times in s;
    backlog_states makes it, a partition remembers it): what the batch cut from n waiting costs, and at which n
    the arrival laws are worked out."""

    cap: int  # Batch_max B
    means: np.ndarray  # (N,) mean time of the batch cut from n waiting, n = 1..N
    sigmas: np.ndarray  # (N,) its log-sd
    times: np.ndarray  # (N, STATE_NODES) its equal-probability quantile nodes
    second: np.ndarray  # (N,) E[S^2] over those nodes
    laws: np.ndarray  # n - 1 of the law points: n = 1..B, the backlog table's n above B, its limit's first n, N
    lower: np.ndarray  # (N,) position in `laws` of the law point at or below n
    weight: np.ndarray  # (N,) (n - that point) / (the next point - that point): 0 at a law point
    group: np.ndarray  # (N,) the service-quantile mixture component of n (one per interval of the table above B)
    limit_s: float  # the pure-bucket batch's mean time
    spread: float  # its squared coefficient of variation between buckets plus the jitter's log-variance


def backlog_states(mean_s: np.ndarray, sigma: np.ndarray, table: np.ndarray, jitter_sigma: float) -> BacklogStates:
    """The rate-independent half of preba_backlog_queue (its docstring gives the law of each state's batch):
    mean_s, sigma the random-member batch's mean (s) and log-sd at b = 1..B, table its backlog table
    (backlog_cost_ratios), jitter_sigma the log-sd of a batch's time about its mean.

    The arrival law of a state depends on n only through its batch's cost, which is linear in n between the
    table's backlogs (backlog_table) and constant past its last: the law points are n = 1..B, those backlogs and
    the first n at the limit (and N, to close the range); a state in between takes the mixture of its two
    neighbours' laws with the interpolation's weights, which keeps its mean exact (the mixed Poisson mean is
    lam times the mean cost, linear in n there) and adds to the variance only the spread of the cost across
    the interval, below 1 % of the mean in the table's widest intervals (the model's own resolution).
    """

    mean_s, sigma = np.asarray(mean_s, dtype=float), np.asarray(sigma, dtype=float)
    cap = len(mean_s)
    n = np.arange(1, MAX_STATES + 1)
    deep = n > cap
    means, sigmas = np.empty(MAX_STATES), np.empty(MAX_STATES)
    means[~deep] = mean_s[n[~deep] - 1]
    sigmas[~deep] = sigma[n[~deep] - 1]
    deep_mean, deep_scv = backlog_table(table, cap, mean_s[-1], n[deep].astype(float))
    means[deep] = deep_mean
    sigmas[deep] = np.sqrt(np.log1p(deep_scv) + jitter_sigma ** 2)
    z = ndtri((np.arange(STATE_NODES) + 0.5) / STATE_NODES)
    times = means[:, None] * np.exp(sigmas[:, None] * z[None, :] - sigmas[:, None] ** 2 / 2)
    finite = table[0][np.isfinite(table[0])]
    points = np.concatenate([n[~deep], finite[finite > cap], [finite[-1] + 1, MAX_STATES]]).astype(int)
    points = distinct(points[points <= MAX_STATES])
    lower = np.searchsorted(points, n, side="right") - 1
    upper = np.minimum(lower + 1, len(points) - 1)
    span = (points[upper] - points[lower]).astype(float)
    weight = np.where(span > 0, (n - points[lower]) / np.maximum(span, 1.0), 0.0)
    group = np.where(deep, cap + np.searchsorted(table[0], n, side="right"), n)
    arrays = [means, sigmas, times, (times ** 2).mean(axis=1), points - 1, lower, weight, group]
    for array in arrays:
        array.setflags(write=False)
    return BacklogStates(cap, *arrays, limit_s=float(mean_s[-1] * table[1][-1]),
                         spread=float(table[2][-1]) + jitter_sigma ** 2)


def preba_backlog_queue(lam: float, time_queue: float, mean_s: np.ndarray, sigma: np.ndarray, table: np.ndarray,
                        jitter_sigma: float, p: float) -> PrebaQueue | None:
    """One instance under PREBA with length buckets: a batch leaves when the instance is free and the oldest
    request has waited Time_queue (no bucket fills before: PREBA's batches are Batch_max of one bucket), and
    takes min(n, B) of the n waiting (engine.sim.batcher: the oldest's bucket topped up from its neighbours).

    Embedded at batch starts, the state is n, the requests waiting then (n >= 1). Its batch of b = min(n, B)
    costs S, log-normal with mean mean_s[n - 1] (n <= B, the random-member table) or the backlog cost of n
    (n > B: backlog_table, which grows cheaper with n) and log-sd sigma[b - 1] (n <= B) or the jitter and the
    spread between buckets, by STATE_NODES quantiles. Then:
    - n > B: n - B stay, their timer long run out; the next batch starts when the instance frees, with
      n' = n - B + N(S) (N Poisson(lam) arrivals); the cycle lasts S and the number waiting integrates to
      (n - B) S + lam S^2 / 2;
    - n <= B: nothing stays. With A the first arrival after the start (exponential, rate lam), the next batch
      starts at max(S, A + Time_queue), so with D = max(S - A, Time_queue) it holds n' = 1 + Poisson(lam D):
      P(n' = j) = Pois(j; lam S) - e^(-lam u) Pois(j; lam T) + e^(-lam u) Pois(j - 1; lam T) for u = S - T > 0
      (T = Time_queue; integrating the density lam e^(-lam a) of A over a < u), Pois(j - 1; lam T) otherwise;
      the cycle is A + D, E = S + e^(-lam u) / lam, and the waiting integrates to D + lam D^2 / 2 with
      E[D] = S - (1 - e^(-lam u)) / lam, E[D^2] = S^2 - 2 S / lam + 2 / lam^2 - e^(-lam u) (2 / lam^2 - 2 T / lam).
    By the renewal-reward theorem and Little's law the mean wait is E[area] / E[cycle] / lam over the chain's
    stationary law (as in engine.analytic.queueing.bulk_service_queue). None when lam reaches B over the
    pure-bucket batch's cost (the backlog would grow without bound).

    The rate-independent half (backlog_states) can be made once: backlog_chain_queue takes it.
    """
    return backlog_chain_queue(lam, time_queue, backlog_states(mean_s, sigma, table, jitter_sigma), p)


def partition_backlog_table(part) -> Optional[np.ndarray]:
    """The partition's PREBA backlog table (backlog_cost_ratios) where it was made for its Batch_max, else None."""
    table = part.backlog_cost
    return table if table is not None and int(table[0][0]) == part.max_batch else None


def full_batch_s(part) -> float:
    """Mean time (s) of a Batch_max batch when the instance is saturated: the random-member batch, or under PREBA's
    length buckets the batch of one bucket a long backlog yields (backlog_cost_ratios)."""
    table = partition_backlog_table(part)
    return part.service(part.max_batch) * (float(table[1][-1]) if table is not None else 1.0)


def preba_states(part, cap_items: int, p: float):
    """The rate-independent half of the PREBA backlog chain (backlog_states) of a
    partition: its batch tables, their log-normal spreads at the p-quantile and its backlog table."""
    means, tails = batch_tables(part, cap_items)
    sigma = lognormal_sigmas_for_ratios(tails / means, NormalDist().inv_cdf(p))
    jitter = part.jitter_sigma if part.jitter_sigma is not None else float(sigma[-1])
    return backlog_states(means, sigma, partition_backlog_table(part), jitter)


def backlog_chain_queue(lam: float, time_queue: float, chain: BacklogStates, p: float) -> PrebaQueue | None:
    """preba_backlog_queue at `lam` (1/s) and Time_queue `time_queue` (s) from its rate-independent half `chain`.

    The chain follows n = 1..N with N = 3 B + 12 variance / (2 drift) (at most MAX_STATES): the backlog moves
    by -drift = lam S_inf - B a batch with variance about lam S (1 + lam S scv), so its law decays about as
    exp(-2 drift n / variance) (the diffusion limit) and states past N hold about e^-12 of it; they are lumped
    in the last. Only n <= B returns to low n, so its transition matrix is banded (n' >= n - B), and the
    stationary law is one banded solve (_stationary_banded), linear in N.
    """

    cap = chain.cap
    drift = cap - lam * chain.limit_s
    if drift <= 0:
        return None
    load = lam * chain.limit_s
    variance = load * (1.0 + load * chain.spread)
    states = int(min(MAX_STATES, 3 * cap + 12 * variance / (2 * drift)))
    n = np.arange(1, states + 1)
    deep = n > cap
    means, sigmas, times, second = (chain.means[:states], chain.sigmas[:states], chain.times[:states],
                                    chain.second[:states])
    # arrivals during one batch: Poisson(lam S), counted up to far beyond its largest mean (the rest is lumped)
    top = lam * float(times.max()) + time_queue * lam
    counts = np.arange(min(states, int(top + 10 * math.sqrt(top) + 10)) + 1)
    log_factorial = gammaln(counts + 1.0)
    lower, mix = chain.lower[:states], chain.weight[:states]
    points = chain.laws[:min(int(lower[-1]) + 2, len(chain.laws))]  # the law points up to the one past the last n
    x = lam * chain.times[points][..., None]
    pois = np.exp(counts * np.log(x) - x - log_factorial)  # (law points, nodes, arrivals)
    law = pois.mean(axis=1)  # mixed Poisson law of the arrivals during one batch, per law point
    # the counts no law reaches (each below TAIL_MASS, a batch's top node with it below STATE_NODES TAIL_MASS)
    # add nothing: cut them, so the widest jump and with it the band of the solve is the laws' real reach
    reach = int(np.nonzero(law.max(axis=0) > TAIL_MASS)[0][-1]) + 2
    counts, log_factorial, pois, law = counts[:reach], log_factorial[:reach], pois[..., :reach], law[:, :reach]
    upper = np.minimum(lower + 1, len(points) - 1)
    # n > B: n' = n - B + arrivals
    arrivals = law[lower[deep]] * (1.0 - mix[deep, None]) + law[upper[deep]] * mix[deep, None]
    # n <= B (the first law points): a fresh start, n' = 1 + Poisson(lam D)
    shallow = np.nonzero(~deep)[0]
    s = times[shallow]  # (b, nodes)
    over = np.maximum(s - time_queue, 0.0)
    idle = np.exp(-lam * over)  # P(A > S - T)
    pois_t = np.exp(counts * math.log(lam * time_queue) - lam * time_queue - log_factorial) \
        if time_queue > 0 else (counts == 0).astype(float)
    late = np.where(s[..., None] > time_queue, pois[shallow] - idle[..., None] * pois_t, 0.0)  # j = 0..counts
    row = late[..., 1:] + idle[..., None] * pois_t[None, None, :-1]  # n' = j = 1..counts
    row = np.maximum(row, 0.0).mean(axis=1)
    pi = _stationary_banded(cap, arrivals, row, states)
    # cycle lengths and waiting areas per state
    cycle = np.empty(states)
    area = np.empty(states)
    busy = np.ones(states)
    cycle[deep] = means[deep]
    area[deep] = (n[deep] - cap) * means[deep] + lam * second[deep] / 2
    mean_d = np.where(s > time_queue, s - (1 - idle) / lam, time_queue)
    second_d = np.where(s > time_queue, s ** 2 - 2 * s / lam + 2 / lam ** 2 - idle * (2 / lam ** 2 - 2 * time_queue / lam),
                        time_queue ** 2)
    cycle[shallow] = (1 / lam + mean_d).mean(axis=1)
    area[shallow] = (mean_d + lam * second_d / 2).mean(axis=1)
    busy[shallow] = (1 - idle).mean(axis=1)
    wait = float(np.dot(pi, area) / np.dot(pi, cycle) / lam)
    batch = np.minimum(n, cap)
    batch_pmf = np.bincount(batch - 1, weights=pi, minlength=cap)
    gather = (time_queue + lam * time_queue ** 2 / 2) / (1 + lam * time_queue)
    weight = pi * batch
    weight = weight / weight.sum()
    service_mean = float(np.dot(weight, means))
    # the deep states' laws change slowly with n: one component per interval of the backlog table (moments
    # matched in log space), so the mixture stays about B + 18 components long
    group = chain.group[:states]
    log_mean = np.log(means) - sigmas ** 2 / 2
    total = np.bincount(group, weights=weight)
    used = total > 1e-12
    mu = np.bincount(group, weights=weight * log_mean)[used] / total[used]
    spread = np.bincount(group, weights=weight * (sigmas ** 2 + log_mean ** 2))[used] / total[used] - mu ** 2
    service_q = lognormal_mixture_quantile(total[used] / total[used].sum(), mu, np.sqrt(np.maximum(spread, 1e-12)), p)
    return PrebaQueue(batch_pmf=batch_pmf, wait_mean_s=wait, gather_mean_s=min(gather, wait),
                      p_wait=float(np.dot(pi, busy)), service_mean_s=service_mean, service_q_s=service_q)


def _stationary_banded(cap: int, arrivals: np.ndarray, fresh: np.ndarray, states: int) -> np.ndarray:
    """Stationary law pi of backlog_chain_queue's chain on n = 1..states (index n - 1): from n > B to
    n - B + k with probability arrivals[n - B - 1, k], from n <= B to j + 1 with probability fresh[n - 1, j],
    whatever lies past the last state lumped in it.

    pi (P - I) = 0 is one equation too many: drop the last state's (the only one the lumps enter) and fix
    pi_1 = 1 instead (normalised after). The rest, in the unknowns pi_2..pi_N, is banded: state i reaches
    j >= i - B, so coefficient (j, i) vanishes unless -(B - 1) <= j - (i - 1) <= the widest jump, and one
    banded LU (LAPACK gbsv, in reverse order) costs about N B w instead of the dense solve's N^3 / 3. The answer is unique whenever
    the chain has one stationary law with pi_1 > 0 (the difference of two solutions would be a multiple of it
    vanishing at n = 1); if the solve fails, the dense one (engine.analytic.queueing.stationary_law) answers.
    """
    # scipy is heavy to import (~0.2 s): loaded when a formula needs it
    from scipy.linalg import LinAlgError, solve_banded

    size = states - 1  # unknowns pi_2..pi_N (column c = n - 2), equations of n = 1..N-1 (row r = n - 1)
    reach = arrivals.shape[1]
    width = min(states, fresh.shape[1])
    upper = max(cap - 1, 0)
    lower = max(reach - cap, width, 1)
    band = np.zeros((lower + upper + 1, size))
    # band[upper + r - c, c] = coefficient of unknown c in equation r
    if arrivals.size:  # n > B, column c = n - 2 >= B - 1, row r = n - B - 1 + k: band row k
        band[:reach, cap - 1:] = arrivals.T
    if cap > 1 and len(fresh) > 1:  # 2 <= n <= B: row r = j, band row upper + j - (n - 2)
        n = np.arange(2, len(fresh) + 1)
        j = np.arange(width)
        band[upper + j[None, :] - (n[:, None] - 2), (n[:, None] - 2)] = fresh[1:, :width]
    band[upper + 1] -= 1.0  # - pi_n in the equation of n
    tail = max(size - lower - 1, 0)  # only the last lower + 1 columns reach past the last equation
    rows = np.arange(lower + upper + 1)[:, None] - upper + np.arange(tail, size)[None, :]
    band[:, tail:][rows >= size] = 0.0  # entries that fall in the dropped equation (or beyond: lumped)
    rhs = np.zeros(size)
    rhs[:min(width, size)] = -fresh[0, :min(width, size)]
    rhs[0] += 1.0  # the equation of n = 1 holds -pi_1
    try:  # in reverse order (J A J x' = J b): gbsv costs N kl (kl + ku), and kl = B - 1 is the narrow side
        x = solve_banded((upper, lower), band[::-1, ::-1], rhs[::-1], check_finite=False)[::-1]
    except (LinAlgError, ValueError):
        x = np.full(size, np.nan)
    pi = np.clip(np.concatenate([[1.0], x]), 0.0, None)
    if not np.all(np.isfinite(pi)):
        return _stationary_dense(cap, arrivals, fresh, states)
    return pi / pi.sum()


def _stationary_dense(cap: int, arrivals: np.ndarray, fresh: np.ndarray, states: int) -> np.ndarray:
    """_stationary_banded's law by the dense solve of the whole transition matrix (the lumps in the last state)."""

    transition = np.zeros((states, states))
    rows = np.arange(cap, states)
    if len(rows):
        target = np.minimum((rows - cap)[:, None] + np.arange(arrivals.shape[1])[None, :], states - 1)
        np.add.at(transition, (np.broadcast_to(rows[:, None], target.shape), target), arrivals)
    width = min(states, fresh.shape[1])
    transition[:len(fresh), :width] = fresh[:, :width]
    transition[:, -1] += np.maximum(0.0, 1.0 - transition.sum(axis=1))
    return stationary_law(transition)
