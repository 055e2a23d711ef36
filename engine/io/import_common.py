"""What every importer shares (engine.io.importers, engine.io.triton): the one error, the result, reading a file
or an upload's bytes, and strict UTF-8 decoding."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Union

from engine.errors import KneepointError

Source = Union[str, Path, bytes]


class ImportFailed(KneepointError):
    """A file that cannot be imported; the one-line message names file, line/row and field. Nothing was added."""

    def __init__(self, message: str):
        super().__init__(" ".join(str(message).splitlines()))


@dataclass
class ImportResult:
    """What an import added (or, from a parser, would add): rows per table, and remarks for the user: `notes`
    say what was left out or derived, `warnings` what the user should check (a model name the app did not know)."""

    where: str
    rows: dict[str, list] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        return {t: len(r) for t, r in self.rows.items()}

    def summary(self) -> str:
        added = ", ".join(f"{n} {t}" for t, n in self.counts().items())
        return f"added {added or 'nothing'} from {self.where}"


def read_bytes(source: Source, name: Optional[str] = None) -> tuple[bytes, str]:
    """The file's bytes and the name errors use (the upload's name, else the path's file name)."""
    if isinstance(source, bytes):
        return source, name or "upload"
    path = Path(source)
    try:
        return path.read_bytes(), name or path.name
    except OSError as e:
        raise ImportFailed(f"{name or path.name}: cannot be read ({e.strerror or e})") from None


def decode(data: bytes, where: str) -> str:
    """Strict UTF-8 (a leading BOM is dropped); an empty file is refused."""
    if not data.strip():
        raise ImportFailed(f"{where}: the file is empty")
    try:
        return data.decode("utf-8-sig", errors="strict")
    except UnicodeDecodeError as e:
        raise ImportFailed(f"{where}: not UTF-8 text (byte 0x{data[e.start]:02x} at offset {e.start}); "
                           "save it as UTF-8 CSV") from None
