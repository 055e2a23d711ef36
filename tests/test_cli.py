"""`python -m engine`: the catalogue and profile commands, and their error paths."""

import json
import subprocess
import sys

from tests.conftest import ROOT


def run(*args):
    return subprocess.run([sys.executable, "-m", "engine", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


def test_help():
    r = run("--help")
    assert r.returncode == 0 and "layouts" in r.stdout and "profiles" in r.stdout


def test_layouts_json():
    r = run("layouts", "A100-SXM4-40GB", "--profiles", "1g.5gb,2g.10gb,3g.20gb,4g.20gb,7g.40gb", "--json")
    assert r.returncode == 0, r.stderr
    layouts = json.loads(r.stdout)
    assert ["4g.20gb@0", "3g.20gb@4"] in layouts and len(layouts) == 19


def test_layouts_text():
    r = run("layouts", "A30-24GB")
    assert r.returncode == 0 and "4g.24gb@0" in r.stdout and "maximal layouts of A30-24GB" in r.stderr


def test_validate_ok_and_rejected():
    ok = run("layouts", "A100-SXM4-40GB", "--validate", "3g.20gb", "4g.20gb")
    assert ok.returncode == 0 and ok.stdout.strip() == "4g.20gb@0 3g.20gb@4"
    bad = run("layouts", "A100-SXM4-40GB", "--validate", "4g.20gb@0", "3g.20gb@0")
    assert bad.returncode == 2
    assert bad.stderr.strip() == "error: 3g.20gb needs slots 0-3, already used by 4g.20gb@0"


def test_profiles_list():
    r = run("profiles", "list", "--model", "resnet50", "--json")
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    assert rows and {row["model"] for row in rows} == {"resnet50"}


def test_bad_arguments_are_one_line_errors():
    for args in (["layouts", "A200"], ["profiles", "list", "--gpu", "nope"], ["layouts"], ["frobnicate"],
                 ["layouts", "V100-16GB"]):
        r = run(*args)
        assert r.returncode == 2, args
        assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) <= 2, r.stderr


def test_profiles_predict_json_derived():
    r = run("profiles", "predict", "--model", "resnet50", "--gpu", "A100-SXM4-80GB", "--partition", "1g.10gb",
            "--batch", "4", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["provenance"] == "derived" and out["reference"].startswith("A100-SXM4-80GB full")
    assert out["mean_ms"] > 0 and out["p99_ms"] >= out["p50_ms"] and out["fit_rms_rel_error"] is not None
    assert out["throughput_items_per_s"] > 0 and 0 < out["utilization"] <= 1


def test_profiles_predict_refuses_extrapolation():
    r = run("profiles", "predict", "--model", "resnet50", "--gpu", "T4-16GB", "--batch", "100000")
    assert r.returncode == 2 and "outside" in r.stderr and "Traceback" not in r.stderr


def test_profiles_knee_rules():
    for rule in ("utilization", "curve"):
        r = run("profiles", "knee", "--model", "resnet50", "--gpu", "A100-SXM4-80GB", "--partition", "1g.10gb",
                "--rule", rule, "--json")
        assert r.returncode == 0, r.stderr
        out = json.loads(r.stdout)
        assert out["rule"] == rule and out["batch_knee"] >= 1 and out["time_knee_ms"] > 0
