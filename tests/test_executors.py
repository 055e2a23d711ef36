"""The executor seam without Ray: the local executor's order and progress, choosing an executor, the CLI flags, the
hosting setting, and that the app and the local executor never import Ray."""

import json
import subprocess
import sys

import pytest

from engine.executors import EXECUTOR_NAMES, ExecutorError, LocalExecutor, make_executor
from engine.hosting import SettingsError, hosting_settings
from tests.conftest import ROOT


def _square_plus(shared, chunk):
    return [x * x + shared for x in chunk]


@pytest.mark.parametrize("workers", [1, 2])
def test_local_map_keeps_chunk_order_and_reports_every_chunk(workers):
    done = []
    chunks = [list(range(k, k + 3)) for k in range(0, 30, 3)]
    out = LocalExecutor(workers).map(_square_plus, 1, chunks, progress=lambda d, t: done.append((d, t)))
    assert out == [[x * x + 1 for x in c] for c in chunks]
    assert done == [(k, 10) for k in range(1, 11)]


def test_one_worker_or_one_chunk_runs_in_this_process():
    assert LocalExecutor(1).parallel_for(10) == 1
    assert LocalExecutor(4).parallel_for(1) == 1
    assert LocalExecutor(4).parallel_for(3) == 3  # never more processes than chunks


def test_a_process_that_joined_ray_never_forks(monkeypatch):
    """Forking a process that holds Ray's threads can deadlock the child (a CI run once hung here for an hour)."""
    import types

    fake = types.ModuleType("ray")
    fake.is_initialized = lambda: True
    monkeypatch.setitem(sys.modules, "ray", fake)
    assert LocalExecutor(4).parallel_for(10) == 1
    chunks = [[1, 2], [3]]
    assert LocalExecutor(4).map(_square_plus, 0, chunks) == [[1, 4], [9]]
    fake.is_initialized = lambda: False
    assert LocalExecutor(4).parallel_for(10) == 4


def test_unknown_executor_is_named():
    with pytest.raises(ExecutorError, match=r"'spark' is not one of local, ray"):
        make_executor("spark")
    assert EXECUTOR_NAMES == ("local", "ray")


def test_ray_address_is_only_for_the_ray_executor():
    from engine.cli.main import build_parser
    from engine.executors import executor_from_args

    args = build_parser().parse_args(["search", "space.json", "--ray-address", "127.0.0.1:1"])
    with pytest.raises(ExecutorError, match="only with --executor ray"):
        executor_from_args(args)
    for command in (["search", "s.json"], ["evaluate", "s.json"], ["simulate", "s.json"]):
        assert build_parser().parse_args(command + ["--executor", "ray"]).executor == "ray"


def test_ray_address_setting():
    assert hosting_settings(env={}).ray_address is None
    assert hosting_settings(env={"KNEEPOINT_RAY_ADDRESS": " 10.0.0.5:6379 "}).ray_address == "10.0.0.5:6379"
    assert hosting_settings(env={"KNEEPOINT_RAY_ADDRESS": "auto"}).ray_address == "auto"
    with pytest.raises(SettingsError, match="KNEEPOINT_RAY_ADDRESS: 'head-without-port'"):
        hosting_settings(env={"KNEEPOINT_RAY_ADDRESS": "head-without-port"})


def test_evaluate_sweep_rate_matches_the_analytic_curve(store, monkeypatch):
    from engine.analytic import Context, build_design, space, sweep
    from engine.scenario import load_scenario

    monkeypatch.setattr(space, "RATES_PER_CHUNK", 4)  # three chunks of a short curve, so the pool is used
    ctx = Context.from_store(store)
    raw = {"model": "resnet50", "gpu": {"sku": "A100-SXM4-40GB"}, "batching": {"policy": "preba"}}
    design = build_design(load_scenario(json.dumps(raw), ctx.book), ctx)
    assert LocalExecutor(2).parallel_for(3) == 2
    assert space.sweep_rates(design, 100, 3000, 12, LocalExecutor(2)) == sweep(design, 100, 3000, 12)


NO_RAY = """
import importlib, re, sys
from pathlib import Path
names = set()
for f in [*Path("pages").glob("*.py"), *Path("ui").glob("*.py"), Path("app.py")]:
    names |= set(re.findall(r"^\\s*(?:from|import) (engine[\\w.]*)", f.read_text(), re.M))
for name in sorted(names):
    importlib.import_module(name)
from engine.executors import LocalExecutor, make_executor, ray_installed
from engine.search import search
ray_installed()
r = search(SPACE, workers=2, confirm_top=1, sim_requests=2000, executor=make_executor("local", workers=2))
assert r.size == 4 and r.workers == 1, r.workers  # a space this small runs in one piece
assert LocalExecutor(2).map(divmod, 7, [1, 2, 3]) == [(7, 0), (3, 1), (2, 1)]
print(len(names), "ray" in sys.modules)
"""


def test_the_app_and_the_local_executor_never_import_ray():
    space = {"name": "tiny", "base": {"model": "resnet50", "gpu": {"sku": "A100-SXM4-40GB"}},
             "preprocessing": ["none", "cpu"], "rpc": ["grpc", "splitrpc-pnic"]}
    p = subprocess.run([sys.executable, "-c", f"SPACE = {space!r}\n" + NO_RAY], cwd=ROOT, capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    modules, imported = p.stdout.split()
    assert int(modules) > 10 and imported == "False"


def test_without_ray_the_ray_executor_says_how_to_get_it(monkeypatch):
    import engine.executors as executors

    monkeypatch.setattr(executors, "ray_installed", lambda: False)
    with pytest.raises(ExecutorError, match="needs Ray: pip install -r requirements-ray.txt"):
        executors.make_executor("ray")
