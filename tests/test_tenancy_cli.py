"""`python -m engine tenancy ...` through engine.cli.main.main."""

import json

import pytest

from engine.cli.main import main
from engine.profiles import ProfileBook
from engine.tenancy import knee_gpu_pct, latency_vs_gpu_pct, reconfiguration


def _figure(store, item: str) -> float:
    df = store.table("rpc_figures")
    return float(df.loc[(df["category"] == "param_share") & (df["item"] == item), "value"].iloc[0])


def _run(capsys, *argv):
    rc = main(["tenancy", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


def test_param_share_prints_table_ii_counts(store, capsys):
    args = ["--gpu-mem-mb", str(_figure(store, "T4 GPU memory")), "--weights-mb", str(_figure(store, "VGG-19 weights")),
            "--buffer-mb", str(_figure(store, "VGG-19 other GPU buffer"))]
    rc, out, _ = _run(capsys, "param-share", *args)
    lines = out.splitlines()
    assert rc == 0
    assert lines[0] == f"without {_figure(store, 'VGG-19 instances without P.S.'):g}"
    assert lines[1] == f"with {_figure(store, 'VGG-19 instances with P.S.'):g}"
    rc, out, _ = _run(capsys, "param-share", *args, "--json")
    got = json.loads(out)
    assert rc == 0 and (got["without"], got["with"]) == (8, 10) and got["extra"] == 2


@pytest.mark.parametrize("argv, field", [
    (["param-share", "--gpu-mem-mb", "16384", "--weights-mb", "-5", "--buffer-mb", "1400"], "weights_mb"),
    (["param-share", "--gpu-mem-mb", "16384", "--weights-mb", "100", "--buffer-mb", "0"], "buffer_mb"),
    (["multi-model", "resnet50", "V100-16GB", "--deadline-ms", "-3"], "deadline_ms"),
    (["multi-model", "resnet50", "V100-16GB", "--deadline-ms", "30", "--available-pct", "120"], "available_pct"),
    (["knee", "resnet50", "V100-16GB", "--step", "0"], "step"),
    (["knee", "resnet50", "NoSuchGPU"], "NoSuchGPU"),
    (["oversubscribe", "resnet50", "V100-16GB", "--gpu-pct", "150"], "gpu_pct"),
    (["reconfig", "--rate", "-1"], "rate_rps"),
])
def test_bad_input_is_one_line_and_exit_2(capsys, argv, field):
    rc, out, err = _run(capsys, *argv)
    assert rc == 2 and out == ""
    assert err.startswith("error: ") and field in err and err.count("\n") == 1


def test_unparseable_number_is_an_argparse_error(capsys):
    with pytest.raises(SystemExit) as e:
        main(["tenancy", "param-share", "--gpu-mem-mb", "lots", "--weights-mb", "1", "--buffer-mb", "1"])
    assert e.value.code == 2
    assert "invalid float value" in capsys.readouterr().err


def test_knee_matches_the_engine(store, capsys):
    rc, out, _ = _run(capsys, "knee", "resnet50", "V100-16GB", "--batch", "4", "--json")
    got = json.loads(out)
    want = knee_gpu_pct(latency_vs_gpu_pct(ProfileBook.from_store(store), "resnet50", "V100-16GB", batch=4))
    assert rc == 0 and got["knee_gpu_pct"] == want.gpu_pct and got["latency_ms"] == pytest.approx(want.latency_ms)
    assert [p["gpu_pct"] for p in got["curve"]][-1] == 100
    rc, out, _ = _run(capsys, "knee", "resnet50", "V100-16GB", "--batch", "4")
    assert rc == 0 and out.startswith(f"knee GPU% {want.gpu_pct} ")


def test_multi_model_stays_within_deadline_and_gpu(capsys):
    rc, out, _ = _run(capsys, "multi-model", "resnet50", "T4-16GB", "--deadline-ms", "30", "--rate", "400", "--json")
    plan = json.loads(out)
    assert rc == 0
    for key in ("best", "for_rate"):
        o = plan[key]
        assert o["tail_ms"] <= 30 and o["instances"] * o["gpu_pct_each"] <= 100
    assert plan["for_rate"]["throughput_items_per_s"] >= 400
    rc, out, _ = _run(capsys, "multi-model", "resnet50", "T4-16GB", "--deadline-ms", "30")
    assert rc == 0 and "items/s" in out and "<= 30 ms" in out


def test_a_deadline_no_share_meets_is_an_answer_not_an_error(capsys):
    rc, out, _ = _run(capsys, "multi-model", "resnet50", "T4-16GB", "--deadline-ms", "1")
    assert rc == 0 and "no GPU% share meets the deadline" in out


def test_oversubscribe_and_reconfig(capsys):
    rc, out, _ = _run(capsys, "oversubscribe", "resnet50", "V100-16GB", "--gpu-pct", "25", "--instances", "6", "--json")
    sweep = json.loads(out)
    assert rc == 0 and [r["total_pct"] for r in sweep["rows"]] == [25, 50, 75, 100, 125, 150]
    thr = [r["throughput_items_per_s"] for r in sweep["rows"]]
    assert thr[3:] == pytest.approx([sweep["cap_items_per_s"]] * 3)
    rc, out, _ = _run(capsys, "reconfig", "--rate", "680", "--json")
    got = json.loads(out)
    want = reconfiguration(680)
    assert rc == 0 and got["restart"]["requests_affected"] == pytest.approx(want.restart.requests_affected)
    assert got["standby"]["downtime_s"] == pytest.approx(want.standby.downtime_s)
