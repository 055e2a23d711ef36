"""PREBA's length buckets (PREBA section 4.3): what a batch costs when it is cut from a backlog by length bucket.

The simulator's PREBA batcher (engine.sim.batcher) files requests into length buckets of `width` (2.5 s of
audio, 64 tokens); when the instance is free and the oldest request has waited Time_queue, the batch takes the
oldest request's bucket, oldest first, then tops up from the neighbouring buckets k - 1, k + 1, k - 2, k + 2, ...
(nearest first, shorter before longer), up to Batch_max items. A batch cut from n waiting requests therefore
holds min(n, B) of them: with n <= B all of them (a random-member batch, priced by the order statistic of its
longest member, engine.analytic.lengths), with n >> B only requests of one bucket, whose longest is at most the
bucket's upper edge. The expected cost grows cheaper with the backlog: that is where PREBA's capacity comes from
(the queue that follows from it: engine.analytic.preba_chain). Which bucket leads is not the length law's share:
a rare bucket is seldom reached by top-ups and holds few requests when its oldest leads, so it leads more batches
than its share of requests (the per-bucket flow balance, leader_shares), and the leader's bucket holds more than
independent draws give, since every request of it that came after the leader still waits (backlog_batch_costs).
Buckets beyond the last profiled length cost alike but batch apart, as in the simulator (_bucket_edges).

Units: lengths in the model's input unit (s of audio or tokens), costs in s.
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np

from engine.analytic.special import gammaln
from engine.analytic.lengths import GAUSS_NODES, GAUSS_WEIGHTS, LengthDistribution

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
    from scipy.optimize import nnls  # scipy is heavy to import (~0.2 s): loaded when a formula needs it
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
