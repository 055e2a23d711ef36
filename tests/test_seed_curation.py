"""The curated profile seed tables (tools/curate_profiles.py output) are valid and complete.

Reads data/seed/*.csv only; does not re-run the curation (which needs ../shared).
"""

from __future__ import annotations

import types
import typing
from pathlib import Path

import pandas as pd
import pytest

from engine.seed.records import TABLES

SEED = Path(__file__).resolve().parents[1] / "data" / "seed"
CURATED = ["models", "latency_points", "load_points", "preprocessing_points", "rpc_figures", "prices_power"]
SKUS = {"A100-SXM4-40GB", "A100-SXM4-80GB", "A30-24GB", "V100-16GB", "V100-32GB", "T4-16GB",
        "H100-SXM5-80GB", "H100-PCIe-80GB", "H200-141GB"}

# (model, sku) pairs that published batch sweeps exist for and that the curation must keep.
REQUIRED_COVERAGE = {
    ("resnet50", "A100-SXM4-40GB"), ("resnet50", "A100-SXM4-80GB"), ("resnet50", "A30-24GB"),
    ("resnet50", "V100-16GB"), ("resnet50", "V100-32GB"), ("resnet50", "T4-16GB"),
    ("efficientnet-b0", "A100-SXM4-80GB"), ("efficientnet-b0", "V100-16GB"), ("efficientnet-b0", "V100-32GB"),
    ("bert-base", "A100-SXM4-40GB"), ("bert-base", "A100-SXM4-80GB"), ("bert-base", "V100-16GB"),
    ("bert-base", "V100-32GB"), ("bert-base", "T4-16GB"),
    ("bert-large", "A100-SXM4-40GB"), ("bert-large", "A100-SXM4-80GB"), ("bert-large", "A30-24GB"),
    ("bert-large", "V100-16GB"), ("bert-large", "V100-32GB"), ("bert-large", "T4-16GB"),
    ("jasper", "A100-SXM4-80GB"), ("jasper", "V100-16GB"), ("jasper", "V100-32GB"), ("jasper", "T4-16GB"),
    ("quartznet", "A100-SXM4-80GB"), ("quartznet", "V100-32GB"),
    ("lenet", "A100-SXM4-40GB"), ("lstm", "A100-SXM4-40GB"), ("resnet18", "A100-SXM4-40GB"),
    ("bert-splitrpc", "A100-SXM4-40GB"),
}
REQUIRED_MODELS = {"resnet50", "efficientnet-b0", "bert-base", "bert-large", "jasper", "quartznet", "lenet", "lstm",
                   "resnet18", "bert-splitrpc", "mobilenetv3-small", "squeezenet1.1", "swin-t", "conformer",
                   "citrinet", "shufflenet-v2", "alexnet", "vgg19", "resnext50"}


def _load(name: str) -> pd.DataFrame:
    return pd.read_csv(SEED / f"{name}.csv", keep_default_na=False, dtype=str)


def _optional(model, field: str) -> bool:
    ann = model.model_fields[field].annotation
    return typing.get_origin(ann) in (typing.Union, types.UnionType) and type(None) in typing.get_args(ann)


@pytest.mark.parametrize("name", CURATED)
def test_every_row_validates(name):
    model, _ = TABLES[name]
    df = _load(name)
    assert list(df.columns) == list(model.model_fields), f"{name}.csv columns must be the {model.__name__} fields in order"
    assert len(df) > 0
    for line, rec in enumerate(df.to_dict("records"), start=2):
        clean = {k: (None if v == "" and _optional(model, k) else v) for k, v in rec.items()}
        try:
            model(**clean)
        except Exception as e:  # noqa: BLE001
            pytest.fail(f"{name}.csv line {line}: {e}")


@pytest.mark.parametrize("name", CURATED)
def test_no_duplicate_keys_and_every_row_has_a_source(name):
    _, key = TABLES[name]
    df = _load(name)
    cols = list(key) or list(df.columns)  # tables without a key: no exact duplicate rows
    dups = df[df.duplicated(cols, keep=False)]
    assert dups.empty, f"{name}.csv duplicate {cols}:\n{dups[cols]}"
    assert (df.source.str.strip().str.len() >= 3).all(), f"{name}.csv has a row without a source"


def test_latency_points_cover_required_models_and_gpus():
    pts = _load("latency_points")
    have = set(zip(pts.model, pts.sku))
    missing = REQUIRED_COVERAGE - have
    assert not missing, f"latency_points lacks {sorted(missing)}"


def test_latency_points_are_consistent():
    pts = _load("latency_points")
    models = _load("models").set_index("name")
    assert REQUIRED_MODELS <= set(models.index)
    assert set(pts.model) <= set(models.index), "every latency point names a model in models.csv"
    assert set(pts.sku) <= SKUS
    assert (pts.partition == "full").all() and (pts.kind == "published").all()
    # one framework/precision per published DLE (model, sku) sweep
    dle = pts[pts.source.str.startswith("github.com/NVIDIA/DeepLearningExamples@")]
    combos = dle.groupby(["model", "sku"])[["framework", "precision"]].nunique()
    assert (combos == 1).all().all(), combos[(combos != 1).any(axis=1)]
    # variable-length models carry their input length; fixed ones do not
    kind = pts.model.map(models.input_kind)
    assert (pts.input_len[kind == "variable"] != "").all()
    assert (pts.input_len[kind == "fixed"] == "").all()
    # latency and throughput agree to within the rounding of the published tables (a batch of b items)
    mean, thr, batch = pts.mean_ms.astype(float), pts.throughput.astype(float), pts.batch.astype(float)
    implied = batch * 1000 / mean
    odd = pts[(thr / implied > 3) | (thr / implied < 1 / 3)]
    assert odd.empty, odd[["model", "sku", "batch", "mean_ms", "throughput"]]


def test_load_points_are_consistent():
    """Triton online sweeps: known models and GPUs, full GPU, published, breakdown kept, ms."""
    pts = _load("load_points")
    models = set(_load("models").name)
    assert set(pts.model) <= models and set(pts.sku) <= SKUS
    assert (pts.partition == "full").all() and (pts.kind == "published").all()
    assert set(pts.load_kind) == {"concurrency"}
    assert {("resnet50", "A100-SXM4-80GB"), ("resnet50", "V100-32GB"), ("resnet50", "T4-16GB")} <= set(zip(pts.model, pts.sku))
    for col in ("throughput", "server_queue_ms", "compute_input_ms", "compute_infer_ms", "compute_output_ms",
                "network_ms", "p99_ms", "avg_ms"):
        assert (pts[col] != "").all(), f"load_points.{col} has empty cells"
    # one sweep per (model, sku, framework): loads are distinct and the compute breakdown fits inside the mean
    assert not pts.duplicated(["model", "sku", "framework", "precision", "batch", "load"]).any()
    compute = sum(pts[c].astype(float) for c in ("compute_input_ms", "compute_infer_ms", "compute_output_ms"))
    assert (compute <= pts.avg_ms.astype(float) * 1.01).all()
