"""Count, mean and quantiles of in-memory columns (the simulator's per-request records), by DuckDB's aggregates.

No table of the store is read or written: an in-memory DuckDB connection per call. It lives in engine.store because
only this package imports DuckDB (lazily, as everywhere here: see engine.store's docstring).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from engine.store.build import StoreError

if TYPE_CHECKING:
    import pandas as pd


def summarize(columns: dict, value: str, by: Optional[str] = None,
              quantiles: tuple[float, ...] = (0.5, 0.95, 0.99), total: bool = False) -> pd.DataFrame:
    """Count, mean and quantiles of column `value` per group of column `by` (one group if None), over
    in-memory columns such as the simulator's per-request records (numpy arrays, no table is
    written); `total` adds a row over all groups, with grp null, first. Quantiles interpolate
    linearly, as numpy's default. Columns: grp, n, mean, q<quantile>."""
    import duckdb  # lazy: see the module docstring

    names = [value] + ([by] if by else [])
    for c in names:
        if c not in columns or not str(c).replace("_", "a").isalnum():
            raise StoreError(f"no column {c!r} among {', '.join(columns)}")
    if not quantiles or any(not 0 <= float(q) <= 1 for q in quantiles):
        raise StoreError(f"quantiles must lie in [0, 1], got {quantiles}")
    import pandas as pd  # heavy (~0.3 s): loaded by the callers that want a DataFrame only

    frame = pd.DataFrame({c: columns[c] for c in names})
    group = f'"{by}"' if by else "0"
    qs = ", ".join(repr(float(q)) for q in quantiles)
    con = duckdb.connect(":memory:")
    try:
        con.register("records", frame)
        out = con.execute(f'SELECT {group} AS grp, count(*) AS n, avg("{value}") AS mean, '
                          f'quantile_cont("{value}", [{qs}]) AS q FROM records GROUP BY '
                          + (f'GROUPING SETS (({group}), ())' if total and by else "grp")
                          + " ORDER BY grp NULLS FIRST").df()
    finally:
        con.close()
    qcols = pd.DataFrame(out.pop("q").tolist(), columns=[f"q{float(q):g}" for q in quantiles], index=out.index)
    return pd.concat([out, qcols], axis=1)
