"""Profiles: browse the latency points in the store, plot them against batch size, export them."""

import streamlit as st

from engine.charts import latency_throughput_vs_batch
from engine.records import Provenance
from ui.session import get_store

store = get_store()
st.title("Latency profiles")
st.caption("Measured, published and derived latency-vs-batch points in the profile store, with their sources.")

models = store.distinct("latency_points", "model")
skus = store.distinct("latency_points", "sku")
default_model = [m for m in ("resnet50",) if m in models] or models[:1]

c1, c2, c3, c4 = st.columns(4)
sel_models = c1.multiselect("Model", models, default=default_model, key="prof_model")
sel_skus = c2.multiselect("GPU", skus, key="prof_gpu", placeholder="all GPUs")
partitions = store.distinct("latency_points", "partition")
sel_parts = c3.multiselect("Partition", partitions, key="prof_partition", placeholder="all partitions")
sel_kinds = c4.multiselect("Provenance", [k.value for k in Provenance], key="prof_kind", placeholder="any")

points = store.latency_points(model=sel_models or None, sku=sel_skus or None, partition=sel_parts or None,
                              kind=sel_kinds or None)
if points.empty:
    st.warning("No latency points match these filters. Clear a filter to see more.")
    st.stop()

c5, c6 = st.columns(2)
show_tails = c5.toggle("Show published tail percentiles", value=True, key="prof_tails")
log_latency = c6.toggle("Log latency axis", value=False, key="prof_loglat")
n_series = points.groupby(["model", "sku", "partition", "precision", "framework", "input_len"],
                          dropna=False).ngroups
st.plotly_chart(latency_throughput_vs_batch(points, tails=show_tails, log_latency=log_latency), key="prof_chart")
st.caption(f"{len(points)} points in {n_series} series. Solid lines: mean latency; dotted: published "
           "tail percentiles (p50/p90/p95/p99). Marker shape gives provenance.")

st.subheader("Points")
cols = ["model", "sku", "partition", "precision", "framework", "batch", "input_len", "mean_ms", "p50_ms",
        "p90_ms", "p95_ms", "p99_ms", "throughput", "kind", "source", "measured_on", "note"]
st.dataframe(points[cols], hide_index=True, key="prof_table",
             column_config={"throughput": st.column_config.NumberColumn("throughput (items/s)", format="%.1f"),
                            "mean_ms": st.column_config.NumberColumn("mean (ms)", format="%.3f")})
st.download_button("Export these points as CSV", points.to_csv(index=False).encode(), "latency_points.csv",
                   "text/csv", key="prof_export")
