"""Saved scenarios: named scenario JSON with author, note and time, kept beside the user's rows.

Like the store's user rows they live in one Parquet file, `<db>-user/saved_scenarios.parquet`
(columns name, author, note, saved_at (ISO 8601, UTC), scenario (JSON text, schema
kneepoint.scenario/1)). Every change takes the directory's file lock (the store's `.lock`), re-reads
the file, and replaces it atomically (temporary file, then rename), so two processes saving at once
lose nothing and a reader never sees a half-written file. A shelf without a directory keeps its rows
in memory (a store opened with user_dir=None).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import threading
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional

import duckdb
from pydantic import BaseModel, ConfigDict

from engine.store.build import StoreError
from engine.store.locking import locked

FILE_NAME = "saved_scenarios.parquet"
NAME_MAX = 80
_COLUMNS = ("name", "author", "note", "saved_at", "scenario")
# a letter or digit first, then letters, digits, spaces and a few punctuation marks: safe in file names and URLs
_NAME = re.compile(r"[^\W_][\w .,:;()+@#&'-]*")
NAME_RULE = (f"1-{NAME_MAX} characters: letters, digits, spaces and . , : ; ( ) + @ # & ' - _, "
             "starting with a letter or digit and not ending in a space")


class ScenarioNameError(StoreError):
    """A saved scenario's name is invalid, taken, or unknown; the message names it."""


class SavedScenario(BaseModel):
    """One saved scenario as listed: its name, who saved it and when, a note, and the scenario JSON."""

    model_config = ConfigDict(frozen=True)

    name: str
    author: str
    note: str
    saved_at: datetime
    scenario: str  # JSON text of the scenario; its `name` equals the saved name


def check_name(name: object, field: str = "name") -> str:
    """The name if it is valid, else ScenarioNameError naming the field and the value."""
    if (not isinstance(name, str) or not 1 <= len(name) <= NAME_MAX or name != name.rstrip()
            or not _NAME.fullmatch(name)):
        raise ScenarioNameError(f"{field}: {name!r} is not a valid scenario name; use {NAME_RULE}")
    return name


def _listing(rows: dict) -> str:
    return ", ".join(sorted(rows, key=str.casefold)) or "none yet"


def _renamed(scenario_json: str, name: str) -> str:
    data = json.loads(scenario_json)
    data["name"] = name
    return json.dumps(data, indent=2)


class ScenarioShelf:
    """Saved scenarios of one user directory (None: in memory only)."""

    def __init__(self, directory: Optional[Path]):
        self.directory = Path(directory) if directory is not None else None
        self._memory: dict[str, SavedScenario] = {}
        self._thread_lock = threading.Lock()

    @property
    def path(self) -> Optional[Path]:
        return None if self.directory is None else self.directory / FILE_NAME

    # -- reads -----------------------------------------------------------------

    def list(self) -> list[SavedScenario]:
        """Every saved scenario, by name."""
        return sorted(self._snapshot().values(), key=lambda s: s.name.casefold())

    def names(self) -> list[str]:
        return [s.name for s in self.list()]

    def get(self, name: str) -> SavedScenario:
        have = self._snapshot()
        if name not in have:
            raise ScenarioNameError(f"no saved scenario is named {name!r}; saved: "
                                    f"{_listing(have)}")
        return have[name]

    # -- writes (under the lock, all or nothing) --------------------------------

    def save(self, scenario, name: Optional[str] = None, author: str = "", note: str = "",
             overwrite: bool = False, now: Optional[datetime] = None) -> SavedScenario:
        """Save a validated Scenario under `name` (default: its own name); refuses a taken name
        unless `overwrite`. The stored scenario carries the saved name."""
        name = check_name(scenario.name if name is None else name)
        text = scenario.model_copy(update={"name": name}).to_json()
        row = SavedScenario(name=name, author=str(author).strip(), note=str(note).strip(), scenario=text,
                            saved_at=(now or datetime.now(timezone.utc)).replace(microsecond=0))
        with self._locked() as rows:
            if name in rows and not overwrite:
                raise ScenarioNameError(f"name: a scenario named {name!r} is already saved; choose another "
                                        "name or overwrite it")
            rows[name] = row
        return row

    def rename(self, old: str, new: str) -> SavedScenario:
        check_name(new, "new name")
        with self._locked() as rows:
            if old not in rows:
                raise ScenarioNameError(f"no saved scenario is named {old!r}; saved: "
                                        f"{_listing(rows)}")
            if new in rows and new != old:
                raise ScenarioNameError(f"new name: a scenario named {new!r} is already saved")
            row = rows.pop(old)
            rows[new] = row.model_copy(update={"name": new, "scenario": _renamed(row.scenario, new)})
            return rows[new]

    def delete(self, name: str) -> None:
        with self._locked() as rows:
            if name not in rows:
                raise ScenarioNameError(f"no saved scenario is named {name!r}; saved: "
                                        f"{_listing(rows)}")
            del rows[name]

    # -- file --------------------------------------------------------------------

    @contextlib.contextmanager
    def _locked(self):
        """Yield the current rows (name -> row) under the lock; write them back if the block succeeds."""
        with self._thread_lock:
            if self.directory is None:
                rows = dict(self._memory)
                yield rows
                self._memory = rows
                return
            with locked(self.directory):  # the same lock file as the store's user rows
                rows = self._read()
                yield rows
                self._write(rows)

    def _snapshot(self) -> dict[str, SavedScenario]:
        """The rows under a shared lock: DuckDB opens the file more than once while reading, so a writer
        replacing it in between would hand it parts of two files."""
        if self.path is None or not self.path.exists():
            return self._read()
        with locked(self.directory, exclusive=False):
            return self._read()

    def _read(self) -> dict[str, SavedScenario]:
        path = self.path
        if path is None:
            return dict(self._memory)
        if not path.exists():
            return {}
        con = duckdb.connect(":memory:")
        try:
            recs = con.execute(f"SELECT {', '.join(_COLUMNS)} FROM read_parquet(?)", [str(path)]).fetchall()
        except duckdb.Error as e:
            reason = str(e).splitlines()[0]  # DuckDB adds the query and a caret on further lines
            raise StoreError(f"the saved scenarios in {path} cannot be read ({reason}); move the file away to "
                             "start afresh") from None
        finally:
            con.close()
        return {r[0]: SavedScenario(**dict(zip(_COLUMNS, r))) for r in recs}

    def _write(self, rows: dict[str, SavedScenario]) -> None:
        path = self.path
        tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
        con = duckdb.connect(":memory:")
        try:
            con.execute("CREATE TABLE s (name VARCHAR, author VARCHAR, note VARCHAR, saved_at VARCHAR, "
                        "scenario VARCHAR)")
            if rows:
                con.executemany("INSERT INTO s VALUES (?, ?, ?, ?, ?)",
                                [(r.name, r.author, r.note, r.saved_at.isoformat(), r.scenario)
                                 for r in rows.values()])
            quoted = str(tmp).replace("'", "''")
            con.execute(f"COPY (SELECT * FROM s ORDER BY name) TO '{quoted}' (FORMAT parquet)")
            os.replace(tmp, path)
        except (duckdb.Error, OSError) as e:
            reason = str(e).splitlines()[0]
            raise StoreError(f"the saved scenarios could not be written to {path} ({reason}); nothing changed") from None
        finally:
            con.close()
            tmp.unlink(missing_ok=True)
