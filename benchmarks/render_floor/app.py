"""The render floor: what Streamlit alone costs a first render on this machine, for benchmarks/page_first_render.py.

A bare app shaped like Kneepoint's app.py (wide layout, st.navigation in the sidebar, the same .streamlit settings)
whose pages show the least a Kneepoint page shows before its render marker: a title and a metric, and a title, a
metric and one 3-point Plotly chart (which makes the browser fetch Streamlit's Plotly script). No engine, no
database: a page of ours can be no faster than the floor page of its kind, and the benchmark prints each page's
excess over it.
"""

import streamlit as st

st.set_page_config(page_title="Floor", layout="wide")
st.navigation([
    st.Page("metric.py", title="Metric", url_path="floor-metric", default=True),
    st.Page("chart.py", title="Chart", url_path="floor-chart"),
], position="sidebar").run()
