"""The rows snapshot (engine.store.snapshot): the rows `evaluate` reads without DuckDB, used only while current.

Each test works on its own copy of one database built for the module (the `snapshot_db` fixture; a copy is a new
file: the snapshot of another file is never taken for its own). What `evaluate` computes from the snapshot must
equal what it computes from the Store, to the byte; whatever makes the snapshot stale must send it back to the
Store. Damaged snapshot files are tests/test_rows_snapshot_damage.py's.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import threading

import pytest

from engine.presets import DEFAULT_SCENARIO
from engine.store import SEED_DIR, Store, StoreError
from engine.store import snapshot as snap
from engine.store.snapshot import KEYS, LATENCY, load_snapshot, open_rows, snapshot_path
from tests.conftest import ROOT
from tests.snapshotkit import DPU, ESTIMATED, MY_NET, all_rows, evaluation, my_net_rows


# --------------------------------------------------------------------------- the same answers


def test_the_snapshot_holds_exactly_the_rows_the_store_gives(snapshot_db):
    store = Store(snapshot_db)
    cold = open_rows(snapshot_db)  # no snapshot yet: read from the store, and written
    warm = load_snapshot(snapshot_db)
    assert warm is not None and snapshot_path(snapshot_db).is_file()
    expected = all_rows(store)
    assert all_rows(cold) == expected and all_rows(warm) == expected
    assert all(expected[name] for name in expected)  # every table has rows: the comparison compares something
    first, again = warm.records("gpus"), warm.records("gpus")
    assert first == again and first[0] is not again[0]  # new dicts each call, as a Store's
    with pytest.raises(StoreError, match="not in the rows snapshot"):
        warm.records("rpc_figures")


@pytest.mark.parametrize("scenario", [DEFAULT_SCENARIO, DPU, ESTIMATED], ids=["default", "dpu", "estimated"])
def test_evaluate_from_the_snapshot_equals_evaluate_from_the_store(snapshot_db, scenario):
    open_rows(snapshot_db)
    warm = load_snapshot(snapshot_db)
    assert warm is not None
    assert evaluation(warm, scenario) == evaluation(Store(snapshot_db), scenario)


def test_the_cli_prints_the_same_cold_and_warm_as_from_the_store(snapshot_db, tmp_path):
    scenario = tmp_path / "default.json"
    scenario.write_text(json.dumps(DEFAULT_SCENARIO))
    env = dict(os.environ, KNEEPOINT_DB=str(snapshot_db))

    def run():
        r = subprocess.run([sys.executable, "-m", "engine", "evaluate", str(scenario), "--json"], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        return r.stdout

    cold = run()
    assert load_snapshot(snapshot_db) is not None  # the cold run left a current snapshot
    stamp = os.stat(snapshot_path(snapshot_db)).st_mtime_ns
    warm = run()
    assert os.stat(snapshot_path(snapshot_db)).st_mtime_ns == stamp  # the warm run read it, did not write it again
    assert cold == warm == evaluation(Store(snapshot_db), DEFAULT_SCENARIO) + "\n"


def test_the_cost_models_are_the_same_from_the_store_and_the_snapshot_and_those_of_the_cost_rows(snapshot_db):
    store = Store(snapshot_db)
    open_rows(snapshot_db)
    warm = load_snapshot(snapshot_db)
    expected = sorted({r["model"] for r in store.records("model_costs") if r["model"] is not None})
    assert len(expected) > 10 and "swin-t" in expected  # the seed's cost tables, not an empty list
    assert store.cost_models() == expected
    assert warm.cost_models() == expected and "model_costs" not in warm.decoded  # without decoding the rows
    assert warm.records("model_costs") == store.records("model_costs") and warm.cost_models() == expected


def test_a_default_evaluate_decodes_no_cost_rows_and_an_estimated_one_does(snapshot_db):
    """Each table is decoded when first asked for: the default scenario's model has measured points, so its
    evaluation never reads model_costs (850 kB of the snapshot) or gpu_specs; a model only the estimator answers
    reads both, and gets the Store's answer."""
    open_rows(snapshot_db)
    warm = load_snapshot(snapshot_db)
    assert warm.decoded == frozenset()  # loading checks the digest and the index, decodes no table
    assert evaluation(warm, DEFAULT_SCENARIO) == evaluation(Store(snapshot_db), DEFAULT_SCENARIO)
    assert "model_costs" not in warm.decoded and "gpu_specs" not in warm.decoded
    assert {"gpus", "models", LATENCY} <= warm.decoded  # the check above is of a run that read the snapshot
    assert evaluation(warm, ESTIMATED) == evaluation(Store(snapshot_db), ESTIMATED)
    assert {"model_costs", "gpu_specs"} <= warm.decoded


def test_a_book_from_a_store_reads_the_cost_rows_at_once_so_it_estimates_without_the_connection(snapshot_db):
    """Only a snapshot's book defers the estimator's tables: a book from a Store may first estimate in a search's
    forked worker, which must not use the parent's DuckDB connection; closing the Store stands in for that."""
    from engine.profiles import ProfileBook

    store = Store(snapshot_db)
    book = ProfileBook.from_store(store)
    store.close()
    assert book.estimator is not None and "swin-t" in book.estimator.model_names


def test_the_snapshot_is_an_index_line_then_one_line_per_table(snapshot_db):
    open_rows(snapshot_db)
    head, body = snapshot_path(snapshot_db).read_bytes().split(b"\n", 1)
    assert json.loads(head)["version"]["format"] == snap.FORMAT == 2
    index, *lines = body.split(b"\n")
    assert list(json.loads(index)["columns"]) == list(KEYS) and len(lines) == len(KEYS)
    assert json.loads(index)["cost_models"] == Store(snapshot_db).cost_models()
    stored = Store(snapshot_db).records("model_costs")
    assert json.loads(lines[KEYS.index("model_costs")]) == [list(r.values()) for r in stored]


# --------------------------------------------------------------------------- what makes it stale


def test_importing_a_model_makes_the_snapshot_stale_and_the_next_run_refreshes_it(snapshot_db):
    open_rows(snapshot_db)
    before = load_snapshot(snapshot_db)
    with pytest.raises(Exception, match="my-net"):  # the model is not in the store yet
        evaluation(before, MY_NET)
    Store(snapshot_db).add_rows("latency_points", my_net_rows())
    assert load_snapshot(snapshot_db) is None  # a user file changed: stale
    rows = open_rows(snapshot_db)
    assert evaluation(rows, MY_NET) == evaluation(Store(snapshot_db), MY_NET)
    refreshed = load_snapshot(snapshot_db)
    assert refreshed is not None and all_rows(refreshed) == all_rows(Store(snapshot_db))
    assert evaluation(refreshed, MY_NET) == evaluation(Store(snapshot_db), MY_NET)
    Store(snapshot_db).clear_user_rows("latency_points")  # and removed again
    assert load_snapshot(snapshot_db) is None
    assert not [r for r in open_rows(snapshot_db).latency_records() if r["model"] == "my-net"]


def test_an_edited_seed_table_rebuilds_the_database_and_refreshes_the_snapshot(seed_copy, tmp_path):
    snapshot_db = tmp_path / "seeded.duckdb"
    open_rows(snapshot_db, seed_copy)  # builds the database, and the first run already leaves a snapshot
    assert load_snapshot(snapshot_db, seed_copy) is not None
    prices = seed_copy / "prices_power.csv"
    with open(prices, newline="") as fh:
        header, first, *rest = list(csv.reader(fh))
    old = float(first[header.index("value")])
    first[header.index("value")] = repr(old + 1234.0)
    with open(prices, "w", newline="") as fh:
        csv.writer(fh, lineterminator="\n").writerows([header, first, *rest])
    assert load_snapshot(snapshot_db, seed_copy) is None
    rows = open_rows(snapshot_db, seed_copy)
    changed = [r for r in rows.records("prices_power") if (r["item"], r["kind"]) == (first[1], first[2])]
    assert [r["value"] for r in changed] == [old + 1234.0]
    refreshed = load_snapshot(snapshot_db, seed_copy)
    assert refreshed is not None
    assert refreshed.records("prices_power") == Store(snapshot_db, seed_copy).records("prices_power")


def test_an_edit_to_the_code_that_shapes_the_rows_makes_the_snapshot_stale(snapshot_db, tmp_path, monkeypatch):
    assert {p.name for p in snap.CODE_FILES} >= {"__init__.py", "snapshot.py", "records.py"}
    code = tmp_path / "queries.py"  # stands for one of them (the real ones are this checkout's source)
    code.write_text("ORDER = 'model, sku'\n")
    monkeypatch.setattr(snap, "CODE_FILES", (*snap.CODE_FILES, code))
    open_rows(snapshot_db)
    assert load_snapshot(snapshot_db) is not None
    code.write_text("ORDER = 'sku, model'\n")
    assert load_snapshot(snapshot_db) is None


def test_a_snapshot_of_another_database_file_is_not_used(snapshot_db, tmp_path):
    open_rows(snapshot_db)
    other = tmp_path / "other.duckdb"
    shutil.copyfile(snapshot_db, other)
    shutil.copyfile(snapshot_path(snapshot_db), snapshot_path(other))
    assert load_snapshot(other) is None  # another path, another file
    os.replace(other, snapshot_db)  # the database replaced by a copy of itself: a new file
    assert load_snapshot(snapshot_db) is None


# --------------------------------------------------------------------------- where it cannot be written


def _no_leftovers(directory) -> bool:
    return not [p for p in directory.iterdir() if p.name.endswith(".tmp")]


def test_a_directory_that_refuses_new_files_gets_no_snapshot_and_the_same_answers(snapshot_db, monkeypatch):
    real_open = open

    def refusing(file, mode="r", *args, **kwargs):  # what creating a file in a read-only directory raises
        if "x" in mode or "w" in mode:
            raise PermissionError(13, "Permission denied", str(file))
        return real_open(file, mode, *args, **kwargs)

    monkeypatch.setattr(snap, "open", refusing, raising=False)
    rows = open_rows(snapshot_db)
    assert not snapshot_path(snapshot_db).exists() and _no_leftovers(snapshot_db.parent)
    assert evaluation(rows, DEFAULT_SCENARIO) == evaluation(Store(snapshot_db), DEFAULT_SCENARIO)


def test_a_rename_that_fails_leaves_no_snapshot_and_no_temporary_file(snapshot_db, monkeypatch):
    def failing(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(snap.os, "replace", failing)
    rows = open_rows(snapshot_db)
    assert not snapshot_path(snapshot_db).exists() and _no_leftovers(snapshot_db.parent)
    assert all_rows(rows) == all_rows(Store(snapshot_db))


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only directory anyway")
def test_a_read_only_directory_gets_no_snapshot(snapshot_db):
    Store(snapshot_db).close()
    snapshot_db.parent.chmod(0o555)
    try:
        rows = open_rows(snapshot_db)
        assert not snapshot_path(snapshot_db).exists()
        assert evaluation(rows, DEFAULT_SCENARIO) == evaluation(Store(snapshot_db), DEFAULT_SCENARIO)
    finally:
        snapshot_db.parent.chmod(0o755)


# --------------------------------------------------------------------------- concurrent writers


def test_concurrent_writers_never_leave_a_partial_file(snapshot_db):
    """Writers replace the file whole while a reader reads it: every read finds a whole, current snapshot."""
    store = Store(snapshot_db)
    version, tables = snap.current_version(snapshot_db), snap._read(store)
    store.close()
    assert snap.write_snapshot(snapshot_db, version, tables)
    failures, reads, done = [], [0], threading.Event()

    def write():
        for _ in range(15):
            if not snap.write_snapshot(snapshot_db, version, tables):
                failures.append("a write failed")

    def read():
        while not done.is_set():
            if load_snapshot(snapshot_db) is None:
                failures.append("a read found no whole snapshot")
            reads[0] += 1

    reader = threading.Thread(target=read)
    writers = [threading.Thread(target=write) for _ in range(4)]
    reader.start()
    for w in writers:
        w.start()
    for w in writers:
        w.join()
    done.set()
    reader.join()
    assert failures == [] and reads[0] > 0
    assert _no_leftovers(snapshot_db.parent) and load_snapshot(snapshot_db) is not None


def test_the_version_is_worked_out_without_duckdb(snapshot_db):
    """Nor logging (the store's logger is fetched when it first logs: engine.store.build.store_log)."""
    open_rows(snapshot_db)
    probe = ("import json, sys\nfrom pathlib import Path\nfrom engine.store.snapshot import load_snapshot\n"
             f"rows = load_snapshot(Path({str(snapshot_db)!r}))\n"
             "print(json.dumps([rows is not None, 'duckdb' in sys.modules, 'logging' in sys.modules]))")
    r = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == [True, False, False]


def test_the_default_location_is_beside_the_database(tmp_path, monkeypatch):
    monkeypatch.setenv("KNEEPOINT_DB", str(tmp_path / "here.duckdb"))
    open_rows(seed_dir=SEED_DIR)
    assert (tmp_path / "here.duckdb.rows.json").is_file()


def test_the_writer_refuses_rows_a_reader_could_not_take_on_trust(snapshot_db):
    """Only rows of the snapshot's tables, with their models' columns and each value of its column's SQL type (or
    NULL), are written: the reader checks the digest and the shape, not each value."""
    store = Store(snapshot_db)
    version, good = snap.current_version(snapshot_db), snap._read(store)
    store.close()

    def spoiled(key: str, change) -> dict:
        tables = {k: (list(cols), [list(r) for r in rows]) for k, (cols, rows) in good.items()}
        change(tables[key])
        return tables

    sku = good["gpus"][0].index("sku")
    for tables in (spoiled("gpus", lambda t: t[1][0].__setitem__(sku, 7)),  # a number in a text column
                   spoiled("model_costs", lambda t: t[1][3].__setitem__(t[0].index("op"), True)),  # bool for int
                   spoiled("prices_power", lambda t: t[1][0].__setitem__(t[0].index("value"), "1.5")),
                   spoiled("models", lambda t: t[1][0].append(None)),  # a value too many
                   spoiled("gpus", lambda t: t[0].reverse()),  # the columns in another order
                   {k: v for k, v in good.items() if k != "gpus"}):  # a table missing
        assert not snap.write_snapshot(snapshot_db, version, tables)
        assert not snapshot_path(snapshot_db).exists()
    assert snap.write_snapshot(snapshot_db, version, good) and load_snapshot(snapshot_db) is not None
