"""Packing a multiset of MIG instances onto GPUs as valid, placed per-GPU layouts.

PARIS (PARIS/ELSA seed, section IV-B, Algorithm 1) says how many instances of each partition
size to deploy but leaves their placement to the reader; DESIGN.md section 5 asks that every
result be packed into valid per-GPU MIG layouts. A GPU's layout must follow the catalogue's
placement rules (engine.catalog: allowed start slots, no overlapping memory slots, compute
slices within the GPU, per-profile instance limits).

Method: every sub-multiset that fits one GPU (a "pattern") is enumerated once, with a placement,
by walking the memory slots left to right. A depth-first search then gives GPUs patterns:
the next GPU always takes the largest remaining instance (GPUs are interchangeable, so this
loses nothing), only patterns to which no remaining instance could be added are tried (moving an
instance onto a GPU where it fits never hurts), states shown infeasible are remembered, and
compute, memory-slot and instance-limit bounds cut hopeless branches. With `gpus=None` the
number of GPUs grows from the lower bound, so the answer uses as few GPUs as possible.
When no packing exists, a largest-first first-fit placement names the instance that could not
be placed and what every GPU holds at that point.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Iterable, Mapping, Optional

from engine.catalog import Gpu, MigLayout, MigProfile, PlacedInstance, UnknownNameError
from engine.errors import KneepointError

#: the search gives up (with a PackingError) after this many pattern trials, so that a
#: pathological request fails in well under a second instead of hanging a page
MAX_TRIALS = 200_000
#: the most GPUs one packing spans: a scenario holds at most 64 GPUs (engine.scenario, gpu.count), and the
#: search recurses once per GPU, so this also keeps it far from Python's recursion limit
MAX_GPUS = 64

_COUNT = re.compile(r"^(?P<name>.+?)x(?P<count>\d+)$")


class PackingError(KneepointError):
    """A multiset of MIG instances that cannot be packed; the message says which instance and why."""


# --------------------------------------------------------------------------- input


def parse_items(items: Iterable[str]) -> dict[str, int]:
    """A multiset from words like '3g.40gb' or '3g.40gbx4' (four of them); repeats add up."""
    out: Counter = Counter()
    for word in items:
        word = word.strip()
        m = _COUNT.match(word)
        name, n = (m["name"], int(m["count"])) if m else (word, 1)
        if not name:
            raise PackingError(f"{word!r} names no MIG profile; write e.g. 3g.40gb or 3g.40gbx4")
        out[name] += n
    return dict(out)


def _checked(gpu: Gpu, multiset: Mapping[str, int]) -> dict[str, int]:
    if not gpu.mig_capable:
        raise PackingError(f"{gpu.sku} does not support MIG; use GPU% shares instead")
    clean: dict[str, int] = {}
    for name, n in multiset.items():
        try:
            gpu.profile(name)
        except UnknownNameError as e:
            raise PackingError(str(e)) from None
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise PackingError(f"{name}: the instance count must be a whole number >= 0, got {n!r}")
        if n:
            clean[name] = clean.get(name, 0) + n
    if not clean:
        raise PackingError("nothing to pack: the multiset holds no instances")
    return clean


# --------------------------------------------------------------------------- patterns


def _order(gpu: Gpu, names: Iterable[str]) -> list[MigProfile]:
    """Largest first: compute slices, then memory slots, then name (a stable, meaningful order)."""
    return sorted((gpu.profile(n) for n in names), key=lambda p: (-p.compute_slices, -p.size, p.name))


def patterns(gpu: Gpu, profiles: list[MigProfile]) -> dict[tuple[int, ...], MigLayout]:
    """Every non-empty multiset of `profiles` that fits one GPU (count vector in the order of
    `profiles`), each with one valid placement."""
    index = {p.name: i for i, p in enumerate(profiles)}
    by_start: dict[int, list[MigProfile]] = {}
    for p in profiles:
        for s in p.starts:
            by_start.setdefault(s, []).append(p)
    out: dict[tuple[int, ...], MigLayout] = {}
    counts = [0] * len(profiles)
    chosen: list[PlacedInstance] = []

    def walk(slot: int, compute: int) -> None:
        if slot >= gpu.memory_slots:
            key = tuple(counts)
            if chosen and key not in out:
                out[key] = MigLayout(sku=gpu.sku, instances=tuple(chosen), compute_slices_used=compute,
                                     memory_slots_used=sum(i.size for i in chosen))
            return
        walk(slot + 1, compute)  # leave this slot empty
        for p in by_start.get(slot, []):
            i = index[p.name]
            if (slot + p.size > gpu.memory_slots or compute + p.compute_slices > gpu.compute_slices
                    or counts[i] >= p.max_instances):
                continue
            counts[i] += 1
            chosen.append(PlacedInstance(profile=p.name, start=slot, size=p.size))
            walk(slot + p.size, compute + p.compute_slices)
            chosen.pop()
            counts[i] -= 1

    walk(0, 0)
    return out


# --------------------------------------------------------------------------- search


class _Search:
    """Exact packing of one multiset (count vector over `profiles`) into k GPUs."""

    def __init__(self, gpu: Gpu, profiles: list[MigProfile]):
        self.gpu, self.profiles = gpu, profiles
        self.pats = patterns(gpu, profiles)
        n = len(profiles)
        # candidates for a GPU that must take profile i: biggest first, so a good packing comes early
        ranked = sorted(self.pats, key=lambda v: (-self.pats[v].compute_slices_used,
                                                  -self.pats[v].memory_slots_used, v))
        self.with_first = [[v for v in ranked if v[i] > 0 and all(v[j] == 0 for j in range(i))]
                           for i in range(n)]
        self.failed: dict[tuple[int, ...], int] = {}  # state -> most GPUs shown too few
        self.trials = 0

    def lower_bound(self, state: tuple[int, ...]) -> int:
        g = self.gpu
        compute = sum(c * p.compute_slices for c, p in zip(state, self.profiles))
        slots = sum(c * p.size for c, p in zip(state, self.profiles))
        per_profile = max((math.ceil(c / p.max_instances) for c, p in zip(state, self.profiles)), default=0)
        return max(math.ceil(compute / g.compute_slices), math.ceil(slots / g.memory_slots), per_profile)

    def _maximal(self, pat: tuple[int, ...], state: tuple[int, ...]) -> bool:
        for i, (a, b) in enumerate(zip(pat, state)):
            if a < b and (pat[:i] + (a + 1,) + pat[i + 1:]) in self.pats:
                return False
        return True

    def solve(self, state: tuple[int, ...], k: int) -> Optional[list[tuple[int, ...]]]:
        first = next((i for i, c in enumerate(state) if c), None)
        if first is None:
            return []
        if k <= 0 or self.lower_bound(state) > k or self.failed.get(state, 0) >= k:
            return None
        for pat in self.with_first[first]:
            if any(a > b for a, b in zip(pat, state)) or not self._maximal(pat, state):
                continue
            self.trials += 1
            if self.trials > MAX_TRIALS:
                raise PackingError(f"the packing search gave up after {MAX_TRIALS:,} trials; "
                                   "split the request over fewer instances or GPUs")
            rest = self.solve(tuple(b - a for a, b in zip(pat, state)), k - 1)
            if rest is not None:
                return [pat] + rest
        self.failed[state] = max(self.failed.get(state, 0), k)
        return None


# --------------------------------------------------------------------------- explanation


def _holds(boards: list[list[PlacedInstance]]) -> str:
    """'GPU0: 4g.40gb@0 3g.40gb@4; GPU1-5: 7g.80gb@0' (runs of identical GPUs are merged)."""
    texts = [" ".join(i.label() for i in sorted(b, key=lambda i: i.start)) or "empty" for b in boards]
    runs: list[list] = []
    for g, t in enumerate(texts):
        if runs and runs[-1][2] == t:
            runs[-1][1] = g
        else:
            runs.append([g, g, t])
    return "; ".join(f"GPU{a}: {t}" if a == b else f"GPU{a}-{b}: {t}" for a, b, t in runs)


def _first_fit_failure(gpu: Gpu, profiles: list[MigProfile], counts: list[int], n_gpus: int) -> Optional[str]:
    """Place instances largest first on the first GPU and lowest start where they fit; the reason
    the first one that fits nowhere fails (None if all fit, which the exact search rules out)."""
    boards: list[list[PlacedInstance]] = [[] for _ in range(n_gpus)]
    for p, c in zip(profiles, counts):
        for j in range(1, c + 1):
            why = set()
            for b in boards:
                used = {s for i in b for s in i.slots}
                if sum(1 for i in b if i.profile == p.name) >= p.max_instances:
                    why.add("limit")
                    continue
                if sum(gpu.profile(i.profile).compute_slices for i in b) + p.compute_slices > gpu.compute_slices:
                    why.add("compute")
                    continue
                start = next((s for s in p.starts if not used.intersection(range(s, s + p.size))), None)
                if start is None:
                    why.add("slots")
                    continue
                b.append(PlacedInstance(profile=p.name, start=start, size=p.size))
                break
            else:
                reasons = []
                if "slots" in why:
                    reasons.append(f"no free {p.size}-slot placement (starts {', '.join(map(str, p.starts))})")
                if "compute" in why:
                    reasons.append(f"no {p.compute_slices} free compute slices")
                if "limit" in why:
                    reasons.append(f"the limit of {p.max_instances} per GPU reached")
                return (f"{p.name} #{j}: {' or '.join(reasons)} left on any of {n_gpus} {gpu.sku}; "
                        f"GPUs hold {_holds(boards)}")
    return None


def _budget_failure(gpu: Gpu, profiles: list[MigProfile], counts: list[int], n_gpus: int) -> Optional[str]:
    """A plain budget that the multiset exceeds (compute slices, memory slots, instance limits)."""
    what = _what(profiles, counts)
    compute = sum(c * p.compute_slices for c, p in zip(counts, profiles))
    if compute > n_gpus * gpu.compute_slices:
        return (f"GPC budget exceeded: {what} need {compute} compute slices (GPCs), but {n_gpus} "
                f"{gpu.sku} have {n_gpus * gpu.compute_slices}")
    slots = sum(c * p.size for c, p in zip(counts, profiles))
    if slots > n_gpus * gpu.memory_slots:
        return (f"memory slots exceeded: {what} need {slots} memory slots, but {n_gpus} {gpu.sku} "
                f"have {n_gpus * gpu.memory_slots}")
    for p, c in zip(profiles, counts):
        if c > n_gpus * p.max_instances:
            return (f"{c} x {p.name}: {gpu.sku} allows at most {p.max_instances} per GPU, "
                    f"so {n_gpus} GPUs hold at most {n_gpus * p.max_instances}")
    return None


# --------------------------------------------------------------------------- API


def empty_layout(gpu: Gpu) -> MigLayout:
    """A GPU left without instances (packing onto more GPUs than needed)."""
    return MigLayout(sku=gpu.sku, instances=(), compute_slices_used=0, memory_slots_used=0)


def pack(gpu: Gpu, multiset: dict[str, int], gpus: int | None = None) -> list[MigLayout]:
    """Valid placed MIG layouts, one per GPU, that together hold exactly `multiset`.

    multiset: {profile: count}, e.g. {"1g.10gb": 10, "3g.40gb": 4}. gpus: the number of GPUs
    (layouts past the last used GPU are empty), or None for as few GPUs as possible.
    Raises PackingError naming the instance that cannot be placed, or the budget exceeded.
    """
    clean = _checked(gpu, multiset)
    if gpus is not None and (isinstance(gpus, bool) or not isinstance(gpus, int) or not 1 <= gpus <= MAX_GPUS):
        raise PackingError(f"gpus: the number of GPUs must be a whole number >= 1 and at most {MAX_GPUS} (the "
                           f"limit of one packing), got {gpus!r}")
    profiles = _order(gpu, clean)
    state = tuple(clean[p.name] for p in profiles)
    search = _Search(gpu, profiles)
    if gpus is not None:
        reason = _budget_failure(gpu, profiles, list(state), gpus)
        if reason:
            raise PackingError(reason)
        found = search.solve(state, gpus)
        if found is None:
            raise PackingError(_first_fit_failure(gpu, profiles, list(state), gpus)
                               or f"no valid packing onto {gpus} {gpu.sku}")
        return [search.pats[v] for v in found] + [empty_layout(gpu)] * (gpus - len(found))
    _within_limit(gpu, profiles, state, search.lower_bound(state))
    for k in range(search.lower_bound(state), MAX_GPUS + 1):  # one instance per GPU always fits, if allowed
        found = search.solve(state, k)
        if found is not None:
            return [search.pats[v] for v in found]
    raise PackingError(f"no packing of {_what(profiles, state)} onto {MAX_GPUS} {gpu.sku} or fewer (the limit "
                       "of one packing)")


def _what(profiles: list[MigProfile], counts: Iterable[int]) -> str:
    return " + ".join(f"{c:,} x {p.name}" for p, c in zip(profiles, counts) if c)


def _within_limit(gpu: Gpu, profiles: list[MigProfile], state: tuple[int, ...], lower_bound: int) -> None:
    """PackingError, before any search, when the instances need more GPUs than one packing may span."""
    if lower_bound > MAX_GPUS:
        raise PackingError(f"{_what(profiles, state)} need at least {lower_bound:,} {gpu.sku}; one packing spans "
                           f"at most {MAX_GPUS} GPUs")


def multiset_of(layouts: Iterable[MigLayout]) -> dict[str, int]:
    """The instances that a list of layouts holds, as {profile: count}."""
    return dict(Counter(i.profile for lay in layouts for i in lay.instances))
