"""PREBA on variable-length inputs (PREBA section 4.3): what a batch costs when it is cut from a backlog by length
bucket, and the one-instance queue whose batches grow cheaper as the backlog grows.

The simulator's PREBA batcher (engine.sim.batcher) files requests into length buckets of `width` (2.5 s of
audio, 64 tokens); when the instance is free and the oldest request has waited Time_queue, the batch takes the
oldest request's bucket, oldest first, then tops up from the neighbouring buckets k - 1, k + 1, k - 2, k + 2, ...
(nearest first, shorter before longer), up to Batch_max items. A batch cut from n waiting requests therefore
holds min(n, B) of them: with n <= B all of them (a random-member batch, priced by the order statistic of its
longest member, engine.analytic.lengths), with n >> B only requests of one bucket, whose longest is at most the
bucket's upper edge. The expected cost grows cheaper with the backlog: that is where PREBA's capacity comes from.
Which bucket leads is not the length law's share: a rare bucket is seldom reached by top-ups and holds few
requests when its oldest leads, so it leads more batches than its share of requests (the per-bucket flow balance,
leader_shares), and the leader's bucket holds more than independent draws give, since every request of it that
came after the leader still waits (backlog_batch_costs). Buckets beyond the last profiled length cost alike but
batch apart, as in the simulator (_bucket_edges).

Units: lengths in the model's input unit (s of audio or tokens), costs in s, rates in 1/s.
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import NamedTuple, Optional

import numpy as np
from scipy.linalg import LinAlgError, solve_banded
from scipy.optimize import nnls
from scipy.special import gammaln, ndtri

from engine.analytic.lengths import GAUSS_NODES, GAUSS_WEIGHTS, LengthDistribution
from engine.analytic.queueing import stationary_law
from engine.analytic.service_laws import batch_tables, lognormal_mixture_quantile
from engine.profiles.tails import lognormal_sigmas_for_ratios

AUDIO_BUCKET_S = 2.5  # PREBA section 4.3: audio requests bucketed by 2.5 s of length
TOKEN_BUCKET = 64.0  # text models: 64 tokens a bucket (an assumption: PREBA buckets audio only)
# backlogs n = B + offset at which the cost is worked out (linear in between; beyond the last, the pure-bucket
# limit): the cost changes fast for n just above B and slowly later
BACKLOG_OFFSETS = (0, 1, 2, 3, 4, 6, 8, 11, 16, 22, 32, 45, 64, 90, 128, 181, 256)
# buckets past the last profiled length go on while the inputs above them are more than this share of all (the
# simulator's buckets reach the longest input of its run, about the 1 - 1 / N quantile of N requests), at most
# MAX_BUCKETS buckets (60 s of audio, 1536 tokens), the rest one bucket. Against 1e-5 and 128 buckets, Jasper's
# backlog table moves by 0.02 % (log-sd 0.5), 0.13 % (1.0), 0.4 % (1.5); the walk costs about the square of the
# bucket count
TAIL_BUCKET_MASS = 1e-3
MAX_BUCKETS = 24


def bucket_width(input_unit: str) -> float:
    """Length-bucket width of PREBA's batcher for a model whose inputs are measured in `input_unit`."""
    return TOKEN_BUCKET if input_unit == "tokens" else AUDIO_BUCKET_S


def _bucket_edges(knots: np.ndarray, width: float, dist: Optional[LengthDistribution] = None) -> np.ndarray:
    """Edges a_0 = 0 < a_1 < ... of the buckets [j width, (j + 1) width), then one bucket open above.

    The simulator keeps every bucket of `width` up to the longest input of its run, also beyond the last profiled
    length, where a batch costs the same whatever its longest input (engine.sim.service clamps there): such
    buckets cost alike but batch apart (a rare long bucket leads its own batches, backlog_batch_costs). So the
    buckets go on past the last profiled length while the length law puts more than TAIL_BUCKET_MASS above
    them; the rest is one bucket open above. Without `dist`, the buckets stop at the last profiled length."""
    count = int(float(knots[-1]) // width) + 1
    if dist is not None:
        while count < MAX_BUCKETS and 1.0 - float(dist.cdf(np.array([count * width]))[0]) > TAIL_BUCKET_MASS:
            count += 1
    return np.append(np.arange(count + 1) * width, math.inf)


def bucket_max_costs(knots: np.ndarray, row: np.ndarray, dist: LengthDistribution, width: float,
                     cap: int) -> tuple[np.ndarray, np.ndarray]:
    """(p, E): p[j] the probability of bucket j, E[j, m - 1] = E[g(max of m lengths drawn in bucket j)], m = 1..cap.

    g is the cost of a batch of `cap` items padded to a length (the simulator's per-length row, linear between
    the profiled lengths `knots`, flat outside them). Within bucket j, with F_j(x) = (F(x) - F(a_j)) / p_j the
    conditional CDF, the maximum of m draws has CDF F_j(x)^m (David and Nagaraja, Order Statistics, eq. 2.1.1),
    so E[g(M)] = g(a_j) + integral_{a_j}^{a_(j+1)} g'(x) (1 - F_j(x)^m) dx (the tail-integral form,
    engine.analytic.lengths), by Gauss-Legendre on each piece between knots and kinks of F.
    """
    edges = _bucket_edges(knots, width, dist)
    cdf = dist.cdf(np.minimum(edges, 1e300))
    cdf[-1] = 1.0  # the last bucket is open above
    p = np.diff(cdf)
    keep = int(np.nonzero(p > 0)[0][-1]) + 1  # no bucket above the longest possible input
    p, edges = p[:keep], edges[:keep + 1]
    members = np.arange(1, cap + 1, dtype=float)
    costs = np.zeros((len(p), cap))
    for j in range(len(p)):
        lo, hi = edges[j], min(edges[j + 1], max(float(knots[-1]), edges[j]))
        costs[j] = float(np.interp(lo, knots, row))
        if p[j] <= 0:
            continue
        cuts = sorted({lo, hi, *[x for x in list(knots) + dist.kinks() if lo < x < hi]})
        for a, b in zip(cuts[:-1], cuts[1:]):
            slope = (float(np.interp(b, knots, row)) - float(np.interp(a, knots, row))) / (b - a)
            if slope == 0.0:
                continue
            x = 0.5 * (b - a) * GAUSS_NODES + 0.5 * (b + a)
            inside = np.clip((dist.cdf(x) - cdf[j]) / p[j], 0.0, 1.0)
            costs[j] += slope * 0.5 * (b - a) * ((1.0 - inside[None, :] ** members[:, None]) @ GAUSS_WEIGHTS)
    return p, costs


def backlog_batch_costs(p: np.ndarray, costs: np.ndarray, backlogs: np.ndarray,
                        overtaken: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(first, second moment) of the cost of the batch of B = costs.shape[1] items PREBA cuts from n >= B waiting requests, per n.

    The batch's leader is the oldest waiting request, in bucket k. Bucket k holds the leader and every request of
    k that arrived after it (a bucket is served oldest first, so none of them has left): with a the arrivals
    since the leader came, 1 + Binomial(a - 1, p_k) of them. a = n + `overtaken`: the n waiting plus the
    requests that came after the leader and have already left (overtaken it). The walk with overtaken = 0 is
    the independent-draws batch (the n waiting as independent draws of the length law); PREBA's order makes
    overtaking the rule: the leader was not taken by the batch before, which took B requests of other buckets
    led by an older one, so at first order all of that batch but its leader came after it: overtaken = B - 1
    (backlog_cost_ratios; the simulator's Jasper and BERT-large runs at 85 % load count 0.5-1.0 B, more for
    leaders in rare buckets). The rest of the n waiting fall in the buckets as a multinomial. Visiting the
    buckets in the batcher's order k, k - 1, k + 1, k - 2, k + 2, ..., with c items taken so far (c < B) the
    n - c requests not yet visited are spread over the unvisited buckets, so the next bucket holds
    N ~ Binomial(n - c, p_j / (1 - mass visited)) of them (the multinomial's conditional law) and min(N, B - c)
    are taken. The batch's longest input lies in the highest bucket it takes from, at most the maximum of the m
    taken there (E[j, m], bucket_max_costs): a forward pass over the states c = 1..B carries the probability of
    each state, the expected cost of the highest bucket taken so far, replaced whenever a higher bucket
    contributes (and its square, for the spread between buckets; the spread of the maximum within a bucket is
    left out) and the mean taken from each bucket. Which bucket leads follows from those means by the
    per-bucket flow balance (leader_shares), not from the length law alone: rare buckets lead more than their
    share. With n = B and overtaken = 0 it is the random-member batch; as n grows, a batch of one bucket.
    """
    p = np.asarray(p, dtype=float)
    count, cap = costs.shape
    n = np.asarray(backlogs, dtype=int)[None, :, None]  # (1, nn, 1)
    log_factorial = gammaln(np.arange(int(n.max()) + cap + 1) + 1.0)
    states = np.arange(cap + 1)  # c = items taken; c = cap is full (absorbing)
    buckets = np.arange(count)
    # after the first bucket: c = min(1 + Binomial(n - 1 + overtaken, p_k), B)
    first = _binomial(states[None, None, :-1] - 1, n - 1 + overtaken, p[:, None, None],
                      log_factorial)  # (K, nn, B): c = 1..B-1 (c=0: 0)
    alpha = np.zeros((count, len(backlogs), cap + 1))
    alpha[:, :, 1:cap] = first[:, :, 1:cap]
    alpha[:, :, cap] = np.maximum(0.0, 1.0 - alpha[:, :, :cap].sum(axis=2))
    take_cost = np.concatenate([np.zeros((count, 1)), costs], axis=1)  # (K, B + 1): E[j, m] at index m
    value = alpha * take_cost[:, None, :]
    square = alpha * take_cost[:, None, :] ** 2
    taken = np.zeros((count, count, len(backlogs)))  # taken[k, j, n]: mean items from bucket j when k leads
    taken[buckets, buckets] = alpha @ states
    visited = p.copy()
    below = states[:cap]  # c = 0..B-1
    trials = n - below[None, None, :]  # (1, nn, B)
    extra = states[None, :cap + 1] - below[:, None]  # (B, B + 1): items taken = c' - c
    binomial_terms = _binomial_terms(extra[None], trials[0][..., None], log_factorial)  # (nn, B, B + 1)
    for distance in range(1, count):
        open_mass = alpha[:, :, :cap].sum(axis=(1, 2))  # per leader: batches not yet full
        if open_mass.sum() < 1e-12:  # every batch full: no later bucket contributes
            break
        for side in (-1, 1):
            j = buckets + side * distance
            valid = (j >= 0) & (j < count)
            pj = np.where(valid, p[np.clip(j, 0, count - 1)], 0.0)
            left = np.maximum(1.0 - visited, 0.0)
            share = np.where(left > 1e-15, np.minimum(pj / np.maximum(left, 1e-300), 1.0), 0.0)
            visited = visited + pj
            # only leaders with a bucket on this side that can give and a batch not yet full take anything
            rows = np.nonzero((share > 0) & (open_mass > 1e-12))[0]
            if not len(rows):
                continue
            pmf = _binomial_with(binomial_terms, share[rows])  # (rows, nn, B, B + 1)
            pmf[..., cap] = np.maximum(0.0, 1.0 - pmf[..., :cap].sum(axis=-1))
            old_alpha, old_value, old_square = alpha[rows], value[rows], square[rows]
            new_alpha = np.einsum("knc,kncd->knd", old_alpha[:, :, :cap], pmf)
            new_alpha[:, :, cap] += old_alpha[:, :, cap]
            if side < 0:  # a shorter bucket: the highest so far stays the highest
                new_value = np.einsum("knc,kncd->knd", old_value[:, :, :cap], pmf)
                new_square = np.einsum("knc,kncd->knd", old_square[:, :, :cap], pmf)
            else:  # a longer bucket replaces it whenever it contributes
                stay = pmf[..., below, below]  # nothing taken: (rows, nn, B)
                new_value, new_square = np.zeros_like(new_alpha), np.zeros_like(new_alpha)
                new_value[:, :, :cap] = old_value[:, :, :cap] * stay
                new_square[:, :, :cap] = old_square[:, :, :cap] * stay
                gained = old_alpha[:, :, :cap, None] * pmf  # (rows, nn, B, B + 1)
                gained[..., below, below] = 0.0
                cost_of = take_cost[j[rows]][:, extra.clip(0)]  # (rows, B, B + 1): E[j, c' - c]
                new_value += np.einsum("kncd,kcd->knd", gained, cost_of)
                new_square += np.einsum("kncd,kcd->knd", gained, cost_of ** 2)
            new_value[:, :, cap] += old_value[:, :, cap]
            new_square[:, :, cap] += old_square[:, :, cap]
            taken[rows, j[rows]] += (new_alpha - old_alpha) @ states
            alpha[rows], value[rows], square[rows] = new_alpha, new_value, new_square
            open_mass = alpha[:, :, :cap].sum(axis=(1, 2))
    lead = leader_shares(p, taken)
    return (lead * value.sum(axis=2)).sum(axis=0), (lead * square.sum(axis=2)).sum(axis=0)


def leader_shares(p: np.ndarray, taken: np.ndarray) -> np.ndarray:
    """(K, nn) share of the batches each bucket leads at each backlog, from the per-bucket flow balance.

    Requests of bucket j arrive at lam p_j and leave in the batches, as their leader's bucket or as top-ups:
    with q_k the share of batches bucket k leads and taken[k, j] the mean items a k-led batch takes from j, the
    balance lam p_j = (batch rate) sum_k q_k taken[k, j] fixes q (no free parameter). A bucket that rarely
    gets topped up and holds few requests when it leads (a rare length) must lead more batches than its share of
    requests: its requests wait until they are the oldest. Where the balance asks a bucket for a negative share
    (its top-ups alone drain more than its arrivals), the nearest non-negative shares are taken (NNLS).
    At n = B (every request taken) and n -> inf (batches of one bucket) it gives q = p, the independent draws.
    """
    count, _, nn = taken.shape
    lead = np.empty((count, nn))
    for i in range(nn):
        matrix = taken[:, :, i].T  # (bucket j, leader k)
        try:
            q = np.linalg.solve(matrix, p)
        except np.linalg.LinAlgError:
            q = np.full(count, -1.0)
        if np.any(q < 0) or not np.all(np.isfinite(q)):
            q = nnls(matrix, p)[0]
        lead[:, i] = q / q.sum() if q.sum() > 0 else p
    return lead


def _binomial_terms(k: np.ndarray, trials: np.ndarray, log_factorial: np.ndarray) -> tuple:
    """The parts of P(Binomial(trials, prob) = k) that do not depend on prob (_binomial_with takes them): the
    walk of backlog_batch_costs asks for the same (k, trials) grid at every bucket, with another prob."""
    k, trials = np.broadcast_arrays(k, trials)
    ok = (k >= 0) & (k <= trials)
    kk, tt = np.where(ok, k, 0), np.where(ok, trials, 0)
    return ok, kk, tt - kk, log_factorial[tt] - log_factorial[kk] - log_factorial[tt - kk]


def _binomial_with(terms: tuple, prob: np.ndarray) -> np.ndarray:
    """_binomial on the grid of _binomial_terms for each prob in the 1-d `prob` (a leading axis)."""
    ok, kk, rest, log_choose = terms
    prob = np.asarray(prob, dtype=float).reshape((-1,) + (1,) * ok.ndim)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_p, log_q = np.log(prob), np.log1p(-prob)  # -inf at 0 and 1: 0 x -inf is taken as 0 below
        log = log_choose + np.where(kk > 0, kk * log_p, 0.0) + np.where(rest > 0, rest * log_q, 0.0)
    return np.where(ok, np.exp(log), 0.0)


def _binomial(k: np.ndarray, trials: np.ndarray, prob: np.ndarray, log_factorial: np.ndarray) -> np.ndarray:
    """P(Binomial(trials, prob) = k), 0 outside 0..trials; k and trials integers (arrays broadcast),
    log_factorial[i] = log i! for every trials value."""
    k, trials = np.broadcast_arrays(k, trials)
    ok = (k >= 0) & (k <= trials)
    kk, tt = np.where(ok, k, 0), np.where(ok, trials, 0)
    prob = np.asarray(prob, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_p, log_q = np.log(prob), np.log1p(-prob)  # -inf at 0 and 1: 0 x -inf is taken as 0 below
        log = log_factorial[tt] - log_factorial[kk] - log_factorial[tt - kk]
        log = log + np.where(kk > 0, kk * log_p, 0.0) + np.where(tt > kk, (tt - kk) * log_q, 0.0)
    return np.where(ok, np.exp(log), 0.0)


def backlog_cost_ratios(knots: np.ndarray, row: np.ndarray, dist: LengthDistribution, width: float,
                        cap: int) -> np.ndarray:
    """(3, G) table over backlogs n >= B (first row; the last is the limit, inf): the expected cost of the B-item
    batch PREBA cuts from n waiting requests over the random-member batch's (n = B: every waiting request, whatever
    their buckets), and the squared coefficient of variation of that cost between buckets (backlog_batch_costs,
    with B - 1 requests overtaking the leader for n > B). The limit is the pure-bucket batch: each bucket j
    supplies a share p_j of the batches, each of B of its own inputs, so the mean is sum_j p_j E[j, B]."""
    p, costs = bucket_max_costs(knots, row, dist, width, cap)
    backlogs = cap + np.array(BACKLOG_OFFSETS)
    random_first, random_second = backlog_batch_costs(p, costs, backlogs[:1])
    deep_first, deep_second = backlog_batch_costs(p, costs, backlogs[1:], overtaken=cap - 1)
    first = np.concatenate([random_first, deep_first, [float(np.dot(p, costs[:, -1]))]])
    second = np.concatenate([random_second, deep_second, [float(np.dot(p, costs[:, -1] ** 2))]])
    scv = np.maximum(second / first ** 2 - 1.0, 0.0)
    return np.array([np.append(backlogs, math.inf), first / first[0], scv])


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
    points = np.unique(points[points <= MAX_STATES])
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
