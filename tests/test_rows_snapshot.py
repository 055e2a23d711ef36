"""The rows snapshot (engine.store.snapshot): the rows `evaluate` reads without DuckDB, used only while current.

Each test works on its own copy of one database built for the module (a copy is a new file: the snapshot of
another file is never taken for its own). What `evaluate` computes from the snapshot must equal what it computes
from the Store, to the byte; whatever makes the snapshot stale or unreadable must send it back to the Store.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import threading

import pytest

from engine.analytic import Context, build_design, evaluate_design
from engine.cli.evaluate import _clean
from engine.presets import DEFAULT_SCENARIO
from engine.scenario import load_scenario
from engine.seed.records import LatencyPointRow
from engine.store import SEED_DIR, Store, StoreError
from engine.store import snapshot as snap
from engine.store.snapshot import KEYS, LATENCY, SNAPSHOT_TABLES, load_snapshot, open_rows, snapshot_path
from tests.conftest import ROOT

DPU = dict(DEFAULT_SCENARIO, preprocessing={"device": "dpu"})
MY_NET = dict(DEFAULT_SCENARIO, model="my-net", precision="fp16",
              gpu={"sku": "T4-16GB", "count": 2, "layout": None})
#: a model with operator costs and no latency point on any GPU: only the estimator answers it
ESTIMATED = dict(DEFAULT_SCENARIO, model="swin-t", gpu={"sku": "A100-SXM4-80GB", "count": 1, "layout": None},
                 preprocessing={"device": "none"},
                 workload={"arrival": {"kind": "poisson", "rate_rps": 200},
                           "sla": {"latency_ms": 50, "percentile": 99}})


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A database built once for the module (not the session's: these tests write beside it)."""
    path = tmp_path_factory.mktemp("built") / "k.duckdb"
    Store(path).close()
    return path


@pytest.fixture
def db(built, tmp_path):
    """This test's own copy of the built database."""
    path = tmp_path / "k.duckdb"
    shutil.copyfile(built, path)
    return path


def _all_rows(rows) -> dict:
    """Everything Context.from_store and ProfileBook.from_store read, from a Store or a snapshot."""
    out = {name: rows.records(name) for name in SNAPSHOT_TABLES}
    out[LATENCY] = rows.latency_records()
    out["catalog"] = rows.catalog().model_dump_json()
    out["cost_models"] = rows.cost_models()
    return out


def _evaluation(rows, scenario: dict) -> str:
    """The evaluation of `scenario` as `evaluate --json` prints it."""
    ctx = Context.from_store(rows)
    design = build_design(load_scenario(scenario, ctx.book), ctx)
    return json.dumps(_clean(evaluate_design(design, ctx).model_dump()), indent=1)


def _my_net_rows() -> list[LatencyPointRow]:
    return [LatencyPointRow(source="my profiler run", model="my-net", sku="T4-16GB", partition="full",
                            precision="fp16", framework="tensorrt", batch=b, mean_ms=1.0 + b,
                            throughput=b / (1.0 + b) * 1e3, kind="measured", measured_on="2026-11-27 test host")
            for b in (1, 2, 4, 8)]


def _rewrite(db, body: bytes, header: dict | None = None) -> None:
    """Replace the snapshot's body, with a header that vouches for it (its digest recomputed)."""
    path = snapshot_path(db)
    head = json.loads(path.read_bytes().partition(b"\n")[0]) if header is None else header
    head["sha256"] = hashlib.sha256(body).hexdigest()
    path.write_bytes(json.dumps(head).encode() + b"\n" + body)


# --------------------------------------------------------------------------- the same answers


def test_the_snapshot_holds_exactly_the_rows_the_store_gives(db):
    store = Store(db)
    cold = open_rows(db)  # no snapshot yet: read from the store, and written
    warm = load_snapshot(db)
    assert warm is not None and snapshot_path(db).is_file()
    expected = _all_rows(store)
    assert _all_rows(cold) == expected and _all_rows(warm) == expected
    assert all(expected[name] for name in expected)  # every table has rows: the comparison compares something
    first, again = warm.records("gpus"), warm.records("gpus")
    assert first == again and first[0] is not again[0]  # new dicts each call, as a Store's
    with pytest.raises(StoreError, match="not in the rows snapshot"):
        warm.records("rpc_figures")


@pytest.mark.parametrize("scenario", [DEFAULT_SCENARIO, DPU, ESTIMATED], ids=["default", "dpu", "estimated"])
def test_evaluate_from_the_snapshot_equals_evaluate_from_the_store(db, scenario):
    open_rows(db)
    warm = load_snapshot(db)
    assert warm is not None
    assert _evaluation(warm, scenario) == _evaluation(Store(db), scenario)


def test_the_cli_prints_the_same_cold_and_warm_as_from_the_store(db, tmp_path):
    scenario = tmp_path / "default.json"
    scenario.write_text(json.dumps(DEFAULT_SCENARIO))
    env = dict(os.environ, KNEEPOINT_DB=str(db))

    def run():
        r = subprocess.run([sys.executable, "-m", "engine", "evaluate", str(scenario), "--json"], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        return r.stdout

    cold = run()
    assert load_snapshot(db) is not None  # the cold run left a current snapshot
    stamp = os.stat(snapshot_path(db)).st_mtime_ns
    warm = run()
    assert os.stat(snapshot_path(db)).st_mtime_ns == stamp  # the warm run read it, did not write it again
    assert cold == warm == _evaluation(Store(db), DEFAULT_SCENARIO) + "\n"


def test_the_cost_models_are_the_same_from_the_store_and_the_snapshot_and_those_of_the_cost_rows(db):
    store = Store(db)
    open_rows(db)
    warm = load_snapshot(db)
    expected = sorted({r["model"] for r in store.records("model_costs") if r["model"] is not None})
    assert len(expected) > 10 and "swin-t" in expected  # the seed's cost tables, not an empty list
    assert store.cost_models() == expected
    assert warm.cost_models() == expected and "model_costs" not in warm.decoded  # without decoding the rows
    assert warm.records("model_costs") == store.records("model_costs") and warm.cost_models() == expected


def test_a_default_evaluate_decodes_no_cost_rows_and_an_estimated_one_does(db):
    """Each table is decoded when first asked for: the default scenario's model has measured points, so its
    evaluation never reads model_costs (850 kB of the snapshot) or gpu_specs; a model only the estimator answers
    reads both, and gets the Store's answer."""
    open_rows(db)
    warm = load_snapshot(db)
    assert warm.decoded == frozenset()  # loading checks the digest and the index, decodes no table
    assert _evaluation(warm, DEFAULT_SCENARIO) == _evaluation(Store(db), DEFAULT_SCENARIO)
    assert "model_costs" not in warm.decoded and "gpu_specs" not in warm.decoded
    assert {"gpus", "models", LATENCY} <= warm.decoded  # the check above is of a run that read the snapshot
    assert _evaluation(warm, ESTIMATED) == _evaluation(Store(db), ESTIMATED)
    assert {"model_costs", "gpu_specs"} <= warm.decoded


def test_a_book_from_a_store_reads_the_cost_rows_at_once_so_it_estimates_without_the_connection(db):
    """Only a snapshot's book defers the estimator's tables: a book from a Store may first estimate in a search's
    forked worker, which must not use the parent's DuckDB connection; closing the Store stands in for that."""
    from engine.profiles import ProfileBook

    store = Store(db)
    book = ProfileBook.from_store(store)
    store.close()
    assert book.estimator is not None and "swin-t" in book.estimator.model_names


def test_the_snapshot_is_an_index_line_then_one_line_per_table(db):
    open_rows(db)
    head, body = snapshot_path(db).read_bytes().split(b"\n", 1)
    assert json.loads(head)["version"]["format"] == snap.FORMAT == 2
    index, *lines = body.split(b"\n")
    assert list(json.loads(index)["columns"]) == list(KEYS) and len(lines) == len(KEYS)
    assert json.loads(index)["cost_models"] == Store(db).cost_models()
    assert json.loads(lines[KEYS.index("model_costs")]) == [list(r.values()) for r in Store(db).records("model_costs")]


# --------------------------------------------------------------------------- what makes it stale


def test_importing_a_model_makes_the_snapshot_stale_and_the_next_run_refreshes_it(db):
    open_rows(db)
    before = load_snapshot(db)
    with pytest.raises(Exception, match="my-net"):  # the model is not in the store yet
        _evaluation(before, MY_NET)
    Store(db).add_rows("latency_points", _my_net_rows())
    assert load_snapshot(db) is None  # a user file changed: stale
    rows = open_rows(db)
    assert _evaluation(rows, MY_NET) == _evaluation(Store(db), MY_NET)
    refreshed = load_snapshot(db)
    assert refreshed is not None and _all_rows(refreshed) == _all_rows(Store(db))
    assert _evaluation(refreshed, MY_NET) == _evaluation(Store(db), MY_NET)
    Store(db).clear_user_rows("latency_points")  # and removed again
    assert load_snapshot(db) is None
    assert not [r for r in open_rows(db).latency_records() if r["model"] == "my-net"]


def test_an_edited_seed_table_rebuilds_the_database_and_refreshes_the_snapshot(seed_copy, tmp_path):
    db = tmp_path / "seeded.duckdb"
    open_rows(db, seed_copy)  # builds the database, and the first run already leaves a snapshot
    assert load_snapshot(db, seed_copy) is not None
    prices = seed_copy / "prices_power.csv"
    with open(prices, newline="") as fh:
        header, first, *rest = list(csv.reader(fh))
    old = float(first[header.index("value")])
    first[header.index("value")] = repr(old + 1234.0)
    with open(prices, "w", newline="") as fh:
        csv.writer(fh, lineterminator="\n").writerows([header, first, *rest])
    assert load_snapshot(db, seed_copy) is None
    rows = open_rows(db, seed_copy)
    changed = [r for r in rows.records("prices_power") if (r["item"], r["kind"]) == (first[1], first[2])]
    assert [r["value"] for r in changed] == [old + 1234.0]
    refreshed = load_snapshot(db, seed_copy)
    assert refreshed is not None and refreshed.records("prices_power") == Store(db, seed_copy).records("prices_power")


def test_an_edit_to_the_code_that_shapes_the_rows_makes_the_snapshot_stale(db, tmp_path, monkeypatch):
    assert {p.name for p in snap.CODE_FILES} >= {"__init__.py", "snapshot.py", "records.py"}
    code = tmp_path / "queries.py"  # stands for one of them (the real ones are this checkout's source)
    code.write_text("ORDER = 'model, sku'\n")
    monkeypatch.setattr(snap, "CODE_FILES", (*snap.CODE_FILES, code))
    open_rows(db)
    assert load_snapshot(db) is not None
    code.write_text("ORDER = 'sku, model'\n")
    assert load_snapshot(db) is None


def test_a_snapshot_of_another_database_file_is_not_used(db, tmp_path):
    open_rows(db)
    other = tmp_path / "other.duckdb"
    shutil.copyfile(db, other)
    shutil.copyfile(snapshot_path(db), snapshot_path(other))
    assert load_snapshot(other) is None  # another path, another file
    os.replace(other, db)  # the database replaced by a copy of itself: a new file
    assert load_snapshot(db) is None


# --------------------------------------------------------------------------- damaged files


def _body(db) -> bytes:
    return snapshot_path(db).read_bytes().partition(b"\n")[2]


def _parts(db) -> tuple[dict, list[bytes]]:
    """The snapshot's index and its table lines."""
    index, *lines = _body(db).split(b"\n")
    return json.loads(index), lines


def _rewrite_parts(db, index, lines: list[bytes]) -> None:
    _rewrite(db, b"\n".join([json.dumps(index, separators=(",", ":")).encode(), *lines]))


def _set_line(db, key: str, line: bytes) -> None:
    index, lines = _parts(db)
    lines[KEYS.index(key)] = line
    _rewrite_parts(db, index, lines)


def _model_costs(db) -> list[list]:
    return json.loads(_parts(db)[1][KEYS.index("model_costs")])


def _format_1(db) -> None:
    """The snapshot as format 1 wrote it, of the rows now current: one JSON object of every table's columns and
    rows, its header's version that of format 1."""
    index, lines = _parts(db)
    body = json.dumps({key: {"columns": index["columns"][key], "rows": json.loads(line)}
                       for key, line in zip(KEYS, lines)}, separators=(",", ":")).encode()
    head = json.loads(snapshot_path(db).read_bytes().partition(b"\n")[0])
    head["version"]["format"] = 1
    _rewrite(db, body, head)


def _damage(db, kind: str) -> None:
    path = snapshot_path(db)
    data = path.read_bytes()
    if kind == "deleted":
        path.unlink()
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif kind == "header only":
        path.write_bytes(data.partition(b"\n")[0])
    elif kind == "a flipped byte":
        i = len(data) - 100
        path.write_bytes(data[:i] + bytes([data[i] ^ 0x01]) + data[i + 1:])
    elif kind == "a changed number, digest not redone":
        head, _, body = data.partition(b"\n")
        path.write_bytes(head + b"\n" + body.replace(b",1", b",2", 1))
    elif kind == "a line dropped, digest not redone":
        head, _, body = data.partition(b"\n")
        path.write_bytes(head + b"\n" + body.rpartition(b"\n")[0])
    elif kind == "not JSON":
        path.write_bytes(b"\x80\x81 not json\n{")
    elif kind == "header is a list":
        path.write_bytes(b"[]\n" + _body(db))
    elif kind == "another format":
        head = json.loads(data.partition(b"\n")[0])
        head["version"]["format"] = snap.FORMAT + 1
        _rewrite(db, _body(db), head)
    elif kind == "format 1":
        _format_1(db)
    elif kind == "format 1's body under this format's header":
        head = json.loads(data.partition(b"\n")[0])
        _format_1(db)
        _rewrite(db, _body(db), head)
    elif kind == "a table missing":
        index, lines = _parts(db)
        del index["columns"]["gpus"], lines[0]
        _rewrite_parts(db, index, lines)
    elif kind == "a line missing":
        index, lines = _parts(db)
        _rewrite_parts(db, index, lines[:-1])
    elif kind == "a line too many":
        index, lines = _parts(db)
        _rewrite_parts(db, index, [*lines, b"[]"])
    elif kind == "a renamed column":
        index, lines = _parts(db)
        index["columns"]["gpus"][1] = "name"
        _rewrite_parts(db, index, lines)
    elif kind == "tables in another order":
        index, lines = _parts(db)
        index["columns"] = dict(reversed(index["columns"].items()))
        _rewrite_parts(db, index, lines[::-1])
    elif kind == "cost models unsorted":
        index, lines = _parts(db)
        index["cost_models"].reverse()
        _rewrite_parts(db, index, lines)
    elif kind == "cost models not names":
        index, lines = _parts(db)
        index["cost_models"] = [1, 2]
        _rewrite_parts(db, index, lines)
    elif kind == "the index a list":
        index, lines = _parts(db)
        _rewrite_parts(db, list(index.items()), lines)
    elif kind == "deep nesting":
        _rewrite(db, b"[" * 100_000 + b"]" * 100_000)
    elif kind == "a directory":
        path.unlink()
        path.mkdir()
    # damage a table's own line (the index intact): seen only when that table is decoded
    elif kind == "rows not a list":
        _set_line(db, "models", b'"rows"')
    elif kind == "a short row":
        rows = _model_costs(db)
        rows[5].pop()
        _set_line(db, "model_costs", json.dumps(rows).encode())
    elif kind == "a table of another type":
        _set_line(db, "prices_power", b'{"rows":[1,2,3]}')
    elif kind == "a line not JSON":
        _set_line(db, "gpus", b'[["a",')
    elif kind == "deep nesting in a line":
        _set_line(db, "gpu_specs", b"[" * 100_000 + b"]" * 100_000)
    elif kind == "cost rows of one model fewer than the index says":
        rows = _model_costs(db)
        i = snap._columns("model_costs").index("model")
        _set_line(db, "model_costs", json.dumps([r for r in rows if r[i] != "swin-t"]).encode())
    else:
        raise AssertionError(kind)


DAMAGE = ["deleted", "empty", "truncated", "header only", "a flipped byte", "a changed number, digest not redone",
          "a line dropped, digest not redone", "not JSON", "header is a list", "another format", "format 1",
          "format 1's body under this format's header", "a table missing", "a line missing", "a line too many",
          "a renamed column", "tables in another order", "cost models unsorted", "cost models not names",
          "the index a list", "deep nesting", "a directory"]
#: damage to one table's line, under a digest that matches: found when that table is first decoded
LINE_DAMAGE = ["rows not a list", "a short row", "a table of another type", "a line not JSON",
               "deep nesting in a line", "cost rows of one model fewer than the index says"]


@pytest.mark.parametrize("kind", DAMAGE)
def test_a_damaged_snapshot_is_not_used_and_the_store_answers(db, kind):
    open_rows(db)
    before = snapshot_path(db).read_bytes()
    _damage(db, kind)
    if snapshot_path(db).is_file():
        assert snapshot_path(db).read_bytes() != before  # the damage damaged something
    assert load_snapshot(db) is None
    rows = open_rows(db)
    assert _all_rows(rows) == _all_rows(Store(db))
    assert _evaluation(rows, DEFAULT_SCENARIO) == _evaluation(Store(db), DEFAULT_SCENARIO)
    if kind == "a directory":  # not replaced: nothing is written where a directory is
        assert snapshot_path(db).is_dir() and load_snapshot(db) is None
    else:  # written afresh
        assert load_snapshot(db) is not None and snapshot_path(db).read_bytes() == before


@pytest.mark.parametrize("kind", LINE_DAMAGE)
def test_a_malformed_table_line_is_read_from_the_store_and_the_snapshot_written_afresh(db, kind):
    """A table line that the digest vouches for but that is not the table's rows (only a file written by something
    else can be so) is found when the table is first decoded; the version being still the one it was opened at,
    that table is read from the Store, and the snapshot written again as it should be."""
    open_rows(db)
    before = snapshot_path(db).read_bytes()
    _damage(db, kind)
    assert snapshot_path(db).read_bytes() != before
    rows = load_snapshot(db)
    assert rows is not None  # the index is whole: the table's line is decoded only when asked for
    assert _evaluation(rows, DEFAULT_SCENARIO) == _evaluation(Store(db), DEFAULT_SCENARIO)
    assert _all_rows(rows) == _all_rows(Store(db))
    assert snapshot_path(db).read_bytes() == before  # written afresh
    assert _all_rows(load_snapshot(db)) == _all_rows(Store(db))


def test_a_malformed_table_line_after_the_store_changed_is_a_store_error_naming_the_snapshot(db):
    """Where the store has changed since the snapshot was opened, its rows cannot stand in for the malformed
    table's (the other tables given out are of the version before): a StoreError that names the file, not a
    ValueError; and the next run reads the store."""
    open_rows(db)
    _damage(db, "a short row")
    rows = load_snapshot(db)
    assert rows is not None
    Store(db).add_rows("latency_points", _my_net_rows())
    named = re.escape(str(snapshot_path(db)))
    with pytest.raises(StoreError, match=rf"rows snapshot {named}: its model_costs rows cannot be read"
                                         r".*the store has changed since"):
        rows.records("model_costs")
    assert load_snapshot(db) is None  # stale: the next run reads the store
    assert _all_rows(open_rows(db)) == _all_rows(Store(db))


def test_an_index_that_lists_a_model_without_cost_rows_is_a_store_error_once_they_are_read(db):
    """The cost models are given out before model_costs is decoded; if its rows then show them wrong (a file not
    written by write_snapshot, under a matching digest), the book built on them cannot be mended: a StoreError
    naming the snapshot, which is then written afresh, right."""
    open_rows(db)
    before = snapshot_path(db).read_bytes()
    index, lines = _parts(db)
    index["cost_models"] = sorted([*index["cost_models"], "zz-not-a-model"])
    _rewrite_parts(db, index, lines)
    rows = load_snapshot(db)
    assert "zz-not-a-model" in rows.cost_models()
    with pytest.raises(StoreError, match=rf"rows snapshot {re.escape(str(snapshot_path(db)))}: .*not the store's"):
        rows.records("model_costs")
    assert snapshot_path(db).read_bytes() == before and load_snapshot(db).cost_models() == Store(db).cost_models()


# --------------------------------------------------------------------------- where it cannot be written


def _no_leftovers(directory) -> bool:
    return not [p for p in directory.iterdir() if p.name.endswith(".tmp")]


def test_a_directory_that_refuses_new_files_gets_no_snapshot_and_the_same_answers(db, monkeypatch):
    real_open = open

    def refusing(file, mode="r", *args, **kwargs):  # what creating a file in a read-only directory raises
        if "x" in mode or "w" in mode:
            raise PermissionError(13, "Permission denied", str(file))
        return real_open(file, mode, *args, **kwargs)

    monkeypatch.setattr(snap, "open", refusing, raising=False)
    rows = open_rows(db)
    assert not snapshot_path(db).exists() and _no_leftovers(db.parent)
    assert _evaluation(rows, DEFAULT_SCENARIO) == _evaluation(Store(db), DEFAULT_SCENARIO)


def test_a_rename_that_fails_leaves_no_snapshot_and_no_temporary_file(db, monkeypatch):
    def failing(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(snap.os, "replace", failing)
    rows = open_rows(db)
    assert not snapshot_path(db).exists() and _no_leftovers(db.parent)
    assert _all_rows(rows) == _all_rows(Store(db))


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only directory anyway")
def test_a_read_only_directory_gets_no_snapshot(db):
    Store(db).close()
    db.parent.chmod(0o555)
    try:
        rows = open_rows(db)
        assert not snapshot_path(db).exists()
        assert _evaluation(rows, DEFAULT_SCENARIO) == _evaluation(Store(db), DEFAULT_SCENARIO)
    finally:
        db.parent.chmod(0o755)


# --------------------------------------------------------------------------- concurrent writers


def test_concurrent_writers_never_leave_a_partial_file(db):
    """Writers replace the file whole while a reader reads it: every read finds a whole, current snapshot."""
    store = Store(db)
    version, tables = snap.current_version(db), snap._read(store)
    store.close()
    assert snap.write_snapshot(db, version, tables)
    failures, reads, done = [], [0], threading.Event()

    def write():
        for _ in range(15):
            if not snap.write_snapshot(db, version, tables):
                failures.append("a write failed")

    def read():
        while not done.is_set():
            if load_snapshot(db) is None:
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
    assert _no_leftovers(db.parent) and load_snapshot(db) is not None


def test_the_version_is_worked_out_without_duckdb(db):
    """Nor logging (the store's logger is fetched when it first logs: engine.store.build.store_log)."""
    open_rows(db)
    probe = ("import json, sys\nfrom pathlib import Path\nfrom engine.store.snapshot import load_snapshot\n"
             f"rows = load_snapshot(Path({str(db)!r}))\n"
             "print(json.dumps([rows is not None, 'duckdb' in sys.modules, 'logging' in sys.modules]))")
    r = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == [True, False, False]


def test_the_default_location_is_beside_the_database(tmp_path, monkeypatch):
    monkeypatch.setenv("KNEEPOINT_DB", str(tmp_path / "here.duckdb"))
    open_rows(seed_dir=SEED_DIR)
    assert (tmp_path / "here.duckdb.rows.json").is_file()


def test_the_writer_refuses_rows_a_reader_could_not_take_on_trust(db):
    """Only rows of the snapshot's tables, with their models' columns and each value of its column's SQL type (or
    NULL), are written: the reader checks the digest and the shape, not each value."""
    store = Store(db)
    version, good = snap.current_version(db), snap._read(store)
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
        assert not snap.write_snapshot(db, version, tables)
        assert not snapshot_path(db).exists()
    assert snap.write_snapshot(db, version, good) and load_snapshot(db) is not None
