"""Every table a page shows goes through show(): headers in words with units, numbers with the digits the data
carry, missing values blank (engine/tables.py decides each of these; this module only hands them to Streamlit).

The data keep the engine's column names, so what a test or a download reads is unchanged; the header a person
sees is the column_config label.
"""

from __future__ import annotations

import hashlib
import pickle
from typing import Any, Optional

import pandas as pd
import streamlit as st

from engine import tables
from ui.text import md

#: beyond this many cells a table is shown with column formats instead of per-cell text (pandas' Styler
#: renders every cell, which costs seconds on the Search page's list of every design)
STYLED_CELLS = 20_000


def frame(data: Any) -> pd.DataFrame:
    return data if isinstance(data, pd.DataFrame) else pd.DataFrame(data)


#: width (px) a table may take before its columns shrink: the main column of a wide page at 1400 px
FIT_PX = 940
CHAR_PX, PAD_PX, MAX_TEXT_PX = 7.5, 26, 380


def widths(headers: list[str], cells: list[list[str]], fit: int = FIT_PX) -> list[int]:
    """Pixel widths that show each column's header and longest cell (long text capped), shrunk where they would
    not fit in `fit`: first the part of a header wider than its cells, then nothing more (the table scrolls)."""
    need = [min(MAX_TEXT_PX, PAD_PX + CHAR_PX * max([len(h), *map(len, c)])) for h, c in zip(headers, cells)]
    floor = [min(MAX_TEXT_PX, PAD_PX + CHAR_PX * max([min(len(h), 10), *map(len, c)])) for h, c in zip(headers, cells)]
    spare = sum(need) - fit
    room = sum(n - f for n, f in zip(need, floor))
    if spare > 0 and room > 0:  # every column gives up the same share of its header-only width
        share = min(1.0, spare / room)
        need = [n - share * (n - f) for n, f in zip(need, floor)]
    return [int(round(n)) for n in need]


def _config(df: pd.DataFrame, overrides: Optional[dict]) -> dict:
    heads = [tables.header(str(col)) for col in df.columns]
    sample = df.head(500)  # widths from the first rows: formatting every cell of a long list costs seconds
    texts = [list(map(tables.formatter(sample[col]), sample[col])) for col in df.columns]  # one formatter a column
    config = {col: st.column_config.Column(head, width=w, help=head)
              for col, head, w in zip(df.columns, heads, widths(heads, texts))}
    config.update(overrides or {})
    return config


#: tables whose drawn element the process keeps (a few of every page's, a few MB in all)
DRAWN_TABLES = 128


def show(data: Any, key: str, *, column_order: Optional[list] = None, column_config: Optional[dict] = None,
         **kwargs) -> None:
    """st.dataframe of `data` (a DataFrame, list of dicts or dict of lists) with readable headers and cells.

    Formatting a table (pandas' Styler, the per-cell text Streamlit sends beside the data) costs tens of milliseconds
    a table, on every rerun; the drawn element is kept per its inputs (a digest of the pickled arguments: equal
    bytes, equal table) and replayed by st.cache_data on a rerun that did not change it."""
    digest = hashlib.blake2b(pickle.dumps((data, key, column_order, column_config, sorted(kwargs.items())),
                                          protocol=pickle.HIGHEST_PROTOCOL), digest_size=20).hexdigest()
    _draw(digest, data, key, column_order, column_config, kwargs)


@st.cache_data(max_entries=DRAWN_TABLES, show_spinner=False)
def _draw(digest: str, _data: Any, key: str, _column_order: Optional[list], _column_config: Optional[dict],
          _kwargs: dict) -> None:
    """Draw one table (st.cache_data keeps the element and replays it for the same `digest`)."""
    _dataframe(_data, key, column_order=_column_order, column_config=_column_config, **_kwargs)


def _dataframe(data: Any, key: str, *, column_order: Optional[list] = None, column_config: Optional[dict] = None,
               **kwargs) -> None:
    df = frame(data)
    if column_order is not None:
        df = df[[c for c in column_order if c in df.columns]]
    config = _config(df, column_config)
    # Streamlit draws a missing value as 'None' whatever its display text says: a column with gaps is shown
    # as its formatted text (blank gaps), numbers kept right-aligned
    gaps = [col for col in df.columns if df[col].isna().any()]
    if gaps:
        df = df.copy()
        for col in gaps:
            numeric = pd.api.types.is_numeric_dtype(df[col]) or all(
                tables.is_number(v) for v in df[col] if not pd.isna(v))
            df[col] = df[col].map(tables.formatter(df[col]))
            if numeric and col not in (column_config or {}):
                config[col] = st.column_config.Column(tables.header(str(col)), alignment="right",
                                                      width=config[col]["width"], help=config[col]["help"])
    if df.size <= STYLED_CELLS:
        shown: Any = df.style.format({col: tables.formatter(df[col]) for col in df.columns}, na_rep="")
    else:  # a large table: a printf format per numeric column (missing numbers still show as empty)
        shown = df
        for col in df.columns:
            if pd.api.types.is_numeric_dtype(df[col]) and not pd.api.types.is_bool_dtype(df[col]):
                places = tables.decimals(df[col].tolist())
                config[col] = st.column_config.NumberColumn(tables.header(str(col)), format=f"%.{places}f")
    st.dataframe(shown, hide_index=True, key=key, column_config=config, **kwargs)


def text_table(data: Any) -> pd.DataFrame:
    """A small table for st.table: headers (and a text index's names) in words, every cell formatted as text."""
    df = frame(data)
    out = pd.DataFrame({tables.header(str(col)): df[col].map(tables.formatter(df[col])) for col in df.columns})
    out.index = [tables.header(str(i)) if isinstance(i, str) else i for i in df.index]
    return out


def markdown_table(df: pd.DataFrame) -> pd.DataFrame:
    """`df` ready for st.table, which renders its headers, index and text cells as Markdown: each of them escaped
    (ui.text.md), so a design's name or a user's model name shows as typed and an image link in it fetches nothing."""
    out = df.map(lambda v: md(v) if isinstance(v, str) else v)
    out.columns = [md(col) for col in df.columns]
    out.index = [md(i) if isinstance(i, str) else i for i in df.index]
    return out
