"""Importers and exporters: round trips, Triton files, and all-or-nothing rejection with file/line/field."""

from __future__ import annotations

import argparse
import re

import pytest

from engine.cli import import_export as cli_io
from engine.io.exporters import csv_bytes, export_all, export_table, parquet_bytes, store_rows
from engine.io.importers import ImportFailed, import_file, import_model_analyzer, import_perf_analyzer, parse_own
from engine.seed.records import LatencyPointRow, LoadPointRow, PreprocessingPointRow
from engine.store import USER_TABLES, Store, StoreError
from engine.io.triton import parse_model_analyzer, parse_perf_analyzer

# perf_analyzer -f output, microseconds; rows sorted by throughput as perf_analyzer writes them, so the
# lowest load (concurrency 1) is not the first line.
PERF = """Concurrency,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,Server Compute Input,\
Server Compute Infer,Server Compute Output,Client Recv,p50 latency,p90 latency,p95 latency,p99 latency
2,281.3,41,412,1520,149,2871,12,3,7012,7355,7520,8033
1,268.9,40,398,25,151,2795,11,3,3420,3561,3610,3877
4,291.8,43,455,9820,155,2902,13,3,13661,14020,14310,15120
3,290.2,42,430,5630,152,2890,12,3,10310,10720,10990,11530
"""
PA = dict(model="resnet50", gpu="A100-SXM4-40GB", partition="1g.5gb", batch=1)

MA_HEAD = ("Model,Batch,Concurrency,Model Config Path,Instance Group,Max Batch Size,Satisfies Constraints,"
           "Throughput (infer/sec),p99 Latency (ms),p95 Latency (ms),p90 Latency (ms),p50 Latency (ms),Avg Latency (ms),"
           "Client Send (ms),Client Recv (ms),Server Queue (ms),Server Compute Input (ms),Server Compute Infer (ms),"
           "Server Compute Output (ms),Max GPU Memory Usage (MB),Average GPU Utilization (%)\n")
MA_ROWS = """resnet50_onnx,1,2,resnet50_onnx_config_0,1/GPU,8,Yes,402.1,5.9,5.6,5.4,4.9,4.97,0.04,0.01,0.09,0.15,3.1,0.02,1321.0,61.2
resnet50_onnx,1,1,resnet50_onnx_config_0,1/GPU,8,Yes,301.7,3.6,3.5,3.4,3.3,3.31,0.04,0.01,0.02,0.15,2.9,0.02,1321.0,44.0
resnet50_onnx,4,1,resnet50_onnx_config_0,1/GPU,8,Yes,812.3,5.4,5.2,5.1,4.9,4.92,0.09,0.02,0.03,0.52,4.1,0.05,1402.0,71.5
resnet50_onnx,4,2,resnet50_onnx_config_0,1/GPU,8,No,1001.6,8.8,8.5,8.3,7.9,7.98,0.09,0.02,3.2,0.55,4.2,0.05,1402.0,88.0
resnet50_onnx,1,1,resnet50_onnx_config_1,2/GPU,8,Yes,310.4,3.5,3.4,3.3,3.2,3.22,0.04,0.01,0.02,0.15,2.8,0.02,2420.0,47.0
"""
MA = MA_HEAD + MA_ROWS
MA_GIVEN = dict(gpu="T4-16GB", partition="full", model="resnet50", config="resnet50_onnx_config_0")


@pytest.fixture
def st(tmp_path):
    s = Store(tmp_path / "k.duckdb")
    yield s
    s.close()


def _rejects(store, run, *patterns):
    """`run` raises ImportFailed with a one-line message matching every pattern, and adds nothing."""
    before = store.user_counts()
    with pytest.raises(ImportFailed) as e:
        run()
    msg = str(e.value)
    assert "\n" not in msg
    for p in patterns:
        assert re.search(p, msg), f"{p!r} not in {msg!r}"
    assert store.user_counts() == before
    return msg


# --------------------------------------------------------------------------- perf_analyzer

def test_perf_analyzer_keeps_breakdown_and_derives_service_time(st):
    res = import_perf_analyzer(st, PERF.encode(), name="perf.csv", **PA, measured_on="2026-01-05 lab1")
    assert res.counts() == {"load_points": 4, "latency_points": 1}
    assert res.summary() == "added 4 load_points, 1 latency_points from perf.csv"
    assert st.user_counts() == {"latency_points": 1, "load_points": 4, "preprocessing_points": 0}
    loads = st.user_rows("load_points").sort_values("load")
    assert list(loads["load"]) == [1.0, 2.0, 3.0, 4.0] and set(loads["load_kind"]) == {"concurrency"}
    c1 = loads.iloc[0]  # microseconds -> ms, every breakdown column kept
    assert (c1.client_send_ms, c1.network_ms, c1.server_queue_ms) == (0.04, 0.398, 0.025)
    assert (c1.compute_input_ms, c1.compute_infer_ms, c1.compute_output_ms, c1.client_recv_ms) == (0.151, 2.795, 0.011, 0.003)
    assert (c1.p50_ms, c1.p90_ms, c1.p95_ms, c1.p99_ms, c1.throughput) == (3.42, 3.561, 3.61, 3.877, 268.9)
    assert c1.kind == "measured" and c1.sku == "A100-SXM4-40GB" and c1.partition == "1g.5gb" and c1.measured_on == "2026-01-05 lab1"
    (pt,) = res.rows["latency_points"]
    assert pt.mean_ms == pytest.approx(0.151 + 2.795 + 0.011) and pt.throughput == pytest.approx(1000 / 2.957)
    assert pt.p50_ms is pt.p99_ms is None and pt.kind == "measured" and pt.batch == 1
    assert "lowest-load row" in pt.note and "perf_analyzer" in pt.note and "line 3" in pt.note
    assert len(st.latency_points(model=["resnet50"], partition=["1g.5gb"])) == 1


def test_perf_analyzer_request_rate_and_batch(tmp_path):
    # offered rates of 40..160 requests/s: the throughput (~280 items/s) must not exceed what was offered
    text = re.sub(r"^(\d),", lambda m: f"{int(m.group(1)) * 40},", PERF.replace("Concurrency,", "Request Rate,", 1),
                  flags=re.M)
    res = parse_perf_analyzer(text.encode(), name="rate.csv", **(PA | dict(batch=8)), precision="int8",
                              framework="triton-trt")
    assert {r.load_kind.value for r in res.rows["load_points"]} == {"request_rate"}
    (pt,) = res.rows["latency_points"]
    assert pt.batch == 8 and pt.throughput == pytest.approx(8000 / 2.957) and pt.precision == "int8"
    f = tmp_path / "from_disk.csv"  # a path works as well as bytes; avg latency is read where present
    f.write_text(PERF.replace("p99 latency\n", "p99 latency,Avg latency\n").replace("8033\n", "8033,7100\n")
                 .replace("3877\n", "3877,3500\n").replace("15120\n", "15120,13900\n").replace("11530\n", "11530,10500\n"))
    rows = parse_perf_analyzer(f, **PA).rows["load_points"]
    assert sorted(r.avg_ms for r in rows) == [3.5, 7.1, 10.5, 13.9] and rows[0].source == "perf_analyzer from_disk.csv"


def _drop_column(text: str, i: int) -> str:
    return "".join(",".join(c for j, c in enumerate(l.split(",")) if j != i) + "\n" for l in text.splitlines())


@pytest.mark.parametrize("text, patterns", [
    (PERF.replace(",2795,", ",abc,"), [r"^perf\.csv: line 3: field 'Server Compute Infer': 'abc' is not a number$"]),
    (PERF.replace(",2795,", ",-5,"), [r"line 3: field 'Server Compute Infer': '-5' must be at least 0"]),
    (_drop_column(PERF, 4), [r"perf\.csv: line 1: missing column\(s\) Server Queue"]),
    (PERF.replace("Concurrency,", "Level,", 1), [r"line 1: missing column Concurrency or Request Rate"]),
    (PERF + "2,281.3,41,412,1520,149,2871,12,3,7012,7355,7520,8033\n", [r"line 6: duplicate of line 2 \(same Concurrency 2\)"]),
    (PERF.splitlines()[0] + "\n", [r"perf\.csv: no rows under the header"]),
    ("", [r"perf\.csv: the file is empty"]),
    (PERF + "5,1,2\n", [r"line 6: 3 values for 13 header columns"]),
])
def test_perf_analyzer_bad_file_adds_nothing(st, text, patterns):
    _rejects(st, lambda: import_perf_analyzer(st, text.encode(), name="perf.csv", **PA), *patterns)


def test_non_utf8_and_given_fields_are_refused(st):
    latin1 = PERF.replace("Client Recv", "Client Recv \u00b5s").encode("latin-1")
    _rejects(st, lambda: import_perf_analyzer(st, latin1, name="perf.csv", **PA), r"perf\.csv: not UTF-8 text \(byte 0xb5")
    _rejects(st, lambda: import_perf_analyzer(st, PERF.encode(), name="p.csv", **(PA | dict(partition="9g.99gb"))),
             r"p\.csv: field 'partition': '9g\.99gb' is not a partition of A100-SXM4-40GB; valid: full, mps:1\.\.mps:100, 1g\.5gb")
    _rejects(st, lambda: import_perf_analyzer(st, PERF.encode(), name="p.csv", **(PA | dict(partition="mps:0"))),
             r"field 'partition': 'mps:0'")
    _rejects(st, lambda: import_perf_analyzer(st, PERF.encode(), name="p.csv", **(PA | dict(gpu="RTX-4090"))),
             r"p\.csv: field 'sku': 'RTX-4090' is not a GPU in the catalogue; valid: .*T4-16GB.*, CPU")
    _rejects(st, lambda: import_perf_analyzer(st, PERF.encode(), name="p.csv", **(PA | dict(gpu="T4-16GB"))),
             r"'1g\.5gb' is not a partition of T4-16GB; valid: full, mps:1\.\.mps:100$")
    _rejects(st, lambda: import_perf_analyzer(st, PERF.encode(), name="p.csv", **PA, precision="fp8"),
             r"field 'precision': 'fp8' is not a precision")
    _rejects(st, lambda: import_perf_analyzer(st, PERF.encode(), name="p.csv", **(PA | dict(batch=0))), r"field 'batch'")
    ok = import_perf_analyzer(st, PERF.encode(), name="p.csv", **(PA | dict(gpu="CPU", partition="full")))
    assert ok.counts()["load_points"] == 4
    mps = import_perf_analyzer(st, PERF.encode(), name="p.csv", **(PA | dict(partition="mps:25")))
    assert mps.rows["load_points"][0].partition == "mps:25"


def test_second_table_clash_undoes_the_first(st):
    import_perf_analyzer(st, PERF.encode(), name="a.csv", **PA)
    _rejects(st, lambda: import_perf_analyzer(st, PERF.encode(), name="a.csv", **PA),
             r"a\.csv: load_points: a row with .* is already in the store")
    # new load levels, but the same derived latency point: the load points must not go in either
    other = "\n".join([PERF.splitlines()[0]] + [l.replace(l.split(",")[0], str(int(l.split(",")[0]) * 10), 1)
                                                for l in PERF.splitlines()[1:]]) + "\n"
    assert len(parse_perf_analyzer(other.encode(), **PA).rows["load_points"]) == 4
    _rejects(st, lambda: import_perf_analyzer(st, other.encode(), name="b.csv", **PA),
             r"b\.csv: latency_points: a row with .* is already in the store")


# --------------------------------------------------------------------------- Model Analyzer

def test_model_analyzer_one_config(st):
    res = import_model_analyzer(st, MA.encode(), name="metrics-model-inference.csv", **MA_GIVEN)
    assert res.counts() == {"load_points": 4, "latency_points": 2}
    lp = {(r.batch, r.load): r for r in res.rows["load_points"]}
    r = lp[(4, 2.0)]
    assert (r.throughput, r.p99_ms, r.p50_ms, r.avg_ms, r.server_queue_ms, r.compute_infer_ms) == (1001.6, 8.8, 7.9, 7.98, 3.2, 4.2)
    assert r.network_ms is None and r.model == "resnet50" and r.sku == "T4-16GB"
    assert "config resnet50_onnx_config_0" in r.note and "satisfies constraints No" in r.note and "max GPU memory MB 1402.0" in r.note
    pts = {p.batch: p for p in res.rows["latency_points"]}
    assert pts[1].mean_ms == pytest.approx(3.07) and pts[4].mean_ms == pytest.approx(4.67)
    assert pts[4].throughput == pytest.approx(4000 / 4.67) and "concurrency 1" in pts[4].note


def test_model_analyzer_needs_a_config_when_several(st):
    given = {k: v for k, v in MA_GIVEN.items() if k != "config"}
    _rejects(st, lambda: import_model_analyzer(st, MA.encode(), name="m.csv", **given),
             r"m\.csv: line 6: duplicate of line 3 .*pick one with --config")
    _rejects(st, lambda: import_model_analyzer(st, MA.encode(), name="m.csv", **(MA_GIVEN | dict(config="nope"))),
             r"field 'Model Config Path': no row has 'nope' \(--config\); the file has: resnet50_onnx_config_0, resnet50_onnx_config_1")
    two = MA + MA_ROWS.splitlines()[0].replace("resnet50_onnx", "bert_onnx", 1) + "\n"
    _rejects(st, lambda: import_model_analyzer(st, two.encode(), name="m.csv", **MA_GIVEN), r"several models")
    _rejects(st, lambda: import_model_analyzer(st, MA.replace(",3.1,", ",x,").encode(), name="m.csv", **MA_GIVEN),
             r"m\.csv: line 2: field 'Server Compute Infer \(ms\)': 'x' is not a number")
    _rejects(st, lambda: import_model_analyzer(st, MA.replace("Batch,", "Size,", 1).encode(), name="m.csv", **MA_GIVEN),
             r"line 1: missing column\(s\) Batch")


def test_model_analyzer_default_columns_and_version_headers():
    default = ("Model,Batch,Concurrency,Model Config Path,Instance Group,Max Batch Size,Satisfies Constraints,"
               "Throughput (infer/sec),p99 Latency (ms)\n"
               "resnet50_libtorch,1,2,resnet50_libtorch_i0,1/GPU,32,Yes,195.0,11.0\n"
               "resnet50_libtorch,1,1,resnet50_libtorch_i0,1/GPU,32,Yes,164.0,8.1\n")
    res = parse_model_analyzer(default.encode(), gpu="A100-SXM4-40GB", partition="full", model="resnet50")
    assert len(res.rows["load_points"]) == 2 and res.rows["latency_points"] == []
    assert any("no latency point" in n for n in res.notes)
    old = MA.replace("Server Queue (ms)", "Server Queue time (ms)").replace("Server Compute Infer (ms)", "Server Compute Infer time (ms)")
    res = parse_model_analyzer(old.encode(), **MA_GIVEN)
    assert {r.compute_infer_ms for r in res.rows["load_points"]} == {2.9, 3.1, 4.1, 4.2}
    named = parse_model_analyzer(default.encode(), gpu="A100-SXM4-40GB", partition="full")
    assert {r.model for r in named.rows["load_points"]} == {"resnet50_libtorch"}


# --------------------------------------------------------------------------- own schema

def _latency(**kw):
    base = dict(model="resnet50", sku="A100-SXM4-40GB", partition="3g.20gb", precision="fp16", framework="onnxruntime",
                batch=1, mean_ms=0.1 + 0.2, throughput=1 / 3, kind="measured", source="bench, \"quoted\"\nsecond line",
                note="µs → ms, comma, \"quote\"")
    return LatencyPointRow(**(base | kw))


def _user_rows():
    return {"latency_points": [_latency(), _latency(batch=2, p99_ms=1e-7, input_len=384.0, mean_ms=1234.5678912345679),
                               _latency(batch=4, p50_ms=2.5, throughput=12345.678901234567, measured_on="2026-02-01 host")],
            "preprocessing_points": [PreprocessingPointRow(pipeline="image", step="jpeg_decode", device="cpu",
                                                           implementation="PIL", input_desc="ImageNet", input_size=0.3725,
                                                           ms_per_item=4.2, kind="measured", source="profiler run")]}


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_round_trip_is_exact(st, tmp_path, fmt):
    st.add_many(_user_rows())
    import_perf_analyzer(st, PERF.encode(), name="perf.csv", **PA)
    for table in USER_TABLES:
        path = tmp_path / f"{table}.{fmt}"
        n = export_table(st, table, path, fmt, user_only=True)
        rows = store_rows(st, table, user_only=True)
        assert n == len(rows) > 0
        assert parse_own(path, table, fmt) == rows  # None stays None, floats to the last bit
    full = store_rows(st, "latency_points")
    data = csv_bytes(full, LatencyPointRow) if fmt == "csv" else parquet_bytes(full, LatencyPointRow)
    assert parse_own(data, "latency_points", fmt) == full  # seed rows too
    fresh = Store(tmp_path / "other.duckdb")
    for table in USER_TABLES:
        res = import_file(fresh, tmp_path / f"{table}.{fmt}")
        assert res.counts() == {table: len(store_rows(st, table, user_only=True))}
        assert store_rows(fresh, table, user_only=True) == store_rows(st, table, user_only=True)
    fresh.close()


def test_export_all_writes_every_table_with_model_columns(st, tmp_path):
    counts = export_all(st, tmp_path / "out", "csv")
    assert counts == st.counts()
    header = (tmp_path / "out" / "load_points.csv").read_text().splitlines()[0]
    assert header.split(",") == list(LoadPointRow.model_fields)
    assert export_all(st, tmp_path / "pq", "parquet", user_only=True) == {t: 0 for t in USER_TABLES}


def test_own_schema_rejections(st, tmp_path):
    rows = _user_rows()["latency_points"]
    good = csv_bytes(rows, LatencyPointRow).decode()
    lines = good.splitlines(keepends=True)
    bad_part = good.replace("3g.20gb", "5g.99gb", 1)
    _rejects(st, lambda: import_file(st, bad_part.encode(), name="latency_points.csv"),
             r"latency_points\.csv: line 2: field 'partition': '5g\.99gb' is not a partition of A100-SXM4-40GB")
    _rejects(st, lambda: import_file(st, good.replace("fp16", "fp9").encode(), name="x.csv"),
             r"x\.csv: line 2: field 'precision'")
    dup = good + lines[-1]
    _rejects(st, lambda: import_file(st, dup.encode(), name="x.csv"), r"x\.csv: line 5: duplicate of line 4")
    _rejects(st, lambda: import_file(st, good.replace("mean_ms,", "", 1).encode(), name="x.csv"),
             r"x\.csv: line 1: missing column\(s\) mean_ms")
    _rejects(st, lambda: import_file(st, b"", name="x.csv"), r"x\.csv: the file is empty")
    _rejects(st, lambda: import_file(st, b"\xff\xfe\x00s", name="x.csv"), r"x\.csv: not UTF-8")
    _rejects(st, lambda: import_file(st, good.encode(), name="x.csv", table="gpus"), r"table 'gpus' does not take")
    pq_rows = [r.model_copy(update={"sku": "A100"}) if i == 1 else r for i, r in enumerate(rows)]
    _rejects(st, lambda: import_file(st, parquet_bytes(pq_rows, LatencyPointRow), name="x.parquet"),
             r"x\.parquet: row 2: field 'sku': 'A100' is not a GPU")
    _rejects(st, lambda: import_file(st, b"PAR1 not really", name="x.parquet"), r"x\.parquet: not a readable Parquet file")
    import_file(st, good.encode(), name="x.csv")
    _rejects(st, lambda: import_file(st, good.encode(), name="x.csv"), r"x\.csv: latency_points: a row with .* already in the store")


# --------------------------------------------------------------------------- Store.add_many

def test_add_many_is_all_or_nothing_across_tables(tmp_path, monkeypatch):
    path = tmp_path / "k.duckdb"
    s = Store(path)
    rows = parse_perf_analyzer(PERF.encode(), **PA).rows
    with pytest.raises(StoreError, match="importable tables"):
        s.add_many({"load_points": rows["load_points"], "gpus": []})
    real = Store._persist

    def failing(self, table):
        if table == "load_points" and self._con.execute('SELECT count(*) FROM "user_load_points"').fetchone()[0]:
            raise OSError("disk full")
        real(self, table)

    monkeypatch.setattr(Store, "_persist", failing)
    with pytest.raises(StoreError, match="disk full.*nothing was added"):
        s.add_many({"latency_points": rows["latency_points"], "load_points": rows["load_points"]})
    assert s.user_counts() == {t: 0 for t in USER_TABLES}
    monkeypatch.undo()
    assert Store(path).user_counts() == {t: 0 for t in USER_TABLES}  # the files on disk were put back
    assert s.add_many(rows) == {"load_points": 4, "latency_points": 1}
    assert Store(path).user_counts()["load_points"] == 4


# --------------------------------------------------------------------------- CLI

def _parser():
    p = argparse.ArgumentParser(prog="engine")
    cli_io.register(p.add_subparsers(dest="command", required=True))
    return p


def test_cli_import_and_export(st, tmp_path, capsys):
    f = tmp_path / "perf.csv"
    f.write_text(PERF)
    args = _parser().parse_args(["import", "perf-analyzer", str(f), "--model", "resnet50", "--gpu", "A100-SXM4-40GB",
                                 "--partition", "1g.5gb", "--batch", "1"])
    assert args.func(args, store=st) == 0
    assert capsys.readouterr().out == "added 4 load_points, 1 latency_points from perf.csv\n"
    assert args.func(args, store=st) == 2  # the same file again: one line, nothing added
    err = capsys.readouterr().err
    assert err.startswith("error: perf.csv: load_points: a row with") and err.count("\n") == 1
    out = tmp_path / "exp"
    args = _parser().parse_args(["export", "parquet", str(out), "--user-only"])
    assert args.func(args, store=st) == 0 and (out / "load_points.parquet").exists()
    args = _parser().parse_args(["export", "csv", str(tmp_path / "lp.csv"), "--table", "load_points", "--user-only"])
    assert args.func(args, store=st) == 0 and "wrote 4 load_points" in capsys.readouterr().out
    fresh = Store(tmp_path / "fresh.duckdb")
    args = _parser().parse_args(["import", "csv", str(tmp_path / "lp.csv"), "--table", "load_points"])
    assert args.func(args, store=fresh) == 0
    assert fresh.user_counts()["load_points"] == 4
    ma = tmp_path / "metrics-model-inference.csv"
    ma.write_text(MA)
    args = _parser().parse_args(["import", "model-analyzer", str(ma), "--gpu", "T4-16GB", "--partition", "full",
                                 "--model", "resnet50", "--config", "resnet50_onnx_config_1", "--precision", "fp32"])
    assert args.func(args, store=fresh) == 0
    assert "added 1 load_points, 1 latency_points" in capsys.readouterr().out
    fresh.close()
