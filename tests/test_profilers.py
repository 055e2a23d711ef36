"""The real profilers (engine.profilers) and the `profile` command: pipelines, measured rows, errors.

The preprocessing profiler runs once (`--quick`, about 10 s) through the command, into a store
of its own; the model profiler times a tiny ONNX model built here. No GPU, torch or network.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import sys

import numpy as np
import onnx
import pandas as pd
import pytest
from onnx import TensorProto, helper, numpy_helper
from PIL import Image

from engine.cli.main import _Parser
from engine.cli.profile import register
from engine.profilers import ProfilerError, gpu, host
from engine.profilers import model as mp
from engine.profilers import pipelines as pp
from engine.seed.records import LatencyPointRow, PreprocessingPointRow
from engine.store import Store, StoreError

DATE = r"\d{4}-\d{2}-\d{2}"


def cli(argv):
    """Run `profile ...` through register() on a fresh parser (as engine.cli.main will)."""
    parser = _Parser(prog="python -m engine")
    register(parser.add_subparsers(dest="command", required=True, parser_class=_Parser))
    args = parser.parse_args(argv)
    return args.func(args)


def mlp_onnx(path, batch="N", dtype=TensorProto.FLOAT, n=256):
    """x[batch, n] -> MatMul -> Relu -> MatMul -> y[batch, n], random weights."""
    np_dtype = np.float32 if dtype == TensorProto.FLOAT else np.float16
    rng = np.random.default_rng(0)
    weights = [numpy_helper.from_array((rng.standard_normal((n, n)) / np.sqrt(n)).astype(np_dtype), f"W{i}")
               for i in (1, 2)]
    nodes = [helper.make_node("MatMul", ["x", "W1"], ["h"]), helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("MatMul", ["r", "W2"], ["y"])]
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", dtype, [batch, n])],
                              [helper.make_tensor_value_info("y", dtype, [batch, n])], weights)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 9
    onnx.checker.check_model(m)
    onnx.save(m, str(path))
    return path


# --------------------------------------------------------------------------- pipelines

def test_photos_are_real_and_offline():
    photos = pp.load_photos()
    names = [n for n, _ in photos]
    assert {"astronaut", "coffee", "chelsea"} <= set(names)
    assert all(im.mode == "RGB" and min(im.size) >= 300 for _, im in photos)


def test_missing_photos_are_a_clear_error(tmp_path):
    with pytest.raises(ProfilerError, match="scikit-image"):
        pp.load_photos(tmp_path)


@pytest.mark.parametrize("size", [(640, 480), (375, 500)])
def test_image_pipeline_is_normalised_float32_chw(size):
    _, photo = pp.load_photos()[0]
    jpeg = pp.encode_jpeg(photo, size)
    assert jpeg[:2] == b"\xff\xd8" and pp.decode_jpeg(jpeg).size == size
    x = pp.preprocess_image(jpeg)
    assert x.dtype == np.float32 and x.shape == (3, 224, 224) and x.flags["C_CONTIGUOUS"]
    # same as the textbook formula on the resized, centre-cropped image
    im = pp.decode_jpeg(jpeg)
    w, h = im.size
    nw, nh = (256, round(h * 256 / w)) if w < h else (round(w * 256 / h), 256)
    im = im.resize((nw, nh), Image.Resampling.BILINEAR)
    left, top = round((nw - 224) / 2), round((nh - 224) / 2)
    a = np.asarray(im.crop((left, top, left + 224, top + 224)), dtype=np.float32) / 255.0
    ref = ((a - pp.MEAN) / pp.STD).transpose(2, 0, 1)
    np.testing.assert_allclose(x, ref, atol=1e-5)
    assert -2.2 < x.min() < x.max() < 2.7 and abs(float(x.mean())) < 1.5


def test_mel_filterbank_covers_every_band():
    fb = pp.mel_filterbank(16_000, 512, 80)
    assert fb.shape == (80, 257) and fb.dtype == np.float32
    assert (fb.sum(axis=1) > 0).all() and (fb >= 0).all()
    peaks = fb.argmax(axis=1)
    assert (np.diff(peaks) >= 0).all()  # bands rise in frequency


@pytest.mark.parametrize("rate", [44_100, 48_000])
def test_audio_pipeline_gives_80_normalised_mel_bands(rate):
    x = pp.synth_speech(3.0, rate=rate)
    assert x.dtype == np.float32 and x.size == 3 * rate and np.abs(x).max() <= 1.0
    m = pp.preprocess_audio(x, rate)
    assert m.dtype == np.float32 and m.shape == (80, 1 + 48_000 // 160) and np.isfinite(m).all()
    np.testing.assert_allclose(m.mean(axis=1), 0.0, atol=1e-4)
    np.testing.assert_allclose(m.std(axis=1), 1.0, atol=1e-3)


# --------------------------------------------------------------------------- preprocess profiler

@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    """`profile preprocess --quick --json --csv` once, into a store of its own."""
    tmp = tmp_path_factory.mktemp("pre")
    with pytest.MonkeyPatch.context() as mpatch:
        mpatch.setenv("KNEEPOINT_DB", str(tmp / "k.duckdb"))
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rc = cli(["profile", "preprocess", "--quick", "--json", "--csv", str(tmp / "pre.csv")])
    return rc, json.loads(out.getvalue()), tmp


def test_preprocess_quick_writes_plausible_measured_rows(quick_run):
    rc, rows, _ = quick_run
    assert rc == 0
    rows = [PreprocessingPointRow(**r) for r in rows]  # they validate
    assert all(r.kind == "measured" and r.device == "cpu" and "this project" in r.source for r in rows)
    assert all(re.match(DATE + r" host=.+ cores=\d+ pillow=\S+ numpy=\S+ scipy=\S+$", r.measured_on) for r in rows)
    image = [r for r in rows if r.pipeline == "image" and r.step == "decode+resize256+crop224+normalise"]
    decode = [r for r in rows if r.pipeline == "image" and r.step == "jpeg_decode"]
    audio = [r for r in rows if r.pipeline == "audio"]
    assert len(image) == len(decode) == 3 and len(audio) == 3
    assert [round(r.input_size, 4) for r in image] == [0.1875, 0.3072, 0.7864]
    assert all(0.5 <= r.ms_per_item <= 200 for r in image)
    assert all(d.ms_per_item < i.ms_per_item for d, i in zip(decode, image))
    assert all("libjpeg" in r.implementation and "Pillow" in r.implementation for r in image)
    assert [r.input_size for r in audio] == [2.5, 10.0, 25.0]
    assert audio[0].ms_per_item < audio[1].ms_per_item < audio[2].ms_per_item  # cost grows with length
    assert audio[2].ms_per_item / 25.0 < 50  # under 50 ms per audio second on any CPU
    assert all(r.step == "resample16k+stft+mel80+normalise" for r in audio)


def test_preprocess_rows_land_in_the_store_and_csv(quick_run):
    _, rows, tmp = quick_run
    store = Store(tmp / "k.duckdb")
    assert store.user_counts()["preprocessing_points"] == len(rows)
    df = store.table("preprocessing_points")
    assert (df["kind"] == "measured").sum() == len(rows)
    csv = pd.read_csv(tmp / "pre.csv")
    assert list(csv.columns) == list(PreprocessingPointRow.model_fields) and len(csv) == len(rows)


# --------------------------------------------------------------------------- model profiler

def test_onnx_batch_sweep(tmp_path):
    path = mlp_onnx(tmp_path / "mlp.onnx", n=512)
    rows = mp.profile_onnx(path, "tiny-mlp", batches=(1, 2, 64), warmup=3, reps=25, threads=1,
                           progress=lambda m: None)
    assert [r.batch for r in rows] == [1, 2, 64] and all(isinstance(r, LatencyPointRow) for r in rows)
    for r in rows:
        assert (r.sku, r.partition, r.framework, r.precision, r.kind) == \
            ("CPU", "full", "onnxruntime-cpu", "fp32", "measured")
        assert r.p50_ms <= r.p90_ms <= r.p95_ms <= r.p99_ms
        assert r.throughput == pytest.approx(r.batch * 1000 / r.mean_ms, rel=1e-3)
        assert re.match(DATE + r" host=.+ onnxruntime=", r.measured_on) and "mlp.onnx sha256:" in r.note
    assert rows[0].p50_ms < rows[2].p50_ms  # 64x the work takes longer, far beyond timing noise...
    assert rows[0].throughput < rows[2].throughput  # ...but less than 64x longer


def test_onnx_fixed_batch_and_fp16(tmp_path):
    fixed = mlp_onnx(tmp_path / "b2.onnx", batch=2)
    rows = mp.profile_onnx(fixed, "m", batches=(1, 2, 4), warmup=1, reps=3, progress=lambda m: None)
    assert [r.batch for r in rows] == [2]
    with pytest.raises(ProfilerError, match="fixed batch of 2"):
        mp.profile_onnx(fixed, "m", batches=(1, 4), warmup=1, reps=3, progress=lambda m: None)
    half = mlp_onnx(tmp_path / "fp16.onnx", dtype=TensorProto.FLOAT16)
    assert mp.profile_onnx(half, "m", batches=(1,), warmup=1, reps=3, progress=lambda m: None)[0].precision == "fp16"


def test_onnx_bad_files(tmp_path):
    with pytest.raises(ProfilerError, match="no such ONNX file"):
        mp.profile_onnx(tmp_path / "nope.onnx", "m")
    (tmp_path / "junk.onnx").write_bytes(b"not a model")
    with pytest.raises(ProfilerError, match="not a loadable ONNX model"):
        mp.profile_onnx(tmp_path / "junk.onnx", "m")


def test_model_command_stores_and_keeps_results_on_a_clash(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KNEEPOINT_DB", str(tmp_path / "k.duckdb"))
    path = mlp_onnx(tmp_path / "mlp.onnx")
    argv = ["profile", "model", "--onnx", str(path), "--model", "tiny-mlp", "--batches", "1,2", "--warmup", "1",
            "--reps", "3", "--json"]
    assert cli(argv) == 0
    assert [r["batch"] for r in json.loads(capsys.readouterr().out)] == [1, 2]
    assert Store(tmp_path / "k.duckdb").user_counts()["latency_points"] == 2
    with pytest.raises(StoreError, match="already in the store"):  # same key: refused, all or nothing
        cli(argv + ["--csv", str(tmp_path / "again.csv")])
    assert len(pd.read_csv(tmp_path / "again.csv")) == 2  # but the measurement was written first
    with pytest.raises(ProfilerError, match="--model"):
        cli(["profile", "model", "--onnx", str(path), "--no-store"])


def test_bad_batches_are_a_one_line_usage_error(capsys):
    with pytest.raises(SystemExit) as e:
        cli(["profile", "model", "--onnx", "x.onnx", "--model", "m", "--batches", "1,a"])
    assert e.value.code == 2 and len(capsys.readouterr().err.strip().splitlines()) == 1


def test_torchvision_needs_torch(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # as on a machine without torch
    with pytest.raises(ProfilerError, match="needs torch and torchvision .*--onnx"):
        mp.profile_torchvision("resnet50")
    with pytest.raises(ProfilerError, match="needs torch"):
        cli(["profile", "model", "--torchvision", "swin-t", "--no-store"])


def test_torchvision_unknown_name_lists_the_valid_ones():
    with pytest.raises(ProfilerError, match="valid: mobilenet_v3_small, squeezenet1_1, swin_t, resnet50"):
        mp.profile_torchvision("resnet51")
    assert mp.torchvision_name("efficientnet-b0") == "efficientnet_b0"


# --------------------------------------------------------------------------- host and GPU facts

SMI = """GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-5d5ba0d6-aaaa-bbbb-cccc-000000000000)
  MIG 3g.20gb     Device  0: (UUID: MIG-c6d4f1ef-1111-2222-3333-444444444444)
  MIG 1g.5gb      Device  1: (UUID: MIG-0d4b2a1e-5555-6666-7777-888888888888)
GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-99999999-aaaa-bbbb-cccc-dddddddddddd)
"""


@pytest.mark.parametrize("cvd, expected", [
    ("MIG-0d4b2a1e-5555-6666-7777-888888888888", ("A100-SXM4-40GB", "1g.5gb")),
    ("MIG-c6d4f1ef", ("A100-SXM4-40GB", "3g.20gb")),
    ("1", ("H100-SXM5-80GB", "full")),
    ("GPU-99999999-aaaa", ("H100-SXM5-80GB", "full")),
    ("", ("A100-SXM4-40GB", "3g.20gb")),  # MIG mode on: CUDA device 0 is the first MIG device
    ("MIG-unknown", ("A100-SXM4-40GB", "full")),
])
def test_cuda_target_from_visible_devices(cvd, expected):
    t = gpu.cuda_target({"CUDA_VISIBLE_DEVICES": cvd}, SMI)
    assert (t.sku, t.partition) == expected and t.how
    assert gpu.cuda_target({}, "").sku == "unknown-GPU"


@pytest.mark.parametrize("name, sku", [
    ("NVIDIA A100-SXM4-80GB", "A100-SXM4-80GB"), ("NVIDIA A30", "A30-24GB"), ("NVIDIA H100 PCIe", "H100-PCIe-80GB"),
    ("NVIDIA H100 NVL", "H100-NVL-94GB"), ("NVIDIA H200", "H200-141GB"), ("Tesla V100-SXM2-16GB", "V100-16GB"),
    ("Tesla V100-PCIE-32GB", "V100-32GB"), ("Tesla T4", "T4-16GB"), ("NVIDIA L4", "L4"),
    ("NVIDIA A100 80GB PCIe", "A100-80GB-PCIe"),
])
def test_catalogue_sku(name, sku):
    assert gpu.catalogue_sku(name) == sku


def test_host_facts(tmp_path):
    (tmp_path / "cpuinfo").write_text("processor\t: 0\nmodel name\t: AMD  EPYC 7B13 64-Core Processor\n")
    assert host.cpu_model(tmp_path / "cpuinfo") == "AMD EPYC 7B13 64-Core Processor"
    assert host.cpu_model(tmp_path / "missing")
    assert host.versions(["numpy", "no-such-dist"]) == f"numpy={np.__version__}"
    s = host.measured_on(["numpy"], {"gpu": "X"})
    assert re.match(DATE + r" host=.+ cores=\d+ gpu=X numpy=", s)
