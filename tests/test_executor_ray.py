"""The Ray executor on a real cluster on this machine: a head (no CPUs) and one worker node of one CPU, started once
for the session on loopback (engine.executors.ray_node) and stopped at the end, also on failure.

The same answers as the local executor (a search with its simulator check, a simulated rate sweep: equal to the
bit), a chunk whose worker is killed is retried and the answer is still whole, a chunk that cannot finish is named,
and an unreachable cluster is one line from the CLI."""

import json
import subprocess
import sys
import time

import pytest

pytest.importorskip("ray")

from engine.executors import ExecutorError, LocalExecutor, make_executor  # noqa: E402
from engine.search import expand, parse_space, search  # noqa: E402
from engine.search.run import _chunk  # noqa: E402
from tests import ray_faults  # noqa: E402
from tests.conftest import ROOT  # noqa: E402

SPACE = {"name": "ray", "base": {"model": "resnet50", "gpu": {"sku": "A100-SXM4-40GB"},
                                 "workload": {"arrival": {"rate_rps": 400}}},
         "layouts": [["1g.5gb"] * 7, ["2g.10gb"] * 3 + ["1g.5gb"], ["3g.20gb"] * 2, ["7g.40gb"]],
         "preprocessing": ["none", "cpu", "dpu"], "rpc": ["grpc", "splitrpc-pnic"],
         "batching": ["preba", {"policy": "fixed", "max_batch": 8, "max_queue_delay_ms": 2}]}  # 48 designs
TIMINGS = {"wall_s", "analytic_s", "designs_per_s", "workers"}


@pytest.fixture(scope="session")
def cluster(tmp_path_factory):
    """One cluster for the whole session; ray.init joins it (the executor's own connect)."""
    import ray

    from engine.executors.ray_node import LocalRayCluster

    c = LocalRayCluster(workers=1, log_dir=tmp_path_factory.mktemp("ray"))
    try:
        c.start()
        executor = make_executor("ray", address=c.address)
        executor.connect()
        c.wait_for_cpus(1)
        yield c, executor
    finally:
        if ray.is_initialized():
            ray.shutdown()
        c.stop()


@pytest.fixture(scope="module")
def ctx(store):
    from engine.analytic import Context

    return Context.from_store(store)


@pytest.mark.ray
def test_search_on_ray_equals_local(cluster, ctx):
    _, executor = cluster
    on_ray = search(SPACE, ctx.fresh(), executor=executor, confirm_top=2, sim_requests=5_000, seed=4)
    local = search(SPACE, ctx.fresh(), executor=LocalExecutor(2), confirm_top=2, sim_requests=5_000, seed=4)
    assert on_ray.size == 48 and len(on_ray.designs) == 48
    assert sum(c.confirmation is not None for c in on_ray.candidates) == 2
    assert on_ray.model_dump(exclude=TIMINGS) == local.model_dump(exclude=TIMINGS)


@pytest.mark.ray
def test_simulated_sweep_on_ray_equals_local_bit_for_bit(cluster, ctx):
    from engine.analytic import build_design
    from engine.scenario import load_scenario
    from engine.sim.sweep import sweep

    _, executor = cluster
    design = build_design(load_scenario(json.dumps(SPACE["base"]), ctx.book), ctx)
    fractions = []
    kw = dict(n_requests=4_000, seed=7, ctx=ctx)
    on_ray = sweep(design, [200, 400, 600], executor=executor, progress=fractions.append, **kw)
    local = sweep(design, [200, 400, 600], workers=2, **kw)
    assert [r.model_dump(exclude={"wall_s"}) for r in on_ray] == [r.model_dump(exclude={"wall_s"}) for r in local]
    assert fractions[-1] == 1.0 and len(fractions) == 3


@pytest.mark.ray
def test_a_killed_worker_chunk_is_retried_and_the_answer_is_whole(cluster, ctx, tmp_path):
    _, executor = cluster
    grid = expand(parse_space(SPACE), ctx.book)
    bounds = [tuple(range(s, min(s + 24, grid.size))) for s in range(0, grid.size, 24)]
    marker = tmp_path / "killed-once"
    on_ray = executor.map(ray_faults.dies_once, (grid, ctx, str(marker)), bounds)
    assert marker.exists(), "a worker was meant to kill itself"
    assert on_ray == LocalExecutor(1).map(_chunk, (grid, ctx), bounds)


@pytest.mark.ray
def test_a_lost_node_chunks_are_rerun_elsewhere(cluster, tmp_path):
    """A second worker node joins, takes chunks, and is killed outright (its process group, SIGKILL): its chunks
    are rerun on the node left and the answer is whole."""
    import os
    import signal
    import threading

    import ray

    c, executor = cluster
    before = {n["NodeID"] for n in ray.nodes() if n["Alive"]}
    node = c.add_node()
    c.wait_for_cpus(2)
    doomed = ({n["NodeID"] for n in ray.nodes() if n["Alive"]} - before).pop()
    out: dict = {}
    run = threading.Thread(target=lambda: out.update(result=executor.map(ray_faults.square_where, str(tmp_path),
                                                                         list(range(60)))))
    run.start()
    deadline = time.monotonic() + 120
    while not any(f.name.endswith(doomed) for f in tmp_path.iterdir()):
        assert time.monotonic() < deadline and run.is_alive(), "the second node never took a chunk"
        time.sleep(0.05)
    os.killpg(node.pid, signal.SIGKILL)
    node.wait(30)
    c.nodes.remove(node)
    run.join(300)
    assert out["result"] == [k * k for k in range(60)]


@pytest.mark.ray
def test_a_chunk_that_never_finishes_is_named_not_dropped(cluster):
    _, executor = cluster
    stubborn = make_executor("ray", address=executor.address)
    stubborn.task_retries, stubborn.chunk_retries = 0, 1  # two deaths, not twelve: the test stays short
    with pytest.raises(ExecutorError, match=r"1 of 4 chunk\(s\) did not finish \(chunks 2\)"):
        stubborn.map(ray_faults.always_dies, None, [0, 1, 2, 3])


def _closed_port() -> int:
    from engine.executors.ray_node import free_port

    return free_port()  # bound and released: nothing listens there


def test_an_unreachable_cluster_is_one_line_from_the_cli(tmp_path):
    scenario = tmp_path / "s.json"
    scenario.write_text(json.dumps(SPACE["base"]))
    address = f"127.0.0.1:{_closed_port()}"
    for args in (["simulate", str(scenario), "--sweep-rate", "100:200:2", "--requests", "2000"],
                 ["evaluate", str(scenario), "--sweep-rate", "100:200:2"]):
        p = subprocess.run([sys.executable, "-m", "engine", *args, "--executor", "ray", "--ray-address", address],
                           cwd=ROOT, capture_output=True, text=True, timeout=120)
        lines = [line for line in p.stderr.splitlines() if line.strip() and "nanobind" not in line
                 and not line.startswith(" - leaked")]
        assert p.returncode == 2, p.stderr
        assert lines == [f"error: cannot reach the Ray cluster at {address}: Connection refused"], p.stderr


@pytest.mark.ray
def test_the_search_page_runs_on_the_cluster(cluster, monkeypatch):
    from tests.pagetest import metrics, open_page

    c, _ = cluster
    monkeypatch.setenv("KNEEPOINT_RAY_ADDRESS", c.address)
    at = open_page("search.py", timeout=300)
    at.radio(key="srch_executor").set_value("ray").run()
    at.number_input(key="srch_confirm").set_value(1).run()
    at.button(key="srch_run").click().run()
    assert not at.exception, at.exception
    # the current design on the three deployable preprocessing devices ('none' is a reference line, not a candidate)
    assert metrics(at)["Designs evaluated"] == "3"
    assert len(at.get("plotly_chart")) == 2


@pytest.mark.ray
def test_a_cluster_that_goes_away_mid_run_is_one_line_from_the_cli(tmp_path):
    """Its own one-node cluster (the head has the CPU, the CLI's driver joins it): stopped once a chunk runs, the
    CLI names the chunks that did not finish, in one line, exit status 2."""
    from engine.executors.ray_node import LocalRayCluster

    scenario = tmp_path / "s.json"
    scenario.write_text(json.dumps(SPACE["base"]))
    with LocalRayCluster(workers=0, head_cpus=1) as c:
        cli = subprocess.Popen([sys.executable, "-m", "engine", "simulate", str(scenario), "--sweep-rate",
                                "100:400:4", "--requests", "3000000", "--executor", "ray", "--ray-address", c.address],
                               cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 120
            # a worker's .out log names each task it starts: the state that says a chunk is running
            while not any("_run_chunk" in f.read_text() for f in c.log_dir.glob("ray/session_*/logs/worker-*.out")):
                assert time.monotonic() < deadline and cli.poll() is None, cli.communicate()
                time.sleep(0.1)
            c.stop()
            _, err = cli.communicate(timeout=120)
        finally:
            if cli.poll() is None:
                cli.kill()
    lines = [line for line in err.splitlines() if line.strip() and "nanobind" not in line
             and not line.startswith(" - leaked")]
    assert cli.returncode == 2, err
    assert len(lines) == 1 and lines[0].startswith(f"error: the Ray cluster at {c.address}: 4 of 4 chunk(s) did not "
                                                   "finish (chunks 0, 1, 2, 3): the cluster"), err
