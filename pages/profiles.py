"""Profiles: browse latency points, compare every partition of a GPU, import and export profiles."""

import hashlib

import streamlit as st

from engine.charts.profiles import latency_throughput_vs_batch, partition_comparison
from engine.errors import KneepointError
from engine.io.exporters import export_bytes, frame_csv_bytes
from engine.io.importers import IMPORT_FORMATS, ImportFailed, import_upload
from engine.seed.records import TABLES
from engine.seed.reader import SeedError
from engine.store import USER_TABLES, StoreError
from ui.figures import cached_figure
from ui.profiles_state import browse_points, calibration_view, loo_view, onnx_view, partition_view
from ui.session import get_book, get_store, hosting
from ui.text import md
from engine.vocab import Provenance
from ui.tables import show as show_table
from ui.gate import guard_page

guard_page()  # before anything else: the page may run without app.py (ui/gate.py)


def _sentence(text: str) -> str:
    """`text` with a capital first letter; the rest (file and model names) as it is."""
    return text[:1].upper() + text[1:]


store = get_store()
st.title("Latency profiles")
st.caption("Measured, published and derived latency-vs-batch points, their knees, and what each MIG slice "
           "of a GPU looks like.")
# Only the open tab runs (a rerun used to redraw all four: the partitions chart and five tables nobody was looking
# at); its widgets keep their values while another tab is open (persist_state="page").
TABS = {"Browse points": "browse", "Partitions of a GPU": "slices", "Estimator": "estimator",
        "Import and export": "io"}
tabs = dict(zip(TABS.values(), st.tabs(list(TABS), key="prof_view", on_change="rerun")))
KEEP = "page"


def browse_tab():
    models = store.distinct("latency_points", "model")
    skus = store.distinct("latency_points", "sku")
    default_model = [m for m in ("resnet50",) if m in models] or models[:1]
    c1, c2, c3, c4 = st.columns(4)
    sel_models = c1.multiselect("Model", models, default=default_model, key="prof_model", persist_state=KEEP)
    sel_skus = c2.multiselect("GPU", skus, key="prof_gpu", persist_state=KEEP, placeholder="all GPUs")
    sel_parts = c3.multiselect("Partition", store.distinct("latency_points", "partition"), key="prof_partition",
                               persist_state=KEEP,
                               placeholder="all partitions")
    sel_kinds = c4.multiselect("Provenance", [k.value for k in Provenance], key="prof_kind", persist_state=KEEP,
                               placeholder="any")
    c5, c6, c7 = st.columns(3)
    show_tails = c5.toggle("Show published tail percentiles", value=True, key="prof_tails", persist_state=KEEP)
    log_latency = c6.toggle("Log latency axis", value=False, key="prof_loglat", persist_state=KEEP)
    show_knees = c7.toggle("Mark knees (p95)", value=True, key="prof_knees", persist_state=KEEP)

    points, all_knees, n_series = browse_points(sel_models, sel_skus, sel_parts, sel_kinds)
    if points.empty:
        st.warning("No latency points match these filters. Clear a filter to see more.")
    else:
        knees = all_knees if show_knees else None
        st.plotly_chart(cached_figure(latency_throughput_vs_batch, points, tails=show_tails, log_latency=log_latency,
                                      knees=knees), key="prof_chart")
        st.caption(f"{len(points)} points in {n_series} series. Solid lines: mean latency; dotted: published tail "
                   "percentiles. Marker shape gives provenance. Stars: Batch_knee and Time_knee (p95) by the "
                   "utilization rule (first batch reaching 80% of saturated throughput, PARIS) and by the curve "
                   "rule (Kneedle on p95 latency vs throughput, PREBA).")
        if knees is not None and len(knees):
            with st.expander("Knees of each series"):
                show_table(knees, key="prof_knee_table")
        st.subheader("Points")
        cols = ["model", "sku", "partition", "precision", "framework", "batch", "input_len", "mean_ms", "p50_ms",
                "p90_ms", "p95_ms", "p99_ms", "throughput", "kind", "source", "measured_on", "note"]
        show_table(points[cols], key="prof_table", column_config={
            "throughput": st.column_config.NumberColumn("throughput (items/s)", format="%.1f"),
            "mean_ms": st.column_config.NumberColumn("mean (ms)", format="%.3f")})
        st.download_button("Export these points as CSV", frame_csv_bytes(points), "latency_points.csv",
                           "text/csv", key="prof_export")


def slices_tab():
    book = get_book()
    gpus = [g.sku for g in book.catalog.gpus]
    models_all = sorted(book.model_names)
    c1, c2, c3, c4 = st.columns(4)
    s_model = c1.selectbox("Model", models_all, index=models_all.index("resnet50") if "resnet50" in models_all else 0,
                           key="slice_model", persist_state=KEEP)
    s_gpu = c2.selectbox("GPU", gpus, index=gpus.index("A100-SXM4-80GB") if "A100-SXM4-80GB" in gpus else 0,
                         key="slice_gpu", persist_state=KEEP)
    s_parts = c3.multiselect("Partitions", book.partitions(s_gpu), key="slice_parts", persist_state=KEEP,
                             placeholder="all partitions")
    s_pct = c4.selectbox("Tail percentile", [50, 90, 95, 99], index=2, key="slice_pct", persist_state=KEEP)
    cross = st.toggle("Allow cross-GPU derivation (scale another GPU's curve by SM count)", value=False,
                      key="slice_cross", persist_state=KEEP)
    view = partition_view(s_model, s_gpu, s_parts, percentile=s_pct, cross_gpu=cross)
    if view.summary.empty:
        st.error("No partition of this GPU can be answered for this model: "
                 + "; ".join(f"{p}: {why}" for p, why in list(view.unavailable.items())[:1]))
    else:
        st.plotly_chart(cached_figure(partition_comparison, view.curves, view.summary, view.percentile),
                        key="slice_chart")
        st.caption("Partitions without their own points are derived from a reference partition with the slice law "
                   "t(b; s) = t0 + (b/s + h)/T (s = SM ratio), only up to the batch equivalent to the reference's "
                   "largest measured batch and within the memory limit. Where the GPU has no points of this model "
                   "at all, the curve is estimated from the model's operator costs and the GPU's peak rates "
                   "(Estimator tab), with a shaded band of its expected error. Dashed: derived or estimated. "
                   "Stars: Batch_knee by the utilization rule.")
        show_table(view.summary, key="slice_table", column_config={
            "fit_rms_rel_error": st.column_config.NumberColumn("fit RMS rel. error", format="percent"),
            "expected_rel_error": st.column_config.NumberColumn("estimate's expected error", format="percent"),
            "batch1_ms": st.column_config.NumberColumn("batch-1 latency (ms)", format="%.3f"),
            "max_throughput": st.column_config.NumberColumn("max throughput (items/s)", format="%.0f"),
            "memory_max_batch": st.column_config.NumberColumn("memory batch limit"),
            "knee_util_ms": st.column_config.NumberColumn("Time_knee util. (ms)", format="%.3f"),
            "knee_curve_ms": st.column_config.NumberColumn("Time_knee curve (ms)", format="%.3f")})
        for part, why in view.unavailable.items():
            st.info(f"{md(part)}: {md(why)}")


def estimator_tab():
    st.caption("Where no GPU has points of a model, or a GPU has none of it, latency is estimated per operator: "
               "time = max(FLOPs / (peak x efficiency), bytes / (bandwidth x efficiency), kernel floor), summed "
               "over the model's graph, plus the serving harness's time. The efficiencies are fitted on every "
               "published and measured curve in the store, by GPU family.")
    st.subheader("Leave-one-out error")
    st.caption("Each (model, GPU) curve predicted by a fit that never saw it: |relative error| of batch-1 latency and "
               "of saturated throughput (benchmarks/estimator_loo.py regenerates the table). Goal: median within "
               "25% and 15%.")
    loo = loo_view()
    show_table(loo.overall, key="est_loo_all")
    c1, c2 = st.columns(2)
    with c1:
        show_table(loo.by_gpu, key="est_loo_gpu")
    with c2:
        show_table(loo.by_model, key="est_loo_model")
    st.subheader("Calibration")
    if st.toggle("Show the fitted efficiencies (fits on the store's curves the first time: seconds)",
                 key="est_show_fit", persist_state=KEEP):
        fit = calibration_view()
        st.caption(f"Fitted on {fit.curves} (model, GPU) curves; in-sample median error {fit.in_sample_median:.1%}. "
                   "Hopper has no curve yet, so H100 and H200 use Ampere's fit.")
        show_table(fit.table, key="est_calibration")
    st.subheader("Estimate your own model (ONNX)")
    limits = hosting().limits
    st.caption(f"Upload an ONNX file with its weights inside (up to {limits.max_mb} MB): its operators' costs are "
               "read from the graph, per sample, and estimated on every GPU and slice in the catalogue. Fix the "
               "sequence length when exporting; the batch dimension may be symbolic.")
    c1, c2 = st.columns(2)
    onnx_name = c1.text_input("ONNX model name", "my-model", key="est_onnx_name", persist_state=KEEP, max_chars=40)
    onnx_precision = c2.selectbox("Precision", ["fp16", "int8", "bf16", "tf32", "fp32"], key="est_onnx_precision",
                                  persist_state=KEEP)
    onnx_file = st.file_uploader("ONNX file", type=["onnx"], key="est_onnx_file", max_upload_size=limits.max_mb)
    if onnx_file is not None:
        data = onnx_file.getvalue()
        try:
            result = onnx_view(data, hashlib.sha256(data).hexdigest(), onnx_name, onnx_precision, limits.max_bytes)
        except KneepointError as e:
            result = None
            st.error(f"The file could not be estimated. {md(e)}")
        if result is not None:
            n_ops, table = result
            st.success(f"{n_ops} operators read. Estimated on {table['batch1_ms'].notna().sum()} GPU partitions.")
            show_table(table, key="est_onnx_table", column_config={
                "batch1_ms": st.column_config.NumberColumn("batch-1 latency (ms)", format="%.3f"),
                "max_throughput": st.column_config.NumberColumn("max throughput (items/s)", format="%.0f"),
                "expected_rel_error": st.column_config.NumberColumn("expected error", format="percent")})


def io_tab():
    st.subheader("Import measurements")
    settings = hosting()
    limits = settings.limits
    kept = ("Imported rows are yours alone: they stay in this browser session, beside the shared tables, and go "
            "when it ends." if settings.hosted else "Imported rows sit beside the seed tables and survive a rebuild.")
    st.caption("An import is all or nothing: a bad row rejects the whole file, with its line and field, and "
               f"nothing is written. {kept} Files up to {limits.max_mb} MB and {limits.max_rows:,} rows.")
    fmt = st.radio("File format", list(IMPORT_FORMATS), horizontal=True, key="imp_format", persist_state=KEEP,
                   format_func=IMPORT_FORMATS.get)
    upload = st.file_uploader("File", type=["csv", "parquet"], key="imp_file", max_upload_size=limits.max_mb)
    given = {}
    if fmt in ("perf-analyzer", "model-analyzer"):
        c1, c2, c3, c4 = st.columns(4)
        catalog = store.catalog()
        given["gpu"] = c1.selectbox("GPU", catalog.skus, key="imp_gpu", persist_state=KEEP)
        given["partition"] = c2.selectbox("Partition", get_book().partitions(given["gpu"]), key="imp_partition",
                                          persist_state=KEEP)
        given["precision"] = c3.selectbox("Precision", ["fp16", "fp32", "tf32", "amp", "int8", "bf16"],
                                          key="imp_precision", persist_state=KEEP)
        given["framework"] = c4.text_input("Framework", "triton", key="imp_framework", persist_state=KEEP)
        c5, c6 = st.columns(2)
        model = c5.text_input("Model name", "", key="imp_model", persist_state=KEEP, placeholder="e.g. resnet50")
        if fmt == "perf-analyzer":
            given["batch"] = c6.number_input("Client batch size", 1, 4096, 1, key="imp_batch", persist_state=KEEP)
            given["model"] = model
        elif model:
            given["model"] = model
    else:
        given["table"] = st.selectbox("Table", USER_TABLES, key="imp_table", persist_state=KEEP)
    if st.button("Import", key="imp_go", disabled=upload is None, type="primary"):
        if fmt == "perf-analyzer" and not given.get("model"):
            st.error("Model name: give the model these measurements are of (e.g. resnet50).")
        else:
            try:
                result = import_upload(store, fmt, upload.getvalue(), upload.name, given, limits)
            except (ImportFailed, StoreError, SeedError) as e:
                st.error(f"Nothing was imported. {md(e)}")
            else:
                st.success(md(_sentence(result.summary())) + ".")
                for warning in result.warnings:
                    st.warning(md(_sentence(warning)))
                for note in result.notes:
                    st.info(note)

    st.subheader("Export")
    c1, c2, c3 = st.columns(3)
    ex_table = c1.selectbox("Table", list(TABLES), key="exp_table", persist_state=KEEP)
    ex_fmt = c2.selectbox("Format", ["csv", "parquet"], key="exp_format", persist_state=KEEP)
    ex_user = c3.toggle("Only my imported rows", value=False, key="exp_user", persist_state=KEEP,
                        disabled=ex_table not in USER_TABLES)
    data = export_bytes(store, ex_table, ex_fmt, user_only=ex_user and ex_table in USER_TABLES)
    st.download_button(f"Download {ex_table}.{ex_fmt}", data, f"{ex_table}.{ex_fmt}",
                       "text/csv" if ex_fmt == "csv" else "application/octet-stream", key="exp_download")


for tab, draw in ((tabs["browse"], browse_tab), (tabs["slices"], slices_tab), (tabs["estimator"], estimator_tab),
                  (tabs["io"], io_tab)):
    if tab.open:
        with tab:
            draw()
