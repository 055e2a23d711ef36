"""Curate the model / latency / preprocessing / RPC / price seed tables.

Reads ../shared/data/seed_sources/*.csv (and numbers quoted from the research
seeds in ../shared/seeds), selects rows, keeps the numbers and a short source
per row, and writes data/seed/{models,latency_points,load_points,
preprocessing_points,rpc_figures,prices_power}.csv in the schema of engine/seed/records.py
(load_points: tools/curate_load_points.py). Every file is
read back with pandas and validated row by row; a bad row stops the run.
Hand-entered data (models, table selections, seed figures, notes): tools/profile_facts.py.
What was chosen and why: data/seed/README.md. Re-runnable.

    python tools/curate_profiles.py [--sources DIR]
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys
import types
import typing
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from engine.seed.records import (TABLES, LatencyPointRow, ModelRow, PreprocessingPointRow,  # noqa: E402
                            PricePowerRow, RpcFigureRow)

SEED = ROOT / "data" / "seed"
DEFAULT_SOURCES = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "seed_sources"
sys.path.insert(0, str(Path(__file__).resolve().parent))  # tools/ is not a package: find profile_facts.py beside this file
from profile_facts import (ALLOWED_SKUS, DLE, DLE_TABLES, GPU_PRIM, KINDS, MODELS, P_EXTRA, P_NOTE,  # noqa: E402
                           P_SKIP, POINT, PRICE_EXTRA, RPC_SPLIT, SEED_FIGS, SIZES, SKUS, SPLITRPC)
from curate_load_points import load_points  # noqa: E402
from engine.profiles.curves import THROUGHPUT_FALLS, TAIL_BELOW_MEAN, point_flags  # noqa: E402

SERIES = ("model", "sku", "partition", "precision", "framework", "input_len")
CONSEQUENCE = {TAIL_BELOW_MEAN: "the engine sets the published tails aside", THROUGHPUT_FALLS: "never a knee"}
FLAG_PREFIX = "FLAGGED: "


def flag_points(points: list[dict]) -> int:
    """Append the data checks each series fails (engine.profiles.curves.point_flags: published tails below the
    mean, throughput falling at the largest batch) to the notes of its rows, so the store carries them beside
    the numbers; the engine applies the same checks when it builds a curve. Returns the rows flagged."""
    if not points:
        return 0
    df = pd.DataFrame(points)
    df["_series"] = ["|".join(str(p[k]) for k in SERIES) for p in points]
    flagged = 0
    for _, g in df.groupby("_series", sort=False):
        g = g.astype({c: float for c in ("batch", "mean_ms", "p50_ms", "p90_ms", "p95_ms", "p99_ms") if c in g})
        flags = point_flags(g)
        if not flags:
            continue
        for i in g.index:
            note = points[i]["note"] or ""
            points[i]["note"] = note + ("; " if note else "") + FLAG_PREFIX + ", ".join(
                f"{f} ({CONSEQUENCE[f]})" for f in flags)
            flagged += 1
    return flagged


# ----------------------------------------------------------------------------- models
def models() -> list[dict]:
    out = []
    for (name, dom, kind, unit, req, resp, kern, params, wmb, act_el, act_desc, pre, note, src) in MODELS:
        weights = round(params * 2, 3) if params else wmb
        act = round(3 * act_el * 2 / 1e6, 3)
        wnote = "weights = params x 2 B (FP16 serving)" if params else "weights_mb is an estimate (see note)"
        anote = f"activation = estimate: 3 x largest tensor ({act_desc}) x 2 B FP16"
        if kind == "variable":
            anote += " at 384 tokens" if unit == "tokens" else " at 7 s of audio"
        out.append(dict(name=name, domain=dom, input_kind=kind, input_unit=unit, request_bytes=req,
                        response_bytes=resp, kernel_count=kern, params_m=params, weights_mb=weights,
                        activation_mb_per_sample=act, preprocess=pre, note=f"{note}; {wnote}; {anote}", source=src))
    return out


# ----------------------------------------------------------------------------- latency
def num(s) -> float | None:
    """'1,244,466' -> 1244466; '17,89 ms' -> 17.89 (decimal comma); '~19.6' -> 19.6; '' -> None."""
    s = str(s).strip().lstrip("~")
    if not s:
        return None
    m = re.match(r"^(\d+),(\d{1,2})(\D|$)", s)
    if m:
        s = f"{m.group(1)}.{m.group(2)}"
    m = re.match(r"^[\d,]*\.?\d+", s.replace(" ", ""))
    return float(m.group(0).replace(",", "")) if m else None


def raw_metrics(raw: dict, prefix: str = "") -> dict:
    """Pick latency/throughput/batch/length out of a DLE table row by column name."""
    out = {}
    for k, v in raw.items():
        key = k.strip().lower()
        if any(w in key for w in ("speed", "std", "100%", "tolerance")):
            continue
        if re.fullmatch(r"(batch( size)?|bs)", key):
            out["batch"] = int(num(v))
        elif key in ("sequence length", "duration (s)"):
            out["input_len"] = num(v)
        elif prefix and not k.strip().startswith(prefix):
            continue
        elif "throughput" in key or "inferences/second" in key:
            out["throughput"] = num(v)
        elif "lat" in key or "percentiles" in key:
            for tag in ("50", "90", "95", "99"):
                if re.search(rf"(^|\D){tag}%|p{tag}\b", key):
                    out[f"p{tag}_ms"] = num(v)
                    break
            else:
                if "avg" in key or "average" in key:
                    out["mean_ms"] = num(v)
    return out


def dle_points(src: Path, mismatches: list) -> list[dict]:
    d = pd.read_csv(src / "model_latency_batch.csv", keep_default_na=False, dtype=str)
    out = []
    for (model, gkey, prec, fw, mdir, sec_has, sel, label, note) in DLE_TABLES:
        t = d[(d.model == mdir) & (d.gpu_norm == gkey) & d.section.str.contains(sec_has, regex=False)]
        if fw == "triton-tensorrt":
            t = t[t.section.str.contains("NVIDIA TensorRT with FP16", regex=False)]
        if t.section.nunique() != 1:
            raise SystemExit(f"{model}/{gkey}: expected one source table, got {sorted(t.section.unique())}")
        raws = [json.loads(r) for r in t.raw_row_json]
        if sel[0] == "block":
            _, i, n, anchor = sel
            raws, t = raws[i * n:(i + 1) * n], t.iloc[i * n:(i + 1) * n]
            if raw_metrics(raws[0]).get("throughput") != anchor:
                raise SystemExit(f"{model}/{gkey}: block {i} does not start at throughput {anchor}: {raws[0]}")
        elif sel[0] == "raw":
            keep = [all(r.get(k) == v for k, v in sel[1].items()) for r in raws]
            raws, t = [r for r, k in zip(raws, keep) if k], t[keep]
        path, section = t.source_path_or_section.iloc[0].split(" :: ", 1)
        parts = [x.strip() for x in section.split(" :: ")[0].split(" > ")]
        first = max(i for i, x in enumerate(parts) if ":" in x or x.startswith("Fine-tuning"))
        short = " > ".join(parts[first:])
        source = f"{DLE}@{t.source_commit.iloc[0][:7]} {path} :: {short}" + (f" > {label}" if label else "")
        if len(source) > 200:  # keep sources short: drop the generic heading prefix
            source = source.replace("Inference performance: ", "")
        for raw, (_, src_row) in zip(raws, t.iterrows()):
            m = raw_metrics(raw, prefix="FP16 " if model in ("jasper", "quartznet") else "")
            row = dict(POINT, model=model, sku=SKUS[gkey], precision=prec, framework=fw, note=note, source=source, **m)
            if model.startswith("bert-") and fw == "triton-tensorrt":
                row["input_len"] = 384.0
            if "throughput" not in m:
                row["throughput"] = round(row["batch"] * 1000 / row["mean_ms"], 3)
            if src_row.latency_unit.strip() == "s":
                raise SystemExit(f"{model}/{gkey}: table in seconds; convert before use")
            for col, key in (("lat_avg", "mean_ms"), ("throughput", "throughput"), ("lat_p95", "p95_ms")):
                if model not in ("jasper", "quartznet") and src_row[col] and m.get(key) is not None \
                        and abs(num(src_row[col]) - m[key]) > 1e-6:
                    mismatches.append(f"{model}/{gkey} batch {m['batch']}: {col} CSV {src_row[col]} vs README {m[key]}")
            out.append(row)
    return out


def seed_points() -> list[dict]:
    out = []
    for model, us, fw, prec in SPLITRPC:
        out.append(dict(POINT, model=model, sku="A100-SXM4-40GB", precision=prec, framework=fw, batch=1, mean_ms=us / 1000,
                        throughput=round(1e6 / us, 3), source="SplitRPC seed, Table 1",
                        note=f"GPU-only time, batch 1; throughput = 1/time (derived); precision not stated in the paper, "
                             f"{prec} assumed; paper's GPU is an 'A100 40GB' behind a PCIe Gen3 switch (likely the PCIe card)"))
    for model, copy_ms, dma_ms in GPU_PRIM:
        for fw, ms in (("tensorrt+cuda-copy", copy_ms), ("tensorrt+gpu-dma", dma_ms)):
            out.append(dict(POINT, model=model, sku="V100-16GB", precision="fp32", framework=fw, batch=8, mean_ms=ms,
                            throughput=round(8000 / ms, 3), source="GPU-runtime-primitives seed, Sec IV-B Table I",
                            note="batch-8 inference incl. host->GPU input transfer (CUDA-Copy vs GPU-DMA); V100 memory size, "
                                 "framework (TensorRT per Sec IV-A) and precision not stated: 16GB/fp32 assumed; throughput derived"))
    return out


# ----------------------------------------------------------------------------- preprocessing
def src_ref(url: str, where: str, limit: int = 200) -> str:
    url = url.replace("https://", "").replace("http://", "")
    s = f"{url} :: {where}"
    return s if len(s) <= limit else s[:limit - 1] + "…"


def preprocessing(src: Path) -> list[dict]:
    d = pd.read_csv(src / "preprocessing.csv", keep_default_na=False, dtype=str)
    out = []
    for _, r in d.iterrows():
        if r.implementation in P_SKIP:
            continue
        key = next((k for k in SIZES if r.input_desc.startswith(k) or k in r.input_desc), None)
        if key is None:
            raise SystemExit(f"preprocessing.csv: no input size for {r.input_desc!r}")
        n = re.search(r"(?:time for|batch of) (\d+)", f"{r.metric} {r.threads_or_batch}")
        count = int(n.group(1)) if n else 1
        ms = float(r.value) / (1000 if r.unit == "us" else 1) / count
        dev = "gpu" if r.device.upper().startswith(("GPU", "TEGRA")) else "cpu"
        notes = [f"{r.threads_or_batch}; {r.metric} {r.value} {r.unit}", r.note]
        if count > 1:
            notes.insert(0, f"derived: {r.value} {r.unit} / {count} items")
        if key in ("320p", "480p", "720p", "1080p"):
            notes.append(P_NOTE)
        if r.task == "audio_mel_features":
            notes.append("one item = 1 h of audio" + ("; thread count not stated (likely multi-threaded, not per core)" if dev == "cpu" else ""))
        out.append(dict(pipeline="audio" if r.task.startswith("audio") else "image",
                        step={"audio_mel_features": "mel"}.get(r.task, r.task), device=dev,
                        implementation=f"{r.implementation} [{r.device}]", input_desc=r.input_desc,
                        input_size=round(SIZES[key], 6), ms_per_item=round(ms, 6), kind="derived" if count > 1 else "published",
                        measured_on="", note="; ".join(x for x in notes if x), source=src_ref(r.source_repo_or_url, r.source_path_or_section)))
    for pipe, step, dev, impl, desc, size, ms, source in P_EXTRA:
        out.append(dict(pipeline=pipe, step=step, device=dev, implementation=impl, input_desc=desc, input_size=round(size, 6),
                        ms_per_item=ms, kind="published", measured_on="", note="figure quoted in the source row's note",
                        source=src_ref(*source.split(" :: ", 1))))
    return out


# ----------------------------------------------------------------------------- RPC figures
def rpc_figures(src: Path) -> list[dict]:
    d = pd.read_csv(src / "rpc_overheads.csv", keep_default_na=False, dtype=str)
    out = []
    for _, r in d.iterrows():
        source = src_ref(r.source_repo_or_url, r.source_path_or_section)
        if r.value == "shared":
            continue  # qualitative MIG PCIe-sharing note, no number
        parts = RPC_SPLIT.get(r.value) or [("", r.metric, num(r.value))]
        for suffix, metric, value in parts:
            note = "; ".join(x for x in (r.note, f"source value '{r.value}'" if len(parts) > 1 or "~" in r.value else "") if x)
            out.append(dict(category=r.category, item=r['item'] + suffix, setting=r.setting, metric=metric, value=value,
                            unit=r.unit, note=note, source=source))
    for cat, item, setting, metric, value, unit, source, note in SEED_FIGS:
        out.append(dict(category=cat, item=item, setting=setting, metric=metric, value=value, unit=unit, note=note, source=source))
    return out + hand_rows(out)


def hand_rows(generated: list[dict]) -> list[dict]:
    """Rows of data/seed/rpc_figures.csv that no source file generates: figures read from the seed papers by
    hand (PARIS, tenancy, EIF), each with its source and section. Re-running the curation keeps them."""
    path = SEED / "rpc_figures.csv"
    if not path.exists():
        return []
    have = {(r["source"], r["item"], r["setting"], r["metric"]) for r in generated}
    kept = pd.read_csv(path, keep_default_na=False, dtype=str).to_dict("records")
    return [r for r in kept if (r["source"], r["item"], r["setting"], r["metric"]) not in have]


# ----------------------------------------------------------------------------- prices, power
def prices_power(src: Path) -> list[dict]:
    d = pd.read_csv(src / "prices_power.csv", keep_default_na=False, dtype=str)
    out = []
    for _, r in d.iterrows():
        base = dict(context=r.date_or_context, reliability=r.reliability, source=src_ref(r.source_repo_or_url, r.source_path_or_section))
        if r.unit == "cents/kWh":  # one row per state / sector, converted to USD
            groups = [(r.value, "commercial" if "commercial" in r['item'] else "")]
            if r.note.startswith("industrial:"):
                groups.append((r.note.split(":", 1)[1], "industrial"))
            for text, sector in groups:
                for part in text.split(";"):
                    m = re.match(r"\s*([A-Za-z ]+?)\s+([\d.]+)\s*(.*)$", part)
                    if not m:
                        raise SystemExit(f"prices_power.csv: cannot read {part!r} in {r['item']!r}")
                    label = " ".join(x for x in (sector, m.group(1)) if x)
                    out.append(dict(base, item=f"electricity US {label} ({r.date_or_context})", kind="usd_per_kwh",
                                    value=round(float(m.group(2)) / 100, 5), unit="USD/kWh",
                                    note=f"{m.group(2)} cents/kWh {m.group(3)}".strip() + f"; {r.kind}; source row: {r['item']}"))
            continue
        kind = KINDS.get(r.kind)
        if kind is None:
            continue  # U55C HBM capacity/bandwidth: not a price or power figure
        unit = {"tdp_w": "W", "price_usd": "USD", "usd_per_gpu_hour": "USD/GPU-hour"}[kind]
        extra = [r.kind if kind == "tdp_w" and r.kind != "TDP" else "", r.note]
        if " / " in r.value:  # two products in one row: 'A100 80GB / H200 (RunPod)'
            for item, v in zip(r['item'].replace(" (RunPod)", "").split(" / "), r.value.split(" / ")):
                out.append(dict(base, item=f"{item} (RunPod)", kind=kind, value=num(v), unit=unit, note=f"source value '{r.value}'"))
            continue
        vals = [num(v) for v in r.value.split("-")]
        if len(vals) == 2 and "spread" in r.kind:
            for lab, v in zip(("low", "high"), vals):
                out.append(dict(base, item=f"{r['item']} ({lab} end of spread)", kind=kind, value=v, unit=unit,
                                note="; ".join(x for x in (f"range {r.value}", r.note) if x)))
        elif len(vals) == 2:
            out.append(dict(base, item=r['item'], kind=kind, value=round(sum(vals) / 2, 4), unit=unit,
                            note="; ".join(x for x in [f"midpoint of range {r.value} {r.unit}"] + extra if x)))
        else:
            approx = f"source value '{r.value}' (approximate)" if "~" in r.value else ""
            out.append(dict(base, item=r['item'], kind=kind, value=vals[0], unit=unit, note="; ".join(x for x in [approx] + extra if x)))
    out += [dict(r) for r in PRICE_EXTRA]
    return out


# ----------------------------------------------------------------------------- write + validate
def fmt(v) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return str(int(v)) if v.is_integer() and abs(v) < 1e15 else ("%.6f" % v).rstrip("0").rstrip(".")
    return str(v)


def _optional(model, field) -> bool:
    ann = model.model_fields[field].annotation
    return typing.get_origin(ann) in (typing.Union, types.UnionType) and type(None) in typing.get_args(ann)


def write_and_validate(name: str, rows: list[dict], out_dir: Path) -> int:
    model, key = TABLES[name]
    cols = list(model.model_fields)
    path, final = out_dir / f".{name}.csv.tmp", out_dir / f"{name}.csv"
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(cols)
        for r in rows:
            if set(r) != set(cols):
                raise SystemExit(f"{name}: row columns {sorted(set(r) ^ set(cols))} differ from {model.__name__}")
            w.writerow([fmt(r[c]) for c in cols])
    try:
        n = _validate(path, model, key, cols)
    except SystemExit:
        path.unlink(missing_ok=True)
        raise
    path.replace(final)  # only a fully valid table replaces the published one
    return n


def _validate(path: Path, model, key, cols) -> int:
    df = pd.read_csv(path, keep_default_na=False, dtype=str)
    if list(df.columns) != cols:
        raise SystemExit(f"{path}: columns {list(df.columns)} != {cols}")
    for i, rec in enumerate(df.to_dict("records"), start=2):
        clean = {k: (None if v == "" and _optional(model, k) else v) for k, v in rec.items()}
        try:
            row = model(**clean)
        except Exception as e:  # noqa: BLE001 - report file/line/value, then stop
            raise SystemExit(f"{path}: line {i}: {e}") from None
        if len(row.source) > 200:
            raise SystemExit(f"{path}: line {i}: source longer than 200 characters")
    if key and df.duplicated(list(key)).any():
        raise SystemExit(f"{path}: duplicate key {list(key)}:\n{df[df.duplicated(list(key), keep=False)][list(key)]}")
    if (df.source.str.strip() == "").any():
        raise SystemExit(f"{path}: row without a source")
    return len(df)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sources", type=Path, default=DEFAULT_SOURCES)
    ap.add_argument("--out", type=Path, default=SEED)
    a = ap.parse_args(argv)
    mismatches: list[str] = []
    mods = models()
    points = sorted(dle_points(a.sources, mismatches) + seed_points(),
                    key=lambda r: (r["model"], r["sku"], r["framework"], r["input_len"] or 0, r["batch"]))
    names = {m["name"] for m in mods}
    for p in points:
        if p["model"] not in names or p["sku"] not in ALLOWED_SKUS:
            raise SystemExit(f"latency point with unknown model/sku: {p['model']} {p['sku']}")
    print(f"flagged {flag_points(points)} latency points (data checks)")
    loads = load_points(a.sources)
    for p in loads:
        if p["model"] not in names or p["sku"] not in ALLOWED_SKUS:
            raise SystemExit(f"load point with unknown model/sku: {p['model']} {p['sku']}")
    tables = {"models": mods, "latency_points": points, "load_points": loads, "preprocessing_points": preprocessing(a.sources),
              "rpc_figures": rpc_figures(a.sources), "prices_power": prices_power(a.sources)}
    a.out.mkdir(parents=True, exist_ok=True)
    for name, rows in tables.items():
        print(f"{name:22s} {write_and_validate(name, rows, a.out):4d} rows")
    for m in mismatches:
        print(f"note: source CSV differs from README cell, README used: {m}")
    cover = {}
    for p in points:
        cover.setdefault(p["model"], {}).setdefault(p["sku"], set()).add(f"{p['framework']}/{p['precision']}")
    print("\nlatency coverage (model: sku framework/precision):")
    for model, by_sku in sorted(cover.items()):
        print(f"  {model}: " + "; ".join(f"{s} {'+'.join(sorted(v))}" for s, v in sorted(by_sku.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
