"""User rows are bounded and removable (issue 17): a row limit on every write (lifted per import with --max-rows),
`profiles clear-user`, and user rows kept in series order so a filtered lookup stays fast."""

import time

import pyarrow.parquet as pq
import pytest

from engine.cli.main import main
from engine.seed.records import LatencyPointRow
from engine.store import MAX_USER_ROWS, Store, StoreError
from engine.store.build import SERIES_ORDER
from tests.conftest import SEED

HEADER = (SEED / "latency_points.csv").read_text().splitlines()[0]


def _row(model: str, batch: int, partition: str = "full") -> LatencyPointRow:
    return LatencyPointRow(model=model, sku="T4-16GB", partition=partition, precision="fp16", framework="limits-test",
                           batch=batch, mean_ms=1 + batch / 10, throughput=100.0 * batch, kind="measured",
                           source="limits test")


def _csv(path, model: str, rows: int) -> str:
    lines = [HEADER] + [f"limits test,{model},A100-SXM4-80GB,1g.10gb,fp16,triton,{b},,{1 + b / 10},,,,,"
                        f"{b / (1 + b / 10) * 1000:.1f},measured,2026-11-24," for b in range(1, rows + 1)]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


@pytest.fixture
def small(tmp_path):
    store = Store(tmp_path / "k.duckdb")
    store.max_user_rows = 5
    yield store
    store.close()


# --------------------------------------------------------------------------- the limit

def test_a_write_over_the_limit_is_refused_naming_it(small):
    with pytest.raises(StoreError) as e:
        small.add_rows("latency_points", [_row("m", b) for b in range(1, 7)])
    assert "over the limit of 5 user rows per table; nothing was added" in str(e.value)
    assert "clear-user" in str(e.value) and "--max-rows" in str(e.value)
    assert small.user_counts()["latency_points"] == 0


def test_the_limit_counts_the_rows_already_there(small, tmp_path):
    small.add_rows("latency_points", [_row("m", b) for b in range(1, 4)])
    with pytest.raises(StoreError, match="3 new rows would make 6 of your own, over the limit of 5"):
        small.add_rows("latency_points", [_row("n", b) for b in range(1, 4)])
    small.add_rows("latency_points", [_row("n", b) for b in range(1, 3)])  # exactly at the limit is fine
    assert small.user_counts()["latency_points"] == 5
    # another process opening the same files has the same limit
    assert Store(tmp_path / "k.duckdb").max_user_rows == MAX_USER_ROWS


def test_a_million_rows_are_refused_before_any_work(tmp_path):
    store = Store(tmp_path / "k.duckdb")
    template = _row("m", 1)
    rows = [template.model_copy(update={"batch": b}) for b in range(1, MAX_USER_ROWS + 2)]
    started = time.perf_counter()
    with pytest.raises(StoreError, match=f"over the limit of {MAX_USER_ROWS:,} user rows"):
        store.add_rows("latency_points", rows)
    print(f"benchmark: {len(rows):,} rows refused in {time.perf_counter() - started:.3f} s")
    assert store.user_counts()["latency_points"] == 0
    store.close()


def test_cli_import_names_the_limit_and_max_rows_lifts_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KNEEPOINT_DB", str(tmp_path / "k.duckdb"))
    monkeypatch.setattr("engine.store.build.MAX_USER_ROWS", 2)
    monkeypatch.setattr("engine.store.MAX_USER_ROWS", 2)
    three = _csv(tmp_path / "three.csv", "cli-limit", 3)
    assert main(["import", "csv", three]) == 2
    err = capsys.readouterr().err
    assert "over the limit of 2 user rows per table" in err and err.count("\n") == 1
    assert main(["import", "csv", three, "--max-rows", "3"]) == 0
    assert "3 latency_points" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["import", "csv", three, "--max-rows", "0"])
    assert "'0' is not a whole number of rows above zero" in capsys.readouterr().err


def test_an_overlay_has_the_same_row_limit(tmp_path):
    shared = Store.hosted(tmp_path / "k.duckdb")
    view = shared.overlay()
    view.max_user_rows = 2
    view.add_rows("latency_points", [_row("m", 1), _row("m", 2)])
    with pytest.raises(StoreError, match="over the limit of 2 user rows"):
        view.add_rows("latency_points", [_row("m", 3)])
    assert view.user_counts()["latency_points"] == 2
    shared.close()


# --------------------------------------------------------------------------- clear-user

def test_clear_user_asks_for_yes_then_removes_only_user_rows(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KNEEPOINT_DB", str(tmp_path / "k.duckdb"))
    assert main(["import", "csv", _csv(tmp_path / "four.csv", "cli-clear", 4)]) == 0
    seed_rows = Store().counts()["latency_points"] - 4
    capsys.readouterr()
    assert main(["profiles", "clear-user"]) == 1
    assert "would remove 4 latency_points, 0 load_points, 0 preprocessing_points" in capsys.readouterr().err
    assert Store().user_counts()["latency_points"] == 4
    assert main(["profiles", "clear-user", "--table", "latency_points", "--yes"]) == 0
    assert "removed 4 latency_points user rows" in capsys.readouterr().out
    after = Store()
    assert after.user_counts()["latency_points"] == 0 and after.counts()["latency_points"] == seed_rows
    assert main(["profiles", "clear-user", "--yes"]) == 0  # nothing left is fine too


# --------------------------------------------------------------------------- series order

def test_user_rows_are_kept_in_series_order(tmp_path):
    store = Store(tmp_path / "k.duckdb")
    store.add_rows("latency_points", [_row("zeta", 2), _row("alpha", 8, "mps:50"), _row("zeta", 1)])
    store.add_rows("latency_points", [_row("alpha", 1, "mps:50"), _row("beta", 4), _row("alpha", 2, "full")])
    key = list(SERIES_ORDER["latency_points"])
    expected = [("alpha", "full", 2), ("alpha", "mps:50", 1), ("alpha", "mps:50", 8), ("beta", "full", 4),
                ("zeta", "full", 1), ("zeta", "full", 2)]
    in_memory = store.user_rows("latency_points")
    assert list(zip(in_memory["model"], in_memory["partition"], in_memory["batch"])) == expected
    on_disk = pq.read_table(store.user_dir / "latency_points.parquet").to_pandas()
    assert list(zip(on_disk["model"], on_disk["partition"], on_disk["batch"])) == expected
    assert key[:4] == ["model", "sku", "partition", "precision"]  # a series first, then its points
    store.close()
