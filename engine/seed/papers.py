"""The seed papers' headline results as data: data/seed/paper_results.csv, one row per published number.

Each row names its paper, where in the paper it is (figure, table or section), the quantity in words, the
value and unit as published, and a short quote it can be found by. The reproduction registry
(engine.reproduce.registry) has one entry per row; the CSV is read with the csv module (no pandas), so
`python -m engine reproduce --help` stays cheap.
"""

import csv
import functools
import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from engine.errors import KneepointError

#: the papers by key, with their file in shared/seeds
PAPERS: dict[str, str] = {
    "preba": "preba-mig-preprocessing-batching",
    "paris-elsa": "paris-elsa-mig-partitioning-scheduling",
    "gpu-primitives": "gpu-runtime-primitives-spatial-sharing",
    "eif": "eif-fpga-inference-as-a-service",
    "splitrpc": "splitrpc-control-data-path-rpc",
}
RESULTS_CSV = Path(__file__).resolve().parents[2] / "data" / "seed" / "paper_results.csv"
COLUMNS = ("id", "paper", "where", "quantity", "value", "unit", "quote", "note")


class PaperResultsError(KneepointError):
    """A bad paper_results.csv (a missing column, a duplicate id, an unknown paper); the message says which."""


class PaperResult(BaseModel):
    """One published headline number."""

    model_config = ConfigDict(frozen=True)

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    paper: str
    where: str = Field(min_length=1)
    quantity: str = Field(min_length=1)
    value: float
    unit: str = Field(min_length=1)
    quote: str = Field(min_length=1)
    note: str = ""

    @property
    def figures(self) -> frozenset[str]:
        """The figures and tables `where` names ('fig 8', 'table iv'), else its section: what a fit was fitted on."""
        return figures_of(self.where)


_FIGURE = re.compile(r"\b(fig(?:ure)?\.?\s*\d+[a-z]?|table\s+[ivx\d]+)", re.I)


def figures_of(where: str) -> frozenset[str]:
    """Normalised figure/table names in `where` ('Sec 6.2, Fig 8' -> {'fig 8'}); the section when it names none."""
    found = {re.sub(r"^fig(?:ure)?\.?\s*", "fig ", m.group(1).lower()).rstrip("ab") for m in _FIGURE.finditer(where)}
    found = {re.sub(r"\s+", " ", f) for f in found}
    return frozenset(found or {where.strip().lower()})


def read_paper_results(path: Path = RESULTS_CSV) -> tuple[PaperResult, ...]:
    """Every row, validated: the columns as COLUMNS, unique ids, a known paper."""
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        if tuple(reader.fieldnames or ()) != COLUMNS:
            raise PaperResultsError(f"{path.name}: columns must be {', '.join(COLUMNS)}; got {reader.fieldnames}")
        rows = [PaperResult(**row) for row in reader]
    seen: set[str] = set()
    for r in rows:
        if r.id in seen:
            raise PaperResultsError(f"{path.name}: id {r.id!r} appears twice")
        if r.paper not in PAPERS:
            raise PaperResultsError(f"{path.name}: {r.id}: paper {r.paper!r} is unknown; valid: {', '.join(PAPERS)}")
        seen.add(r.id)
    return tuple(rows)


@functools.lru_cache(maxsize=1)
def paper_results() -> dict[str, PaperResult]:
    """The committed CSV's rows by id (read once)."""
    return {r.id: r for r in read_paper_results()}
