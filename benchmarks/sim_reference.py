"""Plain heapq event loops of the simulator's GPU side, and the simulator timed against them (issue 19).

The reference loops below are written from the batching and scheduling rules (engine.sim.batcher,
engine.sim.schedulers' docstrings), not from engine.sim.gpu: one heap of events, Python lists, no framework,
no batch log beyond each request's end time. They take the run's own inputs (engine.sim.run.prepare: ready
times after the host stages, query sizes, the GPU service's tables and per-batch draws) and compute the same
model, including its time arithmetic (a wait until t from now lands at now + (t - now), as a timer does), so
they must give the same latencies to the last digit; the benchmark checks that for every case.
Where they take the engine's code: ELSA's estimate (engine.sim.schedulers.Elsa, PARIS Algorithm 2) and the
mean service of an input length (GpuService.mean, an interpolation over profiled lengths): those are the
model's numbers, not its event handling. PREBA on a variable-length model (length buckets with merging) has
no reference loop here; its run is timed alone.

Goals (printed beside each figure): the simulator's GPU side within 2x of the reference for every batching
policy and scheduler; 1M batched requests <= 0.4 s and 1M unbatched (M/M/7) <= 1 s in-process, whole run;
peak memory of a run <= 2x its result columns.

    .venv/bin/python benchmarks/sim_reference.py [--requests 200000] [--big 1000000] [--repeat 3] [--base ../main]

The "simpy s" column runs the same GPU side as simpy processes (GpuEngine(use_simpy=True): how every run went
before issue 19); --base times the whole run of another checkout (the code before) beside this one.
"""

from __future__ import annotations

import argparse
import bisect
import heapq
import json
import math
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine.analytic import Context, build_design, capacity  # noqa: E402
from engine.scenario import load_scenario  # noqa: E402
from engine.sim import ServiceSpec  # noqa: E402
from engine.sim.gpu import GpuEngine  # noqa: E402
from engine.sim.run import prepare  # noqa: E402
from engine.sim.schedulers import Elsa, SchedulerView  # noqa: E402
from engine.store import Store  # noqa: E402

LAYOUT = ["3g.20gb", "2g.10gb", "1g.5gb", "1g.5gb"]
POLICIES = ("none", "work-conserving", "fixed", "preba")
SCHEDULERS = ("fifs", "round-robin", "jsq", "elsa")
LOAD = 0.7  # offered rate over the analytic capacity


# -- the reference loops ------------------------------------------------------------------------------------

def service_time(gpu_service):
    """time(partition, items, longest, batch number) of the run's GPU service: the table's mean for the batch's
    items times the batch's own draw (a log-normal factor of mean 1 for profiled service)."""
    while gpu_service.draws is not None and len(gpu_service.draws) < gpu_service.n_draws:
        gpu_service.more_draws()  # every draw the run may need, before the loop
    tables, draws, sigma = gpu_service.tables, gpu_service.draws, gpu_service.sigma
    synthetic, by_length = gpu_service.spec is not None, gpu_service.lengths is not None
    mean_of = gpu_service.mean

    def time_of(partition, items, longest, number):
        if by_length and longest is not None:
            mean = mean_of(partition, items, longest)
        else:
            table = tables[partition]
            mean = table[(items if items < len(table) else len(table)) - 1]
        if draws is None:
            return mean
        if synthetic:
            return mean * draws[number]
        s = sigma[partition]
        return mean * math.exp(s * draws[number] - s * s / 2)
    return time_of


def _fit(ready, cum, head, known, batch_max, cap):
    """(count, last): requests from `head` that fit in batch_max items (at least one, at most cap), and the one
    whose arrival completes the batch (>= known: not complete with the requests known so far)."""
    if cum is None:
        count = batch_max if batch_max < cap else cap
        return count, head + count - 1
    before = cum[head - 1] if head else 0
    count = bisect.bisect_right(cum, before + batch_max, head, known) - head
    if count < 1:
        return 1, head
    if count >= cap:
        return cap, head + cap - 1
    end = head + count
    return count, (end - 1 if cum[end - 1] - before == batch_max else end)


def _sorted_inputs(ready, sizes, lengths):
    order = np.argsort(ready, kind="stable")
    unit = bool(np.all(sizes == 1))
    return (order, ready[order].tolist(), None if unit else np.cumsum(sizes[order]).tolist(),
            None if lengths is None else lengths[order].tolist())


def reference_fifs(ready, sizes, lengths, batch_max, cap, time_queue, time_of):
    """First-idle-first-serve: free partitions take turns at one queue in the order they freed."""
    order, r, cum, lens = _sorted_inputs(ready, sizes, lengths)
    n = len(r)
    end = [0.0] * n
    free = [(0.0, p, p) for p in range(len(batch_max))]
    seq, released, head, number = len(batch_max), 0.0, 0, 0
    pop, push = heapq.heappop, heapq.heappush
    while head < n:
        now, _, p = pop(free)
        if now < released:
            now = released
        count, last = _fit(r, cum, head, n, batch_max[p], cap)
        due = r[head] + time_queue
        if last < n and r[last] < due:
            due = r[last]
        if due > now:
            now = now + (due - now)
        at = now if now > due else due
        stop = head + count if head + count < n else n
        taken = bisect.bisect_right(r, at, head, stop) - head
        items = taken if cum is None else cum[head + taken - 1] - (cum[head - 1] if head else 0)
        done = now + time_of(p, items, max(lens[head:head + taken]) if lens else None, number)
        end[head:head + taken] = [done] * taken
        head += taken
        released = now
        number += 1
        push(free, (done, seq, p))
        seq += 1
    out = np.empty(n)
    out[order] = end
    return out


def reference_round_robin(ready, sizes, lengths, batch_max, cap, time_queue, time_of):
    """Request i (in ready order) to partition i mod n; each partition batches its own queue."""
    order, r_all, cum_all, lens_all = _sorted_inputs(ready, sizes, lengths)
    n_part, n = len(batch_max), len(r_all)
    mine = [list(range(p, n, n_part)) for p in range(n_part)]  # positions in ready order
    r = [[r_all[i] for i in ids] for ids in mine]
    sz = None if cum_all is None else np.diff(np.asarray([0] + cum_all))
    cum = [None if sz is None else np.cumsum(sz[ids]).tolist() for ids in mine]
    lens = [None if lens_all is None else [lens_all[i] for i in ids] for ids in mine]
    heads = [0] * n_part
    end = [0.0] * n
    events = [(0.0, p, p, None) for p in range(n_part)]  # (time, order, partition, batch due or None)
    seq, number = n_part, 0
    pop, push = heapq.heappop, heapq.heappush
    while events:
        now, _, p, pending = pop(events)
        rp, cp, head = r[p], cum[p], heads[p]
        known = len(rp)
        if head >= known:
            continue
        if pending is None:
            count, last = _fit(rp, cp, head, known, batch_max[p], cap)
            due = rp[head] + time_queue
            if last < known and rp[last] < due:
                due = rp[last]
            if due > now:
                push(events, (now + (due - now), seq, p, (due, count)))
                seq += 1
                continue
        else:
            due, count = pending
        at = now if now > due else due
        stop = head + count if head + count < known else known
        taken = bisect.bisect_right(rp, at, head, stop) - head
        items = taken if cp is None else cp[head + taken - 1] - (cp[head - 1] if head else 0)
        done = now + time_of(p, items, max(lens[p][head:head + taken]) if lens[p] else None, number)
        for i in mine[p][head:head + taken]:
            end[i] = done
        heads[p] = head + taken
        number += 1
        push(events, (done, seq, p, None))
        seq += 1
    out = np.empty(n)
    out[order] = end
    return out


def reference_on_arrival(ready, sizes, lengths, batch_max, cap, time_queue, time_of, choose, on_take, on_done):
    """Schedulers that decide on arrival (JSQ, ELSA): choose(request, now) -> partition; an arrival to a waiting
    partition makes it decide again; a batch not yet due is a timer (stale once the partition decided again)."""
    order = np.argsort(ready, kind="stable").tolist()
    r_of, size_of = ready.tolist(), sizes.tolist()
    len_of = None if lengths is None else lengths.tolist()
    unit = bool(np.all(sizes == 1))
    n_part, n = len(batch_max), len(r_of)
    ids = [[] for _ in range(n_part)]
    r = [[] for _ in range(n_part)]
    cum = [None if unit else [] for _ in range(n_part)]
    heads, busy, timer = [0] * n_part, [False] * n_part, [-1] * n_part
    end = [0.0] * n
    events: list = []  # (time, order, kind, partition, timer token or requests in the batch)
    seq, number = 0, 0
    pop, push = heapq.heappop, heapq.heappush

    def decide(p, now):
        nonlocal seq, number
        rp, cp, head = r[p], cum[p], heads[p]
        known = len(rp)
        if head >= known:
            return
        count, last = _fit(rp, cp, head, known, batch_max[p], cap)
        due = rp[head] + time_queue
        if last < known and rp[last] < due:
            due = rp[last]
        if due > now:
            timer[p] = seq
            push(events, (now + (due - now), seq, TIMER, p, seq))
            seq += 1
            return
        stop = head + count if head + count < known else known
        taken = bisect.bisect_right(rp, now, head, stop) - head
        items = taken if cp is None else cp[head + taken - 1] - (cp[head - 1] if head else 0)
        batch = ids[p][head:head + taken]
        longest = max(len_of[i] for i in batch) if len_of is not None else None
        done = now + time_of(p, items, longest, number)
        for i in batch:
            end[i] = done
        heads[p] = head + taken
        number += 1
        busy[p], timer[p] = True, -1
        on_take(p, items, longest, now)
        push(events, (done, seq, FREE, p, len(batch)))
        seq += 1

    ARRIVAL, FREE, TIMER = 0, 1, 2
    position = 0
    if n:
        push(events, (r_of[order[0]], -1, ARRIVAL, -1, 0))
    while events:
        now, _, kind, p, token = pop(events)
        if kind == ARRIVAL:  # every request due by now
            while position < n:
                i = order[position]
                if r_of[i] > now:
                    push(events, (now + (r_of[i] - now), seq, ARRIVAL, -1, 0))
                    seq += 1
                    break
                q = choose(i, now)
                ids[q].append(i)
                r[q].append(r_of[i])
                if cum[q] is not None:
                    cum[q].append((cum[q][-1] if cum[q] else 0) + size_of[i])
                position += 1
                if not busy[q]:
                    decide(q, now)
            else:  # the last arrival: every waiting partition looks at its queue once more
                for q in range(n_part):
                    if not busy[q]:
                        decide(q, now)
        elif kind == FREE:
            busy[p] = False
            on_done(p, token)
            decide(p, now)
        elif timer[p] == token:
            timer[p] = -1
            decide(p, now)
    return np.asarray(end)


def reference_jsq(ready, sizes, lengths, batch_max, cap, time_queue, time_of):
    outstanding = [0] * len(batch_max)

    def choose(request, now):
        p = outstanding.index(min(outstanding))
        outstanding[p] += 1
        return p

    def on_done(p, n_requests):
        outstanding[p] -= n_requests
    return reference_on_arrival(ready, sizes, lengths, batch_max, cap, time_queue, time_of, choose,
                                lambda *args: None, on_done)


def reference_elsa(ready, sizes, lengths, batch_max, cap, time_queue, time_of, gpu_service, spec, arrival):
    elsa = Elsa(SchedulerView(n_partitions=len(batch_max), service=gpu_service, batch_max=batch_max,
                              request_cap=cap, sla_s=spec.sla_s, alpha=spec.alpha, beta=spec.beta,
                              sizes=sizes.tolist(), lengths=None if lengths is None else lengths.tolist(),
                              arrivals=arrival.tolist()))

    def on_take(p, items, longest, now):
        estimate = gpu_service.mean(p, items, longest)
        elsa.on_take(p, items, estimate)
        elsa.on_start(p, now, estimate)
    return reference_on_arrival(ready, sizes, lengths, batch_max, cap, time_queue, time_of, elsa.assign,
                                on_take, lambda p, n_requests: None)


def reference(run):
    """Per-request end times (s) of the GPU side of a prepared run (engine.sim.run.prepare)."""
    spec, requests, plan = run.spec, run.requests, run.plan
    if any(len(caps) > 1 for caps in plan.batch_max):
        # outside this benchmark's scope, by choice: the bucketed run is timed against the simpy processes instead
        raise ValueError("the reference loops take one batch size per partition; a run with length buckets (PREBA "
                         "on a variable-length model) is compared with the simpy processes (see main())")
    args = (requests.ready, requests.sizes, requests.lengths, [caps[0] for caps in plan.batch_max],
            plan.request_cap, plan.time_queue_s, service_time(spec.service))
    if spec.scheduler == "fifs":
        return reference_fifs(*args)
    if spec.scheduler == "round-robin":
        return reference_round_robin(*args)
    if spec.scheduler == "jsq":
        return reference_jsq(*args)
    return reference_elsa(*args, spec.service, spec, requests.arrival)


# -- the benchmark --------------------------------------------------------------------------------------------

def ours(run):
    """The simulator's GPU side on the same inputs: per-request end times."""
    log = GpuEngine(run.spec, run.requests).run()
    return log.end[log.request_batch]


def processes(run):
    """The same GPU side as simpy processes (what every run used before issue 19)."""
    log = GpuEngine(run.spec, run.requests, use_simpy=True).run()
    return log.end[log.request_batch]


def side_by_side(repeat, *fns_and_args):
    """Best time of each (fn, arg) over `repeat` rounds, the functions taking turns within a round (under a
    shared machine's load, each sees the same conditions); with each one's last output."""
    best = [math.inf] * len(fns_and_args)
    outs = [None] * len(fns_and_args)
    for _ in range(repeat):
        for index, (fn, arg) in enumerate(fns_and_args):
            start = time.perf_counter()
            outs[index] = fn(arg)
            best[index] = min(best[index], time.perf_counter() - start)
    return best, outs


def scenario(policy, scheduler, model="resnet50"):
    return {"model": model, "gpu": {"sku": "A100-SXM4-40GB", "layout": LAYOUT},
            "batching": {"policy": policy}, "scheduler": {"policy": scheduler}}


MM7 = {"model": "resnet50", "gpu": {"sku": "A100-SXM4-40GB", "layout": ["1g.5gb"] * 7},
       "batching": {"policy": "none"}, "preprocessing": {"device": "none"}}
MM7_RUN = {"rate": 0.7 * 7 / 1e-3, "service": {"kind": "exponential", "mean_ms": 1.0, "host": "none"}}

# the whole-run figures, run in a fresh interpreter from a checkout's root (this one, or --base for the one before)
WHOLE_RUN = """
import json, sys, time, tracemalloc
sys.path.insert(0, '.')
from engine.analytic import Context, build_design, capacity
from engine.scenario import load_scenario
from engine.sim import simulate_design
from engine.store import Store
n, batched, mm7, mm7_run, load = json.loads(sys.argv[1])
ctx = Context.from_store(Store())
design = build_design(load_scenario(batched, ctx.book), ctx)
rate = load * capacity(design)[0]
design7 = build_design(load_scenario(mm7, ctx.book), ctx)
simulate_design(design, 2000, seed=2, rate=rate, ctx=ctx)
simulate_design(design7, 2000, seed=2, ctx=ctx, **mm7_run)
out = {}
start, cpu = time.perf_counter(), time.process_time(); simulate_design(design, n, seed=2, rate=rate, ctx=ctx)
out['batched_s'], out['batched_cpu_s'] = time.perf_counter() - start, time.process_time() - cpu
start, cpu = time.perf_counter(), time.process_time(); simulate_design(design7, n, seed=2, ctx=ctx, **mm7_run)
out['unbatched_s'], out['unbatched_cpu_s'] = time.perf_counter() - start, time.process_time() - cpu
# again in the same process: the first run of a fresh interpreter also pays for first touching its memory
start = time.perf_counter(); simulate_design(design, n, seed=2, rate=rate, ctx=ctx)
out['batched_again_s'] = time.perf_counter() - start
start = time.perf_counter(); simulate_design(design7, n, seed=2, ctx=ctx, **mm7_run)
out['unbatched_again_s'] = time.perf_counter() - start
for name, run in (('batched', lambda: simulate_design(design, n, seed=2, rate=rate, ctx=ctx)),
                  ('unbatched', lambda: simulate_design(design7, n, seed=2, ctx=ctx, **mm7_run))):
    tracemalloc.start()
    res = run()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    out[name + '_memory'] = peak / sum(column.nbytes for column in res.records.columns.values())
    out[name + '_p99_ms'] = res.latency_ms.p99
    del res
print(json.dumps(out))
"""


def whole_run(root: Path, n: int) -> dict:
    args = json.dumps([n, scenario("fixed", "fifs"), MM7, MM7_RUN, LOAD])
    done = subprocess.run([sys.executable, "-c", WHOLE_RUN, args], cwd=root, capture_output=True, text=True,
                          check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=200_000, help="requests per policy x scheduler case")
    ap.add_argument("--big", type=int, default=1_000_000, help="requests for the whole-run goals")
    ap.add_argument("--repeat", type=int, default=3, help="best of this many rounds per timing")
    ap.add_argument("--base", type=Path, help="a checkout from before (e.g. main) for the whole-run figures")
    ap.add_argument("--rounds", type=int, default=2, help="whole-run rounds (this tree and --base take turns)")
    args = ap.parse_args()
    ctx = Context.from_store(Store())
    n = args.requests
    print(f"GPU side only, {n:,} requests per case, {LOAD:.0%} of capacity, best of {args.repeat} rounds taking "
          f"turns; ResNet-50 on {' + '.join(LAYOUT)} (host stages included in the inputs)")
    print(f"{'policy':16} {'scheduler':12} {'ours s':>8} {'simpy s':>8} {'ref s':>8} {'ours/ref':>8} "
          f"{'simpy/ref':>9}  goal   identical")
    worst = 0.0
    cases = [(policy, scheduler, None) for policy in POLICIES for scheduler in SCHEDULERS]
    cases.append(("M/M/7 none", "fifs", "mm7"))
    for policy, scheduler, special in cases:
        if special:
            design = build_design(load_scenario(MM7, ctx.book), ctx)
            run = prepare(design, n, seed=1, ctx=ctx, rate=MM7_RUN["rate"], service=ServiceSpec(**MM7_RUN["service"]))
        else:
            design = build_design(load_scenario(scenario(policy, scheduler), ctx.book), ctx)
            run = prepare(design, n, seed=1, ctx=ctx, rate=LOAD * capacity(design)[0])
        (t_ours, t_simpy, t_ref), (end_ours, end_simpy, end_ref) = side_by_side(
            args.repeat, (ours, run), (processes, run), (reference, run))
        same = bool(np.array_equal(end_ours, end_ref) and np.array_equal(end_simpy, end_ref))
        worst = max(worst, t_ours / t_ref)
        print(f"{policy:16} {scheduler:12} {t_ours:>8.3f} {t_simpy:>8.3f} {t_ref:>8.3f} {t_ours / t_ref:>8.2f} "
              f"{t_simpy / t_ref:>9.2f}  <= 2   {'yes' if same else 'NO'}")
    jasper = build_design(load_scenario({**scenario("preba", "fifs", "jasper"),
                                         "gpu": {"sku": "A100-SXM4-80GB"}, "preprocessing": {"device": "none"},
                                         "workload": {"input_len": {"kind": "uniform", "low": 2, "high": 16.7}}},
                                        ctx.book), ctx)
    run = prepare(jasper, n, seed=1, ctx=ctx, rate=LOAD * capacity(jasper)[0])
    (t_ours, t_simpy), (end_ours, end_simpy) = side_by_side(args.repeat, (ours, run), (processes, run))
    print(f"{'preba buckets':16} {'fifs':12} {t_ours:>8.3f} {t_simpy:>8.3f} {'-':>8} {'-':>8} {'-':>9}         "
          f"{'yes' if np.array_equal(end_ours, end_simpy) else 'NO'} (Jasper, length buckets: no reference loop; "
          "identical to the processes)")
    print(f"worst ours/ref: {worst:.2f} (goal <= 2)")

    big = args.big
    print(f"\nwhole run in-process (simulate_design: workload, host stages, GPU side, statistics), {big:,} requests,"
          f" a fresh interpreter per tree, best of {args.rounds} rounds taking turns")
    trees = [("this tree", ROOT)] + ([("base", args.base.resolve())] if args.base else [])
    results: dict[str, list[dict]] = {name: [] for name, _ in trees}
    for _ in range(args.rounds):
        for name, root in trees:
            results[name].append(whole_run(root, big))
    print(f"{'':10} {'batched s':>10} {'unbatched s':>12} {'(CPU s)':>14} {'(run again)':>14} {'peak/columns':>16} "
          f"{'p99 ms':>18}")
    for name, runs in results.items():
        memory = f"{runs[0]['batched_memory']:.2f}x, {runs[0]['unbatched_memory']:.2f}x"
        p99 = f"{runs[0]['batched_p99_ms']:.3f}, {runs[0]['unbatched_p99_ms']:.3f}"
        cpu = f"{min(r['batched_cpu_s'] for r in runs):.2f}, {min(r['unbatched_cpu_s'] for r in runs):.2f}"
        again = f"{min(r['batched_again_s'] for r in runs):.2f}, {min(r['unbatched_again_s'] for r in runs):.2f}"
        print(f"{name:10} {min(r['batched_s'] for r in runs):>10.2f} {min(r['unbatched_s'] for r in runs):>12.2f} "
              f"{cpu:>14} {again:>14} {memory:>16} {p99:>18}")
    print(f"{'goal':10} {'<= 0.4':>10} {'<= 1':>12} {'':>14} {'':>14} {'<= 2x, <= 2x':>16}   (batched: fixed, FIFS, "
          "host stages; unbatched: M/M/7; peak by tracemalloc; CPU s: this process's CPU time, which other load "
          "inflates less than wall time; run again: wall time of a second run in the same process, whose memory "
          "is no longer touched for the first time)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
