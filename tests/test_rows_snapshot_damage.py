"""Damaged rows snapshots (engine.store.snapshot): whatever is wrong with the file, found when it is opened or
when a table's line is first decoded, the Store answers (or, where it cannot, a StoreError names the snapshot),
never a wrong row and never a bare error. The snapshot's layout and its answers are tests/test_rows_snapshot.py's.
"""

from __future__ import annotations

import json
import re

import pytest

from engine.presets import DEFAULT_SCENARIO
from engine.store import Store, StoreError
from engine.store import snapshot as snap
from engine.store.snapshot import KEYS, load_snapshot, open_rows, snapshot_path
from tests.snapshotkit import all_rows, evaluation, my_net_rows, rewrite


def _body(db) -> bytes:
    return snapshot_path(db).read_bytes().partition(b"\n")[2]


def _parts(db) -> tuple[dict, list[bytes]]:
    """The snapshot's index and its table lines."""
    index, *lines = _body(db).split(b"\n")
    return json.loads(index), lines


def _rewrite_parts(db, index, lines: list[bytes]) -> None:
    rewrite(db, b"\n".join([json.dumps(index, separators=(",", ":")).encode(), *lines]))


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
    rewrite(db, body, head)


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
        rewrite(db, _body(db), head)
    elif kind == "format 1":
        _format_1(db)
    elif kind == "format 1's body under this format's header":
        head = json.loads(data.partition(b"\n")[0])
        _format_1(db)
        rewrite(db, _body(db), head)
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
        rewrite(db, b"[" * 100_000 + b"]" * 100_000)
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
def test_a_damaged_snapshot_is_not_used_and_the_store_answers(snapshot_db, kind):
    open_rows(snapshot_db)
    before = snapshot_path(snapshot_db).read_bytes()
    _damage(snapshot_db, kind)
    if snapshot_path(snapshot_db).is_file():
        assert snapshot_path(snapshot_db).read_bytes() != before  # the damage damaged something
    assert load_snapshot(snapshot_db) is None
    rows = open_rows(snapshot_db)
    assert all_rows(rows) == all_rows(Store(snapshot_db))
    assert evaluation(rows, DEFAULT_SCENARIO) == evaluation(Store(snapshot_db), DEFAULT_SCENARIO)
    if kind == "a directory":  # not replaced: nothing is written where a directory is
        assert snapshot_path(snapshot_db).is_dir() and load_snapshot(snapshot_db) is None
    else:  # written afresh
        assert load_snapshot(snapshot_db) is not None and snapshot_path(snapshot_db).read_bytes() == before


@pytest.mark.parametrize("kind", LINE_DAMAGE)
def test_a_malformed_table_line_is_read_from_the_store_and_the_snapshot_written_afresh(snapshot_db, kind):
    """A table line that the digest vouches for but that is not the table's rows (only a file written by something
    else can be so) is found when the table is first decoded; the version being still the one it was opened at,
    that table is read from the Store, and the snapshot written again as it should be."""
    open_rows(snapshot_db)
    before = snapshot_path(snapshot_db).read_bytes()
    _damage(snapshot_db, kind)
    assert snapshot_path(snapshot_db).read_bytes() != before
    rows = load_snapshot(snapshot_db)
    assert rows is not None  # the index is whole: the table's line is decoded only when asked for
    assert evaluation(rows, DEFAULT_SCENARIO) == evaluation(Store(snapshot_db), DEFAULT_SCENARIO)
    assert all_rows(rows) == all_rows(Store(snapshot_db))
    assert snapshot_path(snapshot_db).read_bytes() == before  # written afresh
    assert all_rows(load_snapshot(snapshot_db)) == all_rows(Store(snapshot_db))


def test_a_malformed_table_line_after_the_store_changed_is_a_store_error_naming_the_snapshot(snapshot_db):
    """Where the store has changed since the snapshot was opened, its rows cannot stand in for the malformed
    table's (the other tables given out are of the version before): a StoreError that names the file, not a
    ValueError; and the next run reads the store."""
    open_rows(snapshot_db)
    _damage(snapshot_db, "a short row")
    rows = load_snapshot(snapshot_db)
    assert rows is not None
    Store(snapshot_db).add_rows("latency_points", my_net_rows())
    named = re.escape(str(snapshot_path(snapshot_db)))
    with pytest.raises(StoreError, match=rf"rows snapshot {named}: its model_costs rows cannot be read"
                                         r".*the store has changed since"):
        rows.records("model_costs")
    assert load_snapshot(snapshot_db) is None  # stale: the next run reads the store
    assert all_rows(open_rows(snapshot_db)) == all_rows(Store(snapshot_db))


def test_an_index_that_lists_a_model_without_cost_rows_is_a_store_error_once_they_are_read(snapshot_db):
    """The cost models are given out before model_costs is decoded; if its rows then show them wrong (a file not
    written by write_snapshot, under a matching digest), the book built on them cannot be mended: a StoreError
    naming the snapshot, which is then written afresh, right."""
    open_rows(snapshot_db)
    before = snapshot_path(snapshot_db).read_bytes()
    index, lines = _parts(snapshot_db)
    index["cost_models"] = sorted([*index["cost_models"], "zz-not-a-model"])
    _rewrite_parts(snapshot_db, index, lines)
    rows = load_snapshot(snapshot_db)
    assert "zz-not-a-model" in rows.cost_models()
    where = re.escape(str(snapshot_path(snapshot_db)))
    with pytest.raises(StoreError, match=rf"rows snapshot {where}: .*not the store's"):
        rows.records("model_costs")
    assert snapshot_path(snapshot_db).read_bytes() == before
    assert load_snapshot(snapshot_db).cost_models() == Store(snapshot_db).cost_models()
