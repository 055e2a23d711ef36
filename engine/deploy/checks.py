"""Checks of every exported file before it is handed out; a failure is an ExportError naming the file and field.

- mig-parted: `version: v1`; each config a list of entries with `devices` ('all' or a list of indices),
  `mig-enabled` (bool) and, when enabled, `mig-devices` {profile: count}; every config's devices are packed
  and placed again on one GPU with the catalogue (engine.partition.pack), so a layout mig-parted would refuse
  never leaves Kneepoint.
- Triton: each config.pbtxt is parsed back (engine.deploy.pbtxt, field names and types against the declared
  schema) and must equal what was generated; max_batch_size >= 0, every preferred_batch_size in
  1..max_batch_size, max_queue_delay_microseconds >= 0, instance_group count >= 1, an ensemble's steps name
  models of the same repository.
- Kubernetes: the required fields of the published apps/v1 Deployment and autoscaling/v2
  HorizontalPodAutoscaler schemas: apiVersion, kind, metadata.name (an RFC 1123 label), spec.selector
  matching the template's labels, at least one container with name and image, resource quantities as
  strings; the HPA's scaleTargetRef naming a Deployment of the bundle, 1 <= minReplicas <= maxReplicas, a
  Pods metric with an AverageValue target.
"""

from __future__ import annotations

import re

from engine.catalog import Gpu
from engine.deploy import pbtxt
from engine.deploy.plan import ExportError, placed_layout

_RFC1123 = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
#: a Kubernetes quantity: a decimal number with an optional SI or binary suffix
_QUANTITY = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+|[numkMGTPE]|Ki|Mi|Gi|Ti|Pi|Ei)?")


def _need(cond: bool, where: str, what: str) -> None:
    if not cond:
        raise ExportError(f"{where}: {what}")


def check_mig_parted(doc: dict, gpu: Gpu, where: str = "mig-parted/config.yaml") -> None:
    _need(doc.get("version") == "v1", where, "version must be v1")
    configs = doc.get("mig-configs")
    _need(isinstance(configs, dict) and bool(configs), where, "mig-configs must name at least one configuration")
    for name, entries in configs.items():
        at = f"{where}: mig-configs.{name}"
        _need(bool(_LABEL_VALUE.fullmatch(name)) and len(name) <= 63, at, "not a valid node label value")
        _need(isinstance(entries, list) and bool(entries), at, "a list of device entries")
        for k, e in enumerate(entries):
            devs = e.get("devices")
            _need(devs == "all" or (isinstance(devs, list) and all(isinstance(i, int) and i >= 0 for i in devs)),
                  f"{at}[{k}].devices", "'all' or a list of GPU indices")
            _need(isinstance(e.get("mig-enabled"), bool), f"{at}[{k}].mig-enabled", "true or false")
            if e["mig-enabled"]:
                md = e.get("mig-devices")
                _need(isinstance(md, dict) and bool(md) and all(isinstance(c, int) and c > 0 for c in md.values()),
                      f"{at}[{k}].mig-devices", "{profile: count} with counts >= 1")
                placed_layout(gpu, [p for p, c in md.items() for _ in range(c)])  # names the instance if not
            else:
                _need("mig-devices" not in e, f"{at}[{k}]", "mig-devices given with MIG disabled")


def check_triton(path: str, text: str, generated: dict) -> dict:
    """Parse a config.pbtxt back, compare it with what was generated and check Triton's value rules."""
    try:
        cfg = pbtxt.loads(text)
    except pbtxt.PbtxtError as e:
        raise ExportError(f"{path}: {e}") from None
    _need(cfg == generated, path, "reads back different from what was written")
    _need("name" in cfg, path, "name is required")
    mbs = cfg.get("max_batch_size", 0)
    _need(mbs >= 0, f"{path}: max_batch_size", "must be >= 0")
    db = cfg.get("dynamic_batching")
    if db is not None:
        for b in db.get("preferred_batch_size", []):
            _need(1 <= b <= mbs, f"{path}: preferred_batch_size", f"{b} is not within 1..max_batch_size {mbs}")
        _need(db.get("max_queue_delay_microseconds", 0) >= 0, f"{path}: max_queue_delay_microseconds", "must be >= 0")
    for k, g in enumerate(cfg.get("instance_group", [])):
        _need(g.get("count", 1) >= 1, f"{path}: instance_group[{k}].count", "must be >= 1")
    if cfg.get("platform") == "ensemble":
        steps = cfg.get("ensemble_scheduling", {}).get("step", [])
        _need(len(steps) >= 1, path, "an ensemble needs at least one step")
        _need(bool(cfg.get("input")) and bool(cfg.get("output")), path, "an ensemble declares its inputs and outputs")
    return cfg


def _quantities(values: dict, where: str) -> None:
    for k, v in values.items():
        _need(isinstance(v, str) and bool(_QUANTITY.fullmatch(v)), f"{where}.{k}",
              f"a quantity string, got {v!r}")


def check_deployment(doc: dict, where: str) -> str:
    """Check a Deployment; returns its name."""
    _need(doc.get("apiVersion") == "apps/v1", where, "apiVersion must be apps/v1")
    _need(doc.get("kind") == "Deployment", where, "kind must be Deployment")
    name = doc.get("metadata", {}).get("name")
    _need(isinstance(name, str) and bool(_RFC1123.fullmatch(name)) and len(name) <= 63, f"{where}: metadata.name",
          f"an RFC 1123 name, got {name!r}")
    spec = doc.get("spec", {})
    _need(isinstance(spec.get("replicas"), int) and spec["replicas"] >= 0, f"{where}: spec.replicas", "an integer >= 0")
    sel = spec.get("selector", {}).get("matchLabels")
    _need(isinstance(sel, dict) and bool(sel), f"{where}: spec.selector.matchLabels", "required")
    labels = spec.get("template", {}).get("metadata", {}).get("labels", {})
    _need(all(labels.get(k) == v for k, v in sel.items()), f"{where}: spec.selector",
          "must match spec.template.metadata.labels")
    for k, v in labels.items():
        _need(isinstance(v, str) and bool(_LABEL_VALUE.fullmatch(v)), f"{where}: label {k}", f"invalid value {v!r}")
    containers = spec.get("template", {}).get("spec", {}).get("containers")
    _need(isinstance(containers, list) and bool(containers), f"{where}: spec.template.spec.containers", "at least one")
    for i, c in enumerate(containers):
        at = f"{where}: containers[{i}]"
        _need(bool(c.get("name")) and bool(c.get("image")), at, "name and image are required")
        res = c.get("resources", {})
        _need(bool(res.get("limits")), f"{at}.resources.limits", "the GPU resource is a limit")
        for kind in ("limits", "requests"):
            _quantities(res.get(kind, {}), f"{at}.resources.{kind}")
    return name


def check_hpa(doc: dict, where: str, deployments: set[str]) -> None:
    _need(doc.get("apiVersion") == "autoscaling/v2", where, "apiVersion must be autoscaling/v2")
    _need(doc.get("kind") == "HorizontalPodAutoscaler", where, "kind must be HorizontalPodAutoscaler")
    _need(bool(doc.get("metadata", {}).get("name")), f"{where}: metadata.name", "required")
    spec = doc.get("spec", {})
    ref = spec.get("scaleTargetRef", {})
    _need(ref.get("kind") == "Deployment" and ref.get("apiVersion") == "apps/v1" and ref.get("name") in deployments,
          f"{where}: spec.scaleTargetRef", f"must name a Deployment of the bundle, got {ref.get('name')!r}")
    lo, hi = spec.get("minReplicas", 1), spec.get("maxReplicas")
    _need(isinstance(hi, int) and isinstance(lo, int) and 1 <= lo <= hi, f"{where}: spec",
          f"needs 1 <= minReplicas <= maxReplicas, got {lo!r} and {hi!r}")
    metrics = spec.get("metrics")
    _need(isinstance(metrics, list) and bool(metrics), f"{where}: spec.metrics", "at least one metric")
    for k, m in enumerate(metrics):
        at = f"{where}: spec.metrics[{k}]"
        _need(m.get("type") == "Pods" and bool(m.get("pods", {}).get("metric", {}).get("name")), at,
              "a Pods metric with a name")
        target = m["pods"].get("target", {})
        _need(target.get("type") == "AverageValue", f"{at}.target.type", "AverageValue")
        _quantities({"averageValue": target.get("averageValue")}, f"{at}.target")


def check_bundle(objects: dict[str, object], files: dict[str, bytes], gpu: Gpu) -> None:
    """Check every file of a bundle (objects: what each file encodes; files: its bytes)."""
    deployments = set()
    for path, obj in objects.items():
        if path.endswith("-deployment.yaml"):
            deployments.add(check_deployment(obj, path))
    for path, obj in objects.items():
        if path == "mig-parted/config.yaml":
            check_mig_parted(obj, gpu, path)
        elif path.endswith("-hpa.yaml"):
            check_hpa(obj, path, deployments)
        elif path.endswith(".pbtxt"):
            cfg = check_triton(path, files[path].decode(), obj)
            repo = path.rsplit("/", 2)[0]
            for step in cfg.get("ensemble_scheduling", {}).get("step", []):
                _need(f"{repo}/{step['model_name']}/config.pbtxt" in objects, f"{path}: ensemble step",
                      f"{step['model_name']!r} is not a model of {repo}")
