"""Hostile and absurd imports: bounded Parquet, bounded text cells in every format, finite and consistent numbers.

Every refusal is one line naming the file, line or row, and field, and repeats no more than ~100 characters of
what the file holds."""

from __future__ import annotations

import io
import re

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engine.io import importers
from engine.errors import ECHO_CHARS
from engine.io.exporters import csv_bytes, parquet_bytes
from engine.hosting import UploadLimits
from engine.io.importers import ImportFailed, check_upload_limits, import_upload, parse_own
from engine.seed.records import (MAX_LATENCY_MS, MAX_TEXT_CHARS, TABLES, THROUGHPUT_TOLERANCE, LatencyPointRow,
                               LoadPointRow)
from engine.seed.reader import read_csv
from engine.io.triton import parse_model_analyzer, parse_perf_analyzer
from tests.conftest import SEED
from tests.test_importers import MA, MA_GIVEN, PA, PERF
from engine.vocab import Provenance

GOOD = dict(model="resnet50", sku="A100-SXM4-40GB", partition="full", precision="fp16", framework="trt", batch=1,
            mean_ms=2.0, throughput=500.0, kind="measured", source="bench run")


def _refused(run, *patterns: str, error=ImportFailed) -> str:
    """`run` raises one line matching every pattern, and echoes nothing long."""
    with pytest.raises(error) as e:
        run()
    message = str(e.value)
    assert "\n" not in message and len(message) < 6 * ECHO_CHARS, message
    for pattern in patterns:
        assert re.search(pattern, message), f"{pattern!r} not in {message!r}"
    return message


def _parquet(columns: dict, compression: str = "zstd") -> bytes:
    sink = io.BytesIO()
    pq.write_table(pa.table(columns), sink, compression=compression)
    return sink.getvalue()


# --------------------------------------------------------------------------- Parquet bombs

@pytest.fixture
def forbid_reading(monkeypatch):
    """Any attempt to read a Parquet file's data (not its footer) fails the test."""
    def refuse(*args, **kwargs):
        raise AssertionError("the Parquet data was read")

    monkeypatch.setattr(pq.ParquetFile, "read", refuse)
    monkeypatch.setattr(pq.ParquetFile, "iter_batches", refuse)
    monkeypatch.setattr(pq, "read_table", refuse)


def test_a_small_parquet_that_decompresses_past_the_cap_is_refused_from_its_footer(monkeypatch, forbid_reading):
    monkeypatch.setattr(importers, "MAX_PARQUET_DATA_BYTES", 16 * 2**20)
    bomb = _parquet({k: [v] for k, v in GOOD.items()} | {"note": ["a" * (32 * 2**20)]})
    assert len(bomb) < 100_000  # well inside the hosted upload limits
    check_upload_limits(bomb, "parquet", "bomb.parquet", UploadLimits())
    _refused(lambda: import_upload(None, "parquet", bomb, "bomb.parquet", {"table": "latency_points"}),
             r"bomb\.parquet: the file holds 32\.\d MB of data once decompressed, over the limit of 16 MB")


def test_a_repeated_text_that_expands_past_the_cap_is_refused_before_expanding(monkeypatch):
    monkeypatch.setattr(importers, "MAX_PARQUET_DATA_BYTES", 16 * 2**20)
    rows = 10_000  # one 2,000-character note repeated: 20 MB in memory, a few kB in the file's dictionary
    bomb = _parquet({k: [v] * rows for k, v in GOOD.items() if k != "batch"}
                    | {"batch": list(range(1, rows + 1)), "note": ["n" * MAX_TEXT_CHARS] * rows})
    footer = pq.ParquetFile(pa.BufferReader(bomb)).metadata
    assert sum(footer.row_group(i).total_byte_size for i in range(footer.num_row_groups)) < 16 * 2**20
    _refused(lambda: parse_own(bomb, "latency_points", "parquet", name="dict.parquet"),
             r"dict\.parquet: the file holds 2\d\.\d MB of data once read, over the limit of 16 MB")


def test_a_parquet_cell_longer_than_the_text_limit_is_refused_by_column_and_row():
    long_note = ["fine", "x" * (MAX_TEXT_CHARS + 1)]
    data = _parquet({k: [v, v] for k, v in GOOD.items() if k != "batch"} | {"batch": [1, 2], "note": long_note})
    message = _refused(lambda: parse_own(data, "latency_points", "parquet", name="long.parquet"),
                       r"long\.parquet: row 2: field 'note': 2,001 characters, over the limit of 2,000")
    assert "xxxxx" not in message


def test_a_parquet_column_of_lists_is_refused_before_reading(forbid_reading):
    data = _parquet({k: [v] for k, v in GOOD.items()} | {"note": [["a", "b"]]})
    _refused(lambda: parse_own(data, "latency_points", "parquet", name="nested.parquet"),
             r"nested\.parquet: column 'note' holds list<.*>; expected text, numbers or true/false")


# --------------------------------------------------------------------------- long text in CSV formats

def test_an_own_csv_cell_longer_than_the_text_limit_is_refused_by_field_and_line():
    rows = [LatencyPointRow(**GOOD | {"batch": b}) for b in (1, 2)]
    text = csv_bytes(rows, LatencyPointRow).decode().replace("bench run", "b" * (MAX_TEXT_CHARS + 500))
    message = _refused(lambda: parse_own(text.encode(), "latency_points", name="long.csv"),
                       r"long\.csv: line 2: field 'source': 2,500 characters, over the limit of 2,000")
    assert "bbbbb" not in message


def test_a_csv_cell_over_the_csv_modules_own_limit_names_its_line():
    header, row = csv_bytes([LatencyPointRow(**GOOD)], LatencyPointRow).decode().splitlines()
    huge = row.replace("bench run", '"' + "q" * 200_000 + '"')
    _refused(lambda: parse_own(f"{header}\n{row}\n{huge}\n".encode(), "latency_points", name="huge.csv"),
             r"huge\.csv: line 3: not a readable CSV file \(field larger than field limit")


def test_a_perf_analyzer_cell_longer_than_the_text_limit_names_line_and_column():
    lines = PERF.splitlines()
    cells = lines[2].split(",")
    cells[1] = "9" * (MAX_TEXT_CHARS + 1)
    text = "\n".join(lines[:2] + [",".join(cells)] + lines[3:]) + "\n"
    _refused(lambda: parse_perf_analyzer(text.encode(), name="perf.csv", **PA),
             r"perf\.csv: line 3: column 'Inferences/Second': 2,001 characters, over the limit of 2,000")


def test_a_model_analyzer_cell_longer_than_the_text_limit_names_line_and_column():
    text = MA.replace("resnet50_onnx_config_1", "c" * (MAX_TEXT_CHARS * 3))
    message = _refused(lambda: parse_model_analyzer(text.encode(), name="ma.csv", **MA_GIVEN),
                       r"ma\.csv: line 6: column 'Model Config Path': 6,000 characters, over the limit of 2,000")
    assert "ccccc" not in message


def test_a_header_cell_longer_than_the_text_limit_is_refused():
    text = "Z" * (MAX_TEXT_CHARS + 1) + "," + PERF
    _refused(lambda: parse_perf_analyzer(text.encode(), name="perf.csv", **PA), r"perf\.csv: line 1: column 1:")


# --------------------------------------------------------------------------- non-finite and absurd numbers

@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "Infinity", "1e308"])
@pytest.mark.parametrize("field", ["mean_ms", "throughput", "p99_ms"])
def test_non_finite_and_absurd_numbers_are_refused_in_own_csv(field, value):
    text = csv_bytes([LatencyPointRow(**GOOD | {"p99_ms": 3.0})], LatencyPointRow).decode()
    header, row = text.splitlines()
    cells = row.split(",")
    cells[header.split(",").index(field)] = value
    _refused(lambda: parse_own(f"{header}\n{','.join(cells)}\n".encode(), "latency_points", name="x.csv"),
             rf"x\.csv: line 2: field '{field}': .*(finite|less than or equal|valid number)")


@pytest.mark.parametrize("value", [float("nan"), float("inf"), 1e308])
def test_non_finite_and_absurd_numbers_are_refused_in_parquet(value):
    data = _parquet({k: [v] for k, v in GOOD.items()} | {"throughput": [value]}, compression="none")
    # NaN in a required field reads as a missing value; inf and 1e308 are over the bounds
    _refused(lambda: parse_own(data, "latency_points", "parquet", name="x.parquet"),
             r"x\.parquet: row 1: field 'throughput': ")


def test_an_absurd_perf_analyzer_time_is_refused():
    text = PERF.replace("3877", "1" + "0" * 300)  # microseconds, well past an hour
    _refused(lambda: parse_perf_analyzer(text.encode(), name="perf.csv", **PA),
             r"perf\.csv: line 3: field 'p99_ms': Input should be less than or equal to")


def test_the_bounds_are_the_declared_ones():
    assert LatencyPointRow(**GOOD | {"mean_ms": MAX_LATENCY_MS, "throughput": 1e-4}).mean_ms == MAX_LATENCY_MS
    with pytest.raises(ValueError, match="less than or equal to 3600000"):
        LatencyPointRow(**GOOD | {"mean_ms": MAX_LATENCY_MS * 1.01, "throughput": 1e-4})


# --------------------------------------------------------------------------- cross-field checks

@pytest.mark.parametrize("given,pattern", [
    (dict(p50_ms=3.0, p95_ms=2.5), r"p50_ms 3 is above p95_ms 2\.5; percentiles must rise"),
    (dict(p90_ms=3.0, p99_ms=2.0), r"p90_ms 3 is above p99_ms 2"),
    (dict(throughput=500.0 * (THROUGHPUT_TOLERANCE + 1)), r"throughput 2000 items/s is over 3x what batch 1"),
])
def test_inconsistent_latency_rows_are_refused_without_naming_a_row_field(given, pattern):
    with pytest.raises(ValueError, match=pattern):
        LatencyPointRow(**GOOD | given)
    bad = LatencyPointRow.model_construct(**GOOD | given)  # unvalidated, to write the file an importer would get
    text = csv_bytes([bad], LatencyPointRow)
    message = _refused(lambda: parse_own(text, "latency_points", name="x.csv"), r"x\.csv: line 2: " + pattern)
    assert "field 'row'" not in message


def test_the_mean_may_exceed_a_percentile():
    assert LatencyPointRow(**GOOD | {"mean_ms": 2.0, "p50_ms": 1.0, "p99_ms": 1.9}).p99_ms == 1.9  # a skewed tail


def test_load_rows_must_agree_with_their_concurrency_or_offered_rate():
    base = dict(model="resnet50", sku="T4-16GB", partition="full", precision="fp16", framework="triton", batch=1,
                load=2, throughput=400.0, p99_ms=5.0, kind="measured", source="bench run")
    assert LoadPointRow(**base, load_kind="concurrency").throughput == 400.0  # 2 in flight / 5 ms = 400/s
    with pytest.raises(ValueError, match="over 3x what batch 1 at concurrency 2"):
        LoadPointRow(**base | {"throughput": 2500.0}, load_kind="concurrency")
    with pytest.raises(ValueError, match="over 3x the offered 2 requests/s of batch 1"):
        LoadPointRow(**base | {"throughput": 7.0}, load_kind="request_rate")
    with pytest.raises(ValueError, match="p50_ms 6 is above p99_ms 5"):
        LoadPointRow(**base | {"p50_ms": 6.0}, load_kind="concurrency")


@pytest.mark.parametrize("table", list(TABLES))
def test_every_curated_seed_row_passes_the_import_checks(table):
    model = TABLES[table][0]
    assert read_csv(SEED / f"{table}.csv", model)  # raises SeedError naming the first row that fails


def test_parquet_bytes_round_trip_after_the_checks():
    rows = [LatencyPointRow(**GOOD | {"batch": b, "note": "é" * MAX_TEXT_CHARS}) for b in (1, 2)]
    assert parse_own(parquet_bytes(rows, LatencyPointRow), "latency_points", "parquet") == rows



def test_rows_stored_before_the_checks_still_export(tmp_path):
    from engine.io.exporters import export_bytes
    from engine.store import Store

    store = Store(tmp_path / "k.duckdb")
    try:
        old = LatencyPointRow.model_construct(**GOOD | {"throughput": 1e6, "p50_ms": 3.0, "p95_ms": 2.0,
                                                        "kind": Provenance.MEASURED})
        store.add_many({"latency_points": [old]})  # as an import before the checks would have stored it
        text = export_bytes(store, "latency_points", "csv", user_only=True).decode()
        assert ",1000000.0," in text
        assert pq.read_table(pa.BufferReader(export_bytes(store, "latency_points", "parquet", user_only=True))
                             ).num_rows == 1
        _refused(lambda: parse_own(text.encode(), "latency_points", name="old.csv"),
                 r"old\.csv: line 2: p50_ms 3 is above p95_ms 2")
    finally:
        store.close()
