"""Issue 12 item 6: JPEG decode on a slice without a JPEG engine is charged against that slice's inference time."""

import pytest

from engine.analytic import Context, evaluate
from engine.stages.preprocess import DecodePartition, sm_decode_s_per_item

SKU = "A100-SXM4-80GB"


@pytest.fixture(scope="module")
def ctx(store):
    return Context.from_store(store)


def seven_1g(device):
    return {"model": "resnet50", "gpu": {"sku": SKU, "layout": ["1g.10gb"] * 7}, "preprocessing": {"device": device},
            "host": {"cpu_cores": 64}}


def test_a_slice_is_never_booked_beyond_its_sms_for_decode_and_inference(ctx):
    # before: at 85 % of capacity a 1g slice was booked ~85 % for CUDA decode (a stage of its own) and ~16 % for
    # inference, 101 % of the same SMs
    gpu, none = evaluate(seven_1g("gpu"), ctx), evaluate(seven_1g("none"), ctx)
    assert "preprocess:gpu" not in gpu.stage_capacity_rps  # no decode stage beside the slices' own SM time
    per_slice = sm_decode_s_per_item("image", 0.37, ctx.cost_table(), DecodePartition("1g.10gb", 0, 0, 14 / 108))
    decode_cap = 7 / per_slice
    harmonic = 1 / (1 / decode_cap + 1 / none.stage_capacity_rps["gpu"])
    assert gpu.capacity_rps == pytest.approx(harmonic, rel=0.02)
    at = evaluate(seven_1g("gpu"), ctx, rate=0.85 * gpu.capacity_rps)
    assert all(v <= 1.0 for k, v in at.utilization.items() if k.startswith("gpu"))


def test_a_jpeg_engine_keeps_decode_off_the_sms(ctx):
    whole = evaluate({**seven_1g("gpu"), "gpu": {"sku": SKU}}, ctx)
    assert "preprocess:gpu" in whole.stage_capacity_rps  # the 7g/whole GPU has a JPEG engine
    assert sm_decode_s_per_item("image", 0.37, ctx.cost_table(), DecodePartition("full", 1, 5, 1.0)) == 0
