"""CLI start-up stays cheap: building the parser (all that `--help` does) imports none of the heavy libraries.

A structural check in a fresh interpreter, not a timing: benchmarks/cli_startup.py measures the seconds.
"""

import json
import os
import subprocess
import sys

from tests.conftest import ROOT

#: each costs tens to hundreds of ms to import; a subcommand needing one imports it when it runs
HEAVY = ("pandas", "pyarrow", "duckdb", "scipy", "streamlit", "plotly", "numpy", "pydantic", "simpy")


def _loaded_after(code: str) -> list[str]:
    probe = f"import json, sys; {code}; print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}})))"
    r = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_building_the_parser_imports_no_heavy_library():
    for build in ("build_parser()", "parser_for(['--help'])", "parser_for(['evaluate', 'x.json'])"):
        loaded = _loaded_after(f"import engine.cli.main; engine.cli.main.{build}")
        assert "argparse" in loaded  # the probe sees what the parser needs
        assert [m for m in HEAVY if m in loaded] == [], build


def test_a_command_imports_only_its_own_module():
    probe = "import engine.cli.main as m; m.parser_for(['evaluate', 'x.json']).parse_args(['evaluate', 'x.json'])"
    code = f"import json, sys; {probe}; print(json.dumps(sorted(m for m in sys.modules if m.startswith('engine.cli.'))))"
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    loaded = set(json.loads(r.stdout))
    assert "engine.cli.evaluate" in loaded
    assert not loaded & {"engine.cli.search", "engine.cli.simulate", "engine.cli.report", "engine.cli.tenancy"}


def test_the_listing_of_commands_matches_the_modules_that_define_them():
    from engine.cli.main import COMMANDS, build_parser, parser_for

    full = build_parser()._subparsers._group_actions[0]
    assert [(a.dest, a.help) for a in full._choices_actions] == [(name, text) for name, (_, text) in COMMANDS.items()]
    listing = parser_for(["--help"])._subparsers._group_actions[0]
    assert list(listing.choices) == list(full.choices) == list(COMMANDS)
    for name in COMMANDS:  # each command's own parser is the one its module defines
        alone = build_parser(name)._subparsers._group_actions[0]
        assert name in alone.choices and set(alone.choices) < set(COMMANDS)
        assert alone.choices[name].format_help() == full.choices[name].format_help()


def test_the_parsers_copies_of_engine_values_match_their_sources():
    from engine.cli import vocab as v
    from engine.executors import EXECUTOR_NAMES
    from engine.io.exporters import FORMATS
    from engine.partition.pack import MAX_GPUS
    from engine.partition.plan import PartitionPolicy
    from engine.seed.records import PRECISIONS, TABLES
    from engine.vocab import WorkloadKind
    from engine.sim.workload import MAX_REQUESTS
    from engine.store import USER_TABLES
    from engine.tenancy.gpu_share import DEFAULT_STEP_PCT, KNEE_GAIN_THRESHOLD, MAX_OVERSUBSCRIBED_INSTANCES
    from engine.tenancy.reconfig import RESTART_LOAD_S, STANDBY_SWITCH_S
    from engine.seed.papers import PAPERS

    assert (v.EXPORT_FORMATS, v.PRECISIONS, v.TABLE_NAMES, v.USER_TABLES) == (FORMATS, PRECISIONS, tuple(TABLES),
                                                                              USER_TABLES)
    assert (v.EXECUTOR_NAMES, v.MAX_REQUESTS, v.WORKLOAD_KINDS) == (EXECUTOR_NAMES, MAX_REQUESTS,
                                                                    tuple(k.value for k in WorkloadKind))
    assert (v.PARTITION_MAX_GPUS, v.PARTITION_POLICIES) == (MAX_GPUS, tuple(p.value for p in PartitionPolicy))
    assert (v.KNEE_GAIN_THRESHOLD, v.DEFAULT_STEP_PCT, v.MAX_OVERSUBSCRIBED_INSTANCES, v.RESTART_LOAD_S,
            v.STANDBY_SWITCH_S) == (KNEE_GAIN_THRESHOLD, DEFAULT_STEP_PCT, MAX_OVERSUBSCRIBED_INSTANCES,
                                    RESTART_LOAD_S, STANDBY_SWITCH_S)
    assert v.REPRODUCE_PAPERS == tuple(PAPERS)


def test_evaluate_on_the_default_scenario_imports_no_scipy(tmp_path):
    """`evaluate` on the default scenario (ResNet-50, fixed-size inputs, a pooled timeout batcher) imports no scipy
    at all (~0.2 s): its special functions (ndtr, ndtri, gammainc, gammaln) come from engine.analytic.special, and
    scipy.optimize, scipy.linalg and scipy.special's ufuncs over large arrays (PREBA's length buckets and backlog
    chain, the bracketing root finders, the vectorised rate scan) are imported only where a formula calls them.
    Nor does it import pandas or pyarrow (~0.3 s): the store hands the engine its tables as rows (engine.rows).
    The run itself must succeed and print the evaluation. (benchmarks/cli_startup.py shows what the rest costs.)"""
    from engine.presets import DEFAULT_SCENARIO
    from engine.store import Store

    Store().close()  # builds the database if this session has none yet: a build imports pandas, a start-up not
    scenario = tmp_path / "default.json"
    scenario.write_text(json.dumps(DEFAULT_SCENARIO))
    probe = ("import contextlib, io, json, runpy, sys\n"
             f"sys.argv = ['engine', 'evaluate', {str(scenario)!r}, '--json']\n"
             "out = io.StringIO()\n"
             "with contextlib.redirect_stdout(out):\n"
             "    try:\n"
             "        runpy.run_module('engine', run_name='__main__')\n"
             "    except SystemExit as e:\n"
             "        code = e.code\n"
             "print(json.dumps({'code': code, 'evaluation': json.loads(out.getvalue()),\n"
             "                  'modules': sorted(sys.modules)}))")
    r = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    seen = json.loads(r.stdout)
    assert seen["code"] == 0 and seen["evaluation"]["capacity_rps"] > 0
    loaded = set(seen["modules"])
    assert not {m for m in loaded if m.split(".")[0] == "scipy"}
    assert "engine.analytic.special" in loaded  # the probe sees the special functions the formulas use
    assert not {m for m in loaded if m.split(".")[0] in ("pandas", "pyarrow")}


def test_a_warm_evaluate_imports_no_duckdb(tmp_path):
    """`evaluate` with the store's rows snapshot current (engine.store.snapshot) reads it and never imports DuckDB
    (~0.07 s, and ~0.1 s more to open the store and query it). The first run, with no snapshot yet, builds the
    database, reads the store (DuckDB) and writes the snapshot; both print the same evaluation. The warm run does not
    load numpy.ma either (~7-10 ms; engine.order_stats stands in for np.median and np.unique).

    And `python -m engine` (engine/__main__.py) leaves the warm run's objects frozen for the interpreter's exit, whose
    full collection would scan them all (~0.04 s), but not the cold run's: DuckDB's bindings report objects left
    uncollected at exit as leaks."""
    from engine.presets import DEFAULT_SCENARIO

    scenario = tmp_path / "default.json"
    scenario.write_text(json.dumps(DEFAULT_SCENARIO))
    env = dict(os.environ, KNEEPOINT_DB=str(tmp_path / "own.duckdb"))  # a store of its own: the first run is cold
    probe = ("import gc, json, runpy, sys\n"
             f"sys.argv = ['engine', 'evaluate', {str(scenario)!r}, '--json']\n"
             "try:\n"
             "    runpy.run_module('engine', run_name='__main__')\n"
             "finally:\n"
             "    print(json.dumps({'duckdb': 'duckdb' in sys.modules, 'numpy.ma': 'numpy.ma' in sys.modules,\n"
             "                      'frozen': gc.get_freeze_count() > 0}), file=sys.stderr)\n")
    runs = [subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True,
                           timeout=300) for _ in range(2)]
    assert [r.returncode for r in runs] == [0, 0], runs[-1].stderr
    cold, warm = (json.loads(r.stderr.splitlines()[-1]) for r in runs)
    assert cold["duckdb"] and not cold["frozen"]  # cold: the store, and its objects collected at exit
    assert warm == {"duckdb": False, "numpy.ma": False, "frozen": True}  # warm: the snapshot
    assert runs[0].stdout == runs[1].stdout and json.loads(runs[1].stdout)["capacity_rps"] > 0
