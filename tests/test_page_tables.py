"""Every table on every page reads as a person expects: headers in words with units (no snake_case), missing
values blank (never 'None' or 'nan'), numbers with the digits the data carry; and the rules behind that
(engine/tables.py)."""

from __future__ import annotations

import json
import math
import re

import pandas as pd
import pytest
from streamlit.dataframe_util import convert_arrow_bytes_to_pandas_df

from engine import tables
from engine.results import CostSummary
from tests.pagetest import open_page
from ui.tables import markdown_table
from ui.text import md

#: page -> buttons pressed (by key) before its tables are read: what it takes for the page to show them
PAGES = {"design.py": (), "compare.py": ("cmp_load",), "search.py": ("srch_run",), "partitioning.py": (),
         "preprocessing.py": (), "rpc.py": (), "tenancy.py": (), "cost.py": (), "profiles.py": (), "report.py": (),
         "papers.py": ()}
#: page -> (the key of its st.tabs, each tab's label): a page that runs only its open tab is read tab by tab
TABS = {"profiles.py": ("prof_view", ["Browse points", "Partitions of a GPU", "Estimator", "Import and export"])}
TOO_MANY_DECIMALS = re.compile(r"\d\.\d{4,}")


def _shown(df):
    """(headers a person sees, the cells' text) of one st.dataframe element."""
    config = json.loads(df.proto.columns or "{}")
    heads = [(config.get(str(c)) or {}).get("label") or str(c) for c in df.value.columns]
    styled = df.proto.arrow_data.styler.display_values
    return heads, (convert_arrow_bytes_to_pandas_df(styled) if styled else None)


@pytest.mark.parametrize("page", list(PAGES))
def test_tables_read_as_words_and_digits(page):
    at = open_page(page)
    for key in PAGES[page]:
        at.button(key=key).click().run()
        assert not at.exception, at.exception
    frames, shown_tables = list(at.main.dataframe), list(at.main.table)
    key, labels = TABS.get(page, (None, []))
    for label in labels[1:]:
        at.session_state[key] = label
        at.run()
        assert not at.exception, at.exception
        frames += list(at.main.dataframe)
        shown_tables += list(at.main.table)
    for table in shown_tables:  # st.table: its headers are the frame's columns and index, its cells text
        shown = table.value
        heads = [str(h) for h in [*shown.columns, *shown.index]]
        assert not [h for h in heads if tables.is_snake(h)], f"{page}: snake_case headers in {heads}"
        assert not {"None", "nan"} & {str(v) for v in shown.to_numpy().ravel()}, f"{page}: 'None' in {heads}"
    assert frames or shown_tables, f"{page} shows no table"
    for df in frames:
        heads, cells = _shown(df)
        snake = [h for h in heads if tables.is_snake(h)]
        assert not snake, f"{page}: snake_case headers {snake}"
        assert cells is not None, f"{page}: a table without its cells formatted ({heads})"
        # the browser draws a missing raw value as 'None' whatever the display text says
        assert not df.value.isna().any().any(), f"{page}: missing values in {heads} would show as 'None'"
        text = [str(v) for v in cells.to_numpy().ravel()]
        assert not {"None", "nan", "NaN", "<NA>"} & set(text), f"{page}: a missing value shown as text in {heads}"
        long = [t for t in text if TOO_MANY_DECIMALS.search(t)]
        assert not long, f"{page}: numbers with more digits than the data carry: {long[:5]}"


def test_headers_come_from_labels_then_unit_suffixes():
    assert tables.header("tco_usd") == CostSummary.LABELS["tco_usd"] == "TCO (USD)"
    assert tables.header("queue_wait_ms") == "queue wait (ms)"
    assert tables.header("sla_bounded_rps") == "SLA-bounded throughput (req/s)"
    assert tables.header("capacity (req/s)") == "capacity (req/s)"  # already words
    # a ratio's unit is in its words: never 'queries per (USD)' or a bare USD
    for ratio in ("queries_per_usd", "queries_per_joule", "images_per_usd"):
        assert not tables.header(ratio).endswith("(USD)"), tables.header(ratio)


def test_cost_units_match_what_each_cost_field_counts():
    """Queries per USD count queries per dollar (unit queries/USD), never dollars; every money field is USD."""
    for field, unit in CostSummary.UNITS.items():
        if field.startswith("queries_per_"):
            assert unit.startswith("queries/"), (field, unit)
        elif field.endswith("_usd"):
            assert unit == "USD", (field, unit)
        label = CostSummary.LABELS[field]
        assert ("(USD)" in label) == (unit == "USD"), (field, label, unit)


def test_digits_follow_the_data():
    assert tables.decimals([1, 2, 300]) == 0
    assert tables.decimals([1.7833, 2.4813]) == 2
    assert tables.decimals([0.30812, 0.5]) == 3
    assert tables.decimals([4942.37, 5057.1]) == 0
    assert tables.cell(None, 2) == "" and tables.cell(math.nan, 2) == ""
    assert tables.cell(math.inf, 2) == "unbounded"
    assert tables.cell(12345.678, 0) == "12,346"
    assert tables.cell(True, 0) == "yes"



def test_a_markdown_table_escapes_every_name_and_text_cell():
    """st.table renders headers, index and text cells as Markdown: a design named like an image link must show as
    typed (the browser test test_a_crafted_name_fetches_nothing_and_reads_as_typed found Compare fetching it)."""
    name = "![x](http://example.invalid/a.png) <img src=x>"
    df = pd.DataFrame({name: ["**bold**", 1.5]}, index=["[link](http://example.invalid)", 2])
    out = markdown_table(df)
    assert list(out.columns) == [md(name)] and "\\[x\\]" in out.columns[0] and "\\<img" in out.columns[0]
    assert list(out.index) == [md("[link](http://example.invalid)"), 2]
    assert out.iloc[0, 0] == md("**bold**") == "\\*\\*bold\\*\\*" and out.iloc[1, 0] == 1.5
    assert list(df.columns) == [name] and df.iloc[0, 0] == "**bold**"  # the input is left unchanged
