"""export-design: mig-parted, Triton and Kubernetes files of a design, every number from the engine, every file
read back and checked; bad layouts refused naming the instance; writes atomic and never outside --to."""

from __future__ import annotations

import copy
import io
import json
import math
import subprocess
import sys
import zipfile

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as hst

from engine.analytic import Context, build_design
from engine.analytic.operating_point import sla_bounded_rate
from engine.deploy import pbtxt
from engine.deploy.checks import check_bundle, check_deployment, check_hpa, check_mig_parted
from engine.deploy.export import DesignExport, export_design, write_export, zip_bytes
from engine.deploy.files import HPA_METRIC
from engine.deploy.plan import HPA_HEADROOM, ExportError
from engine.errors import KneepointError
from engine.partition.pack import PackingError, pack
from engine.scenario import load_scenario
from tests.conftest import ROOT

SKU = "A100-SXM4-80GB"
MIXED = {"name": "mixed", "model": "resnet50", "gpu": {"sku": SKU, "count": 3, "layouts": [
    ["3g.40gb", "2g.20gb", "2g.20gb"], ["3g.40gb", "2g.20gb", "2g.20gb"], ["7g.80gb"]]},
    "preprocessing": {"device": "gpu"}, "workload": {"arrival": {"rate_rps": 3000}, "sla": {"latency_ms": 15}}}
DPU = {"name": "dpu", "model": "resnet50", "gpu": {"sku": SKU, "layout": ["1g.10gb"] * 7},
       "preprocessing": {"device": "dpu"}, "batching": {"policy": "preba"}}


@pytest.fixture(scope="module")
def ctx(store):
    return Context.from_store(store)


@pytest.fixture(scope="module")
def mixed(ctx) -> DesignExport:
    return export_design(json.dumps(MIXED), ctx)


def test_every_yaml_parses_with_pyyaml_and_reads_back_what_was_generated(mixed):
    yamls = [p for p in mixed.files if p.endswith(".yaml")]
    assert "mig-parted/config.yaml" in yamls and len(yamls) == 1 + 2 * len(mixed.plan.profiles)
    for path in yamls:
        assert yaml.safe_load(mixed.files[path]) == mixed.objects[path], path


def test_every_pbtxt_parses_back_into_the_declared_schema(mixed):
    configs = [p for p in mixed.files if p.endswith("config.pbtxt")]
    assert configs
    for path in configs:
        assert pbtxt.loads(mixed.files[path].decode()) == mixed.objects[path], path


def test_mig_parted_has_one_config_per_distinct_layout_and_each_packs(mixed, catalog):
    doc = yaml.safe_load(mixed.files["mig-parted/config.yaml"])
    assert doc["version"] == "v1"
    distinct = {tuple(sorted(lay)) for lay in MIXED["gpu"]["layouts"]}
    assert len(doc["mig-configs"]) == len(distinct)
    gpu = catalog.gpu(SKU)
    wanted = [{p: lay.count(p) for p in set(lay)} for lay in distinct]
    for name, entries in doc["mig-configs"].items():
        (entry,) = entries
        assert entry["devices"] == "all" and entry["mig-enabled"] is True
        assert entry["mig-devices"] in wanted
        assert len(pack(gpu, entry["mig-devices"], gpus=1)) == 1  # placed again by the catalogue
        assert f"nvidia.com/mig.config={name}" in mixed.files["mig-parted/node-labels.sh"].decode()


def test_triton_batching_comes_from_the_designs_batch_max_and_time_queue(mixed, ctx):
    design = build_design(load_scenario(MIXED, ctx.book), ctx)
    batch_max = {p.name: p.max_batch for p in design.gpu.partitions}
    for p in mixed.plan.profiles:
        cfg = pbtxt.loads(mixed.files[f"triton/{p.slug}/resnet50/config.pbtxt"].decode())
        assert cfg["max_batch_size"] == batch_max[p.profile]
        assert cfg["dynamic_batching"]["preferred_batch_size"] == [batch_max[p.profile]]
        assert cfg["dynamic_batching"]["max_queue_delay_microseconds"] == round(design.gpu.time_queue_s * 1e6)
        assert cfg["instance_group"] == [{"count": 1, "kind": "KIND_GPU", "gpus": [0]}]


def test_gpu_preprocessing_adds_a_dali_model_and_an_ensemble(mixed, ctx):
    for p in mixed.plan.profiles:
        ens = pbtxt.loads(mixed.files[f"triton/{p.slug}/resnet50-ensemble/config.pbtxt"].decode())
        assert ens["platform"] == "ensemble"
        assert [s["model_name"] for s in ens["ensemble_scheduling"]["step"]] == ["preprocess", "resnet50"]
        assert pbtxt.loads(mixed.files[f"triton/{p.slug}/preprocess/config.pbtxt"].decode())["backend"] == "dali"
    cpu = export_design(json.dumps({**MIXED, "preprocessing": {"device": "dpu"}}), ctx)
    assert not any("ensemble" in p or "/preprocess/" in p for p in cpu.files)


def test_deployments_request_the_mig_profile_with_the_designs_replicas(mixed):
    counts: dict[str, int] = {}
    for lay in MIXED["gpu"]["layouts"]:
        for p in lay:
            counts[p] = counts.get(p, 0) + 1
    seen = {}
    for path, obj in mixed.objects.items():
        if path.endswith("-deployment.yaml"):
            check_deployment(obj, path)
            (container,) = obj["spec"]["template"]["spec"]["containers"]
            (resource,) = container["resources"]["limits"]
            seen[resource.removeprefix("nvidia.com/mig-")] = obj["spec"]["replicas"]
            assert container["resources"]["limits"][resource] == "1"
    assert seen == counts


def test_hpa_targets_the_sla_bounded_throughput_per_replica_with_headroom(mixed, ctx):
    design = build_design(load_scenario(MIXED, ctx.book), ctx)
    sla_rps = sla_bounded_rate(design)
    total = sum(p.sla_rps_per_replica * p.replicas for p in mixed.plan.profiles)
    assert total == pytest.approx(sla_rps, rel=1e-9)  # the replicas share the design's SLA-bounded throughput
    deployments = {o["metadata"]["name"] for p, o in mixed.objects.items() if p.endswith("-deployment.yaml")}
    for p in mixed.plan.profiles:
        hpa = next(o for path, o in mixed.objects.items() if path.endswith(f"-{p.slug}-hpa.yaml"))
        check_hpa(hpa, "hpa", deployments)
        (metric,) = hpa["spec"]["metrics"]
        assert metric["pods"]["metric"]["name"] == HPA_METRIC
        target = metric["pods"]["target"]["averageValue"]
        value = int(target) if not target.endswith("m") else int(target[:-1]) / 1000
        assert value == pytest.approx(p.sla_rps_per_replica * HPA_HEADROOM, abs=1.0)
        assert 1 <= hpa["spec"]["minReplicas"] <= hpa["spec"]["maxReplicas"] == p.replicas
        assert hpa["spec"]["minReplicas"] == min(p.replicas, max(1, math.ceil(
            p.offered_rps / (p.sla_rps_per_replica * HPA_HEADROOM))))


def test_a_layout_that_cannot_be_placed_is_refused_naming_the_instance(ctx, catalog):
    bad = {**MIXED, "gpu": {"sku": SKU, "layout": ["4g.40gb", "4g.40gb"]}}
    with pytest.raises(PackingError) as packed:
        pack(catalog.gpu(SKU), {"4g.40gb": 2}, gpus=1)
    with pytest.raises(ExportError) as refused:
        export_design(json.dumps(bad), ctx)
    assert str(packed.value) in str(refused.value) and "4g.40gb" in str(refused.value)


def test_designs_without_an_answer_or_a_mig_resource_are_refused(ctx):
    shares = {"model": "resnet50", "gpu": {"sku": "T4-16GB", "shares": [50, 50]}}
    with pytest.raises(ExportError, match="shares"):
        export_design(json.dumps(shares), ctx)
    no_load = {**DPU, "preprocessing": {"device": "cpu"}, "workload": {"sla": {"latency_ms": 0.5}}}
    with pytest.raises(ExportError, match="no load meets"):
        export_design(json.dumps(no_load), ctx)


def test_a_whole_gpu_without_mig_asks_for_nvidia_com_gpu(ctx):
    t4 = export_design(json.dumps({"model": "resnet50", "gpu": {"sku": "T4-16GB", "count": 2},
                                   "preprocessing": {"device": "none"},
                                   "workload": {"sla": {"latency_ms": 100}}}), ctx)
    assert "mig-parted/config.yaml" not in t4.files
    (dep,) = [o for p, o in t4.objects.items() if p.endswith("-deployment.yaml")]
    assert dep["spec"]["replicas"] == 2
    assert dep["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "1"}


def test_the_checks_catch_broken_objects(mixed, catalog):
    dep_path = next(p for p in mixed.objects if p.endswith("-deployment.yaml"))
    hpa_path = next(p for p in mixed.objects if p.endswith("-hpa.yaml"))
    dep, hpa = mixed.objects[dep_path], mixed.objects[hpa_path]
    broken = copy.deepcopy(dep)
    broken["spec"]["selector"]["matchLabels"]["extra"] = "x"
    with pytest.raises(ExportError, match="must match"):
        check_deployment(broken, "d")
    broken = copy.deepcopy(dep)
    broken["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"] = {"nvidia.com/mig-3g.40gb": 1}
    with pytest.raises(ExportError, match="quantity string"):
        check_deployment(broken, "d")
    broken = copy.deepcopy(hpa)
    broken["spec"]["minReplicas"] = broken["spec"]["maxReplicas"] + 1
    with pytest.raises(ExportError, match="minReplicas"):
        check_hpa(broken, "h", {dep["metadata"]["name"]})
    with pytest.raises(ExportError, match="scaleTargetRef"):
        check_hpa(hpa, "h", {"another"})
    doc = copy.deepcopy(mixed.objects["mig-parted/config.yaml"])
    name = next(iter(doc["mig-configs"]))
    doc["mig-configs"][name][0]["mig-devices"] = {"4g.40gb": 2}
    with pytest.raises(ExportError, match="4g.40gb"):
        check_mig_parted(doc, catalog.gpu(SKU))
    files = dict(mixed.files)
    cfg_path = next(p for p in files if p.endswith("config.pbtxt"))
    files[cfg_path] = files[cfg_path].replace(b"max_batch_size", b"max_batch")
    with pytest.raises(ExportError, match="max_batch"):
        check_bundle(mixed.objects, files, catalog.gpu(SKU))


def test_written_files_are_the_bundle_and_stay_inside_the_directory(mixed, tmp_path):
    out = tmp_path / "deploy"
    written = write_export(mixed, out)
    assert sorted(p.relative_to(out).as_posix() for p in written) == sorted(mixed.files)
    for path, data in mixed.files.items():
        assert (out / path).read_bytes() == data
    assert not list(out.rglob("*.tmp"))  # the atomic writes left no temporary file
    evil = mixed.model_copy(update={"files": {"../escaped.yaml": b"x"}})
    with pytest.raises(ExportError, match="inside"):
        write_export(evil, out)
    assert not (tmp_path / "escaped.yaml").exists()
    outside = tmp_path / "outside"
    outside.mkdir()
    (out / "link").symlink_to(outside, target_is_directory=True)
    with pytest.raises(ExportError, match="outside"):
        write_export(mixed.model_copy(update={"files": {"link/x.yaml": b"x"}}), out)
    assert not list(outside.iterdir())
    afile = tmp_path / "afile"
    afile.write_text("keep")
    with pytest.raises(ExportError, match="not a directory"):
        write_export(mixed, afile)


def test_the_zip_holds_the_same_files_and_is_the_same_every_time(mixed, ctx):
    data = zip_bytes(mixed)
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        assert {n: z.read(n) for n in z.namelist()} == mixed.files
    assert zip_bytes(export_design(json.dumps(MIXED), ctx)) == data


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "engine", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)


def test_cli_export_design_writes_the_checked_bundle(tmp_path, ctx):
    scenario = tmp_path / "s.json"
    scenario.write_text(json.dumps(DPU))
    r = _cli("export-design", str(scenario), "--to", str(tmp_path / "out"))
    assert r.returncode == 0, r.stderr
    expected = export_design(json.dumps(DPU), ctx)
    assert sorted(r.stdout.split()) == sorted(str((tmp_path / "out" / p).resolve()) for p in expected.files)
    cfg = pbtxt.loads((tmp_path / "out/triton/1g-10gb/resnet50/config.pbtxt").read_text())
    assert cfg == expected.objects["triton/1g-10gb/resnet50/config.pbtxt"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**DPU, "gpu": {"sku": SKU, "layout": ["7g.80gb", "1g.10gb"]}}))
    r = _cli("export-design", str(bad), "--to", str(tmp_path / "out2"))
    assert r.returncode == 2 and r.stderr.startswith("error: ") and "1g.10gb" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and not (tmp_path / "out2").exists()


def test_export_errors_are_kneepoint_errors():
    assert issubclass(ExportError, KneepointError) and issubclass(pbtxt.PbtxtError, KneepointError)


def test_servers_multiply_replicas_gpus_and_nodes_but_not_per_replica_targets(mixed, ctx):
    three = export_design(json.dumps(MIXED), ctx, servers=3)
    assert three.plan.gpus == 3 * mixed.plan.gpus and three.plan.rate_rps == pytest.approx(3 * mixed.plan.rate_rps)
    one = {p.profile: p for p in mixed.plan.profiles}
    for p in three.plan.profiles:
        assert p.replicas == 3 * one[p.profile].replicas
        assert p.sla_rps_per_replica == pytest.approx(one[p.profile].sla_rps_per_replica)
    assert [c.gpus for c in three.plan.configs] == [3 * c.gpus for c in mixed.plan.configs]
    with pytest.raises(ExportError, match="servers"):
        export_design(json.dumps(MIXED), ctx, servers=0)


@settings(max_examples=8)
@given(data=hst.data())
def test_any_maximal_layouts_export_and_read_back(ctx, catalog, data):
    from engine.catalog import enumerate_layouts

    layouts = enumerate_layouts(catalog.gpu(SKU))
    chosen = data.draw(hst.lists(hst.sampled_from(layouts), min_size=1, max_size=3))
    scenario = {**DPU, "gpu": {"sku": SKU, "count": len(chosen), "layouts": [lay.labels() for lay in chosen]}}
    export = export_design(json.dumps(scenario), ctx)
    for path in export.files:
        if path.endswith(".yaml"):
            assert yaml.safe_load(export.files[path]) == export.objects[path]
    instances: dict[str, int] = {}
    for lay in chosen:
        for inst in lay.instances:
            instances[inst.profile] = instances.get(inst.profile, 0) + 1
    assert {p.profile: p.replicas for p in export.plan.profiles} == instances
    assert sum(c.gpus for c in export.plan.configs) == len(chosen)
