"""Saved scenarios: named scenario JSON with author, note and time, kept beside the user's rows.

Like the store's user rows they live in one Parquet file, `<db>-user/saved_scenarios.parquet`
(columns name, author, note, saved_at (ISO 8601, UTC), scenario (JSON text, schema
kneepoint.scenario/1), owner). A hosted app passes each write an owner token (kept in the visitor's
session): the scenario records a hash of it, and only the same token may overwrite, rename or delete it;
everyone may list and load. Locally (the CLI, `make run`) no token is passed and anyone may change any.
Names, authors, notes, the scenario's JSON and the number saved are capped (the constants below).

Every change takes the directory's file lock (the store's `.lock`), re-reads
the file, and replaces it atomically (temporary file, then rename), so two processes saving at once
lose nothing and a reader never sees a half-written file. A shelf without a directory keeps its rows
in memory (a store opened with user_dir=None). DuckDB is imported by the functions that use it (see
engine.store).
"""

import contextlib
import hashlib
import json
import os
import re
import threading
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional

from pydantic import BaseModel, ConfigDict

from engine.store.build import StoreError
from engine.store.locking import locked

FILE_NAME = "saved_scenarios.parquet"
#: a name fits a selectbox, a file name and a URL
NAME_MAX = 80
#: an author is a name or a handle
AUTHOR_MAX = 80
#: a note is a sentence or two for the next reader, not a document (20 MB notes were accepted before)
NOTE_MAX = 2_000
#: a scenario is a few kB; an inline trace longer than this belongs in a file, not on the shared shelf
SCENARIO_MAX_BYTES = 512 * 1024
#: every change rewrites the one file and the Report page lists them all
SAVED_MAX = 500
#: in a hosted app one visitor may not take the whole shelf
SAVED_PER_OWNER_MAX = 50
_COLUMNS = ("name", "author", "note", "saved_at", "scenario", "owner")
# a letter or digit first, then letters, digits, spaces and a few punctuation marks: safe in file names and URLs
_NAME = re.compile(r"[^\W_][\w .,:;()+@#&'-]*")
NAME_RULE = (f"1-{NAME_MAX} characters: letters, digits, spaces and . , : ; ( ) + @ # & ' - _, "
             "starting with a letter or digit and not ending in a space")


class ScenarioNameError(StoreError):
    """A saved scenario's name is invalid, taken, or unknown; the message names it."""


class ScenarioLimitError(StoreError):
    """A saved scenario would exceed a cap (note, author, size, how many); the message names the limit."""


class ScenarioOwnerError(StoreError):
    """In a hosted app, a saved scenario may be changed only by the session that saved it."""


def owner_id(token: str) -> str:
    """What the shelf records for an owner token: a hash, so the shared file never holds the token itself."""
    return hashlib.sha256(token.encode()).hexdigest()[:32]


class SavedScenario(BaseModel):
    """One saved scenario as listed: its name, who saved it and when, a note, and the scenario JSON."""

    model_config = ConfigDict(frozen=True)

    name: str
    author: str
    note: str
    saved_at: datetime
    scenario: str  # JSON text of the scenario; its `name` equals the saved name
    owner: str = ""  # owner_id() of the hosted session that saved it; "" when saved locally

    def owned_by(self, token: Optional[str]) -> bool:
        """True if `token` (a hosted session's owner token) may change this scenario."""
        return bool(token) and self.owner == owner_id(token)


def check_name(name: object, field: str = "name") -> str:
    """The name if it is valid, else ScenarioNameError naming the field and the value."""
    if (not isinstance(name, str) or not 1 <= len(name) <= NAME_MAX or name != name.rstrip()
            or not _NAME.fullmatch(name)):
        raise ScenarioNameError(f"{field}: {name!r} is not a valid scenario name; use {NAME_RULE}")
    return name


def _listing(rows: dict) -> str:
    return ", ".join(sorted(rows, key=str.casefold)) or "none yet"


def _capped(text: str, limit: int, field: str) -> str:
    if len(text) > limit:
        raise ScenarioLimitError(f"{field}: {len(text):,} characters is more than the {limit:,} allowed")
    return text


def _check_owner(row: "SavedScenario", owner: Optional[str], action: str) -> None:
    """Locally (no owner token) anyone may change any scenario; in a hosted app only the session that saved it."""
    if owner is None or row.owned_by(owner):
        return
    who = "another session" if row.owner else "someone outside this hosted app"
    raise ScenarioOwnerError(f"{row.name!r} was saved by {who}; only its owner may {action} it (save a copy "
                             "under another name)")


def _check_room(rows: dict, owner: str) -> None:
    """Refuse a new scenario when the shelf, or in a hosted app this owner's part of it, is full."""
    if len(rows) >= SAVED_MAX:
        raise ScenarioLimitError(f"the shelf already holds {SAVED_MAX} saved scenarios, the most it may; delete "
                                 "some first")
    if owner and sum(r.owner == owner for r in rows.values()) >= SAVED_PER_OWNER_MAX:
        raise ScenarioLimitError(f"this session has saved {SAVED_PER_OWNER_MAX} scenarios, the most one session "
                                 "may; delete some of yours first")


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

    def names(self) -> "list[str]":  # quoted: `list` here is the method above
        return [s.name for s in self.list()]

    def get(self, name: str) -> SavedScenario:
        have = self._snapshot()
        if name not in have:
            raise ScenarioNameError(f"no saved scenario is named {name!r}; saved: "
                                    f"{_listing(have)}")
        return have[name]

    # -- writes (under the lock, all or nothing) --------------------------------

    def save(self, scenario, name: Optional[str] = None, author: str = "", note: str = "",
             overwrite: bool = False, now: Optional[datetime] = None, owner: Optional[str] = None) -> SavedScenario:
        """Save a validated Scenario under `name` (default: its own name); refuses a taken name
        unless `overwrite`. The stored scenario carries the saved name. `owner` is a hosted session's token:
        the scenario records it, and a taken name is overwritten only by the same token."""
        name = check_name(scenario.name if name is None else name)
        author, note = _capped(str(author).strip(), AUTHOR_MAX, "author"), _capped(str(note).strip(), NOTE_MAX, "note")
        text = scenario.model_copy(update={"name": name}).to_json()
        if len(text.encode()) > SCENARIO_MAX_BYTES:
            raise ScenarioLimitError(f"scenario: {len(text.encode()) / 1024:.0f} kB of JSON is more than the "
                                     f"{SCENARIO_MAX_BYTES // 1024} kB a saved scenario may be")
        row = SavedScenario(name=name, author=author, note=note, scenario=text,
                            owner=owner_id(owner) if owner else "",
                            saved_at=(now or datetime.now(timezone.utc)).replace(microsecond=0))
        with self._locked() as rows:
            if name in rows:
                if not overwrite:
                    raise ScenarioNameError(f"name: a scenario named {name!r} is already saved; choose another "
                                            "name or overwrite it")
                _check_owner(rows[name], owner, "overwrite")
                if owner is None:  # a local overwrite leaves a hosted owner in charge of it
                    row = row.model_copy(update={"owner": rows[name].owner})
            else:
                _check_room(rows, row.owner)
            rows[name] = row
        return row

    def rename(self, old: str, new: str, owner: Optional[str] = None) -> SavedScenario:
        """Rename a saved scenario (with a hosted `owner` token: only one that token saved)."""
        check_name(new, "new name")
        with self._locked() as rows:
            if old not in rows:
                raise ScenarioNameError(f"no saved scenario is named {old!r}; saved: "
                                        f"{_listing(rows)}")
            _check_owner(rows[old], owner, "rename")
            if new in rows and new != old:
                raise ScenarioNameError(f"new name: a scenario named {new!r} is already saved")
            row = rows.pop(old)
            rows[new] = row.model_copy(update={"name": new, "scenario": _renamed(row.scenario, new)})
            return rows[new]

    def delete(self, name: str, owner: Optional[str] = None) -> None:
        """Delete a saved scenario (with a hosted `owner` token: only one that token saved)."""
        with self._locked() as rows:
            if name not in rows:
                raise ScenarioNameError(f"no saved scenario is named {name!r}; saved: "
                                        f"{_listing(rows)}")
            _check_owner(rows[name], owner, "delete")
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
        import duckdb  # lazy: see the module docstring

        path = self.path
        if path is None:
            return dict(self._memory)
        if not path.exists():
            return {}
        con = duckdb.connect(":memory:")
        try:
            have = {r[0] for r in con.execute("DESCRIBE SELECT * FROM read_parquet(?)", [str(path)]).fetchall()}
            # files written before a column existed read it as empty (the owner: saved locally)
            select = ", ".join(c if c in have else f"'' AS {c}" for c in _COLUMNS)
            recs = con.execute(f"SELECT {select} FROM read_parquet(?)", [str(path)]).fetchall()
        except duckdb.Error as e:
            reason = str(e).splitlines()[0]  # DuckDB adds the query and a caret on further lines
            raise StoreError(f"the saved scenarios in {path} cannot be read ({reason}); move the file away to "
                             "start afresh") from None
        finally:
            con.close()
        return {r[0]: SavedScenario(**dict(zip(_COLUMNS, r))) for r in recs}

    def _write(self, rows: dict[str, SavedScenario]) -> None:
        import duckdb  # lazy: see the module docstring

        path = self.path
        tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
        con = duckdb.connect(":memory:")
        try:
            con.execute("CREATE TABLE s (name VARCHAR, author VARCHAR, note VARCHAR, saved_at VARCHAR, "
                        "scenario VARCHAR, owner VARCHAR)")
            if rows:
                con.executemany("INSERT INTO s VALUES (?, ?, ?, ?, ?, ?)",
                                [(r.name, r.author, r.note, r.saved_at.isoformat(), r.scenario, r.owner)
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
