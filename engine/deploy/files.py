"""A design's deployment files, built in memory from its DeployPlan: a mig-parted configuration, a Triton
model repository per MIG profile, a Kubernetes Deployment and HorizontalPodAutoscaler per profile, and a README.

Layout of the bundle (paths relative to the export directory or zip):

  mig-parted/config.yaml                     version v1, one named config per distinct per-GPU layout
  mig-parted/node-labels.sh                  `kubectl label node ... nvidia.com/mig.config=<name>` per config
  triton/<profile>/<model>/config.pbtxt      one repository per MIG profile: a pod sees one MIG device (GPU 0)
  triton/<profile>/<model>/1/MODEL_GOES_HERE.txt
  triton/<profile>/preprocess/config.pbtxt   } only when preprocessing runs on the GPU: DALI decode and an
  triton/<profile>/<model>-ensemble/...      } ensemble that feeds it to the model
  kubernetes/<model>-<profile>-deployment.yaml
  kubernetes/<model>-<profile>-hpa.yaml
  kneepoint-deploy.json                      the plan: every number above and where it came from
  README.md

Autoscaling metric: a per-pod custom metric `HPA_METRIC` (requests/s a Triton pod completes), which the
Prometheus Adapter derives from Triton's `nv_inference_request_success` counter (the rule is in the README).
Each HPA's averageValue is the replica's SLA-bounded throughput x HPA_HEADROOM.
"""

from __future__ import annotations

import json
import math
import re

from engine.cost import GPUS_PER_SERVER
from engine.deploy import pbtxt, yamltext
from engine.deploy.plan import HPA_HEADROOM, DeployPlan, ProfilePlan

#: Triton's serving image (NGC); any release with the ensemble and DALI backends works
TRITON_IMAGE = "nvcr.io/nvidia/tritonserver:24.08-py3"
#: the HPA's per-pod metric: completed inference requests per second
HPA_METRIC = "nv_inference_requests_per_second"
#: the PersistentVolumeClaim holding the model repositories (create it and copy triton/ into it)
MODEL_REPOSITORY_CLAIM = "kneepoint-model-repository"
#: Triton's ports: HTTP (health, inference), gRPC, Prometheus metrics
TRITON_PORTS = {"http": 8000, "grpc": 8001, "metrics": 8002}
#: backend of the model skeleton (Triton completes inputs and outputs from an ONNX file itself)
MODEL_BACKEND = "onnxruntime"
LABEL_APP = "app.kubernetes.io/name"
LABEL_PROFILE = "kneepoint.io/mig-profile"


def _quantity(value: float) -> str:
    """A Kubernetes quantity string: whole units when at least 10, else millis (at least 1m)."""
    return str(int(value)) if value >= 10 else f"{max(1, math.floor(value * 1000))}m"


def mig_parted_config(plan: DeployPlan) -> dict:
    """The mig-parted configuration file (schema `version: v1`, `mig-configs`)."""
    configs = {}
    for c in plan.configs:
        entry = {"devices": "all", "mig-enabled": bool(c.devices)}
        if c.devices:
            entry["mig-devices"] = dict(sorted(c.devices.items()))
        configs[c.name] = [entry]
    return {"version": "v1", "mig-configs": configs}


def node_labels(plan: DeployPlan) -> str:
    """A shell script that labels nodes for mig-manager: fill in each configuration's node names first."""
    lines = ["#!/bin/sh", "# Put the names of the nodes whose GPUs take each layout into its variable, then run this.",
             "# mig-manager applies the layout; `kubectl get node NODE -o "
             "jsonpath='{.metadata.labels.nvidia\\.com/mig\\.config\\.state}'` then reads success.",
             "set -eu"]
    for c in plan.configs:
        var = re.sub(r"[^A-Z0-9]", "_", c.name.upper())
        lines += [f"# {c.gpus} x {plan.sku} as {' '.join(c.placed) or 'MIG off'}: {c.nodes} node(s) of "
                  f"{GPUS_PER_SERVER} GPUs", f'{var}=""',
                  f'for node in ${var}; do kubectl label node "$node" nvidia.com/mig.config={c.name} --overwrite; done']
    return "\n".join(lines) + "\n"


def triton_model_config(plan: DeployPlan, p: ProfilePlan) -> dict:
    """The model's config.pbtxt (as a dict) for one MIG profile: batching from the design's Batch_max and
    Time_queue, one instance on the pod's one GPU (a MIG device is GPU 0 inside its pod)."""
    cfg: dict = {"name": plan.model_slug, "backend": MODEL_BACKEND, "max_batch_size": p.batch_max,
                 "instance_group": [{"count": 1, "kind": "KIND_GPU", "gpus": [0]}]}
    if plan.batching != "none":
        db: dict = {"max_queue_delay_microseconds": p.time_queue_us}
        if plan.batching in ("fixed", "preba"):
            db = {"preferred_batch_size": [p.batch_max], **db}
        cfg["dynamic_batching"] = db
    return cfg


def triton_preprocess_config(plan: DeployPlan, p: ProfilePlan) -> dict:
    return {"name": "preprocess", "backend": "dali", "max_batch_size": p.batch_max,
            "input": [{"name": "RAW", "data_type": "TYPE_UINT8", "dims": [-1]}],
            "output": [{"name": "PREPROCESSED", "data_type": "TYPE_FP32", "dims": [-1]}],
            "instance_group": [{"count": 1, "kind": "KIND_GPU", "gpus": [0]}]}


def triton_ensemble_config(plan: DeployPlan, p: ProfilePlan) -> dict:
    return {"name": f"{plan.model_slug}-ensemble", "platform": "ensemble", "max_batch_size": p.batch_max,
            "input": [{"name": "RAW", "data_type": "TYPE_UINT8", "dims": [-1]}],
            "output": [{"name": "OUTPUT", "data_type": "TYPE_FP32", "dims": [-1]}],
            "ensemble_scheduling": {"step": [
                {"model_name": "preprocess", "model_version": -1, "input_map": {"RAW": "RAW"},
                 "output_map": {"PREPROCESSED": "preprocessed"}},
                {"model_name": plan.model_slug, "model_version": -1, "input_map": {"INPUT__0": "preprocessed"},
                 "output_map": {"OUTPUT__0": "OUTPUT"}}]}}


def _labels(plan: DeployPlan, p: ProfilePlan) -> dict[str, str]:
    return {LABEL_APP: f"kneepoint-{plan.model_slug}", LABEL_PROFILE: p.slug}


def deployment_name(plan: DeployPlan, p: ProfilePlan) -> str:
    return f"{plan.model_slug}-{p.slug}"[:63].rstrip("-")


def deployment(plan: DeployPlan, p: ProfilePlan) -> dict:
    """An apps/v1 Deployment of Triton pods, each limited to one `p.resource`."""
    labels = _labels(plan, p)
    name = deployment_name(plan, p)
    container = {
        "name": "triton", "image": TRITON_IMAGE,
        "args": ["tritonserver", f"--model-repository=/models/{p.slug}", "--allow-metrics=true"],
        "ports": [{"name": k, "containerPort": v} for k, v in TRITON_PORTS.items()],
        "resources": {"requests": {"cpu": _quantity(max(p.cpu_cores_per_replica, 0.001))},
                      "limits": {p.resource: "1"}},
        "readinessProbe": {"httpGet": {"path": "/v2/health/ready", "port": "http"}},
        "volumeMounts": [{"name": "models", "mountPath": "/models", "readOnly": True}],
    }
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "labels": dict(labels)},
            "spec": {"replicas": p.replicas, "selector": {"matchLabels": dict(labels)},
                     "template": {"metadata": {"labels": dict(labels)},
                                  "spec": {"containers": [container],
                                           "volumes": [{"name": "models", "persistentVolumeClaim": {
                                               "claimName": MODEL_REPOSITORY_CLAIM, "readOnly": True}}]}}}}


def autoscaler(plan: DeployPlan, p: ProfilePlan) -> dict:
    """An autoscaling/v2 HorizontalPodAutoscaler: per-pod HPA_METRIC at the replica's SLA-bounded throughput x
    HPA_HEADROOM; between the replicas the offered rate needs and the MIG instances the design has."""
    name = deployment_name(plan, p)
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": name},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
                     "minReplicas": p.min_replicas, "maxReplicas": p.replicas,
                     "metrics": [{"type": "Pods", "pods": {
                         "metric": {"name": HPA_METRIC},
                         "target": {"type": "AverageValue",
                                    "averageValue": _quantity(p.sla_rps_per_replica * HPA_HEADROOM)}}}]}}


def _readme(plan: DeployPlan) -> str:
    rows = "\n".join(
        f"| {p.profile} | {p.replicas} | {p.batch_max} | {p.time_queue_us} | {p.sla_rps_per_replica:,.1f} | "
        f"{_quantity(p.sla_rps_per_replica * HPA_HEADROOM)} | {p.min_replicas} | {p.resource} |" for p in plan.profiles)
    configs = "\n".join(f"- `{c.name}`: {' '.join(c.placed) or 'MIG off'} on {c.gpus} GPU(s), {c.nodes} node(s)"
                        for c in plan.configs) or "- none: this GPU has no MIG"
    pinned = [p.profile for p in plan.profiles if p.offered_rps > p.sla_rps_per_replica * HPA_HEADROOM * p.replicas]
    warning = (f"\n**Note:** the offered rate needs more than {HPA_HEADROOM:g} x the SLA-bounded throughput of every "
               f"{', '.join(pinned)} replica, so those autoscalers stay at maxReplicas: the design runs with less "
               "headroom than the autoscaler aims for.\n" if pinned else "")
    return f"""# Deployment of {plan.name!r}: {plan.model} on {plan.gpus} x {plan.sku} ({plan.servers} server(s))

Exported by Kneepoint from the analytic design at {plan.rate_rps:,.0f} req/s; SLA p{plan.sla_percentile:g} <=
{plan.sla_ms:g} ms; SLA-bounded throughput of all servers {plan.sla_bounded_rps:,.1f} req/s.
{warning}
## 1. MIG layouts (mig-parted)

`mig-parted/config.yaml` holds one configuration per distinct per-GPU layout; label each node for the
NVIDIA GPU Operator's mig-manager (`mig-parted/node-labels.sh`):

{configs}

## 2. Triton model repositories

One repository per MIG profile under `triton/<profile>/` (a pod sees its one MIG device as GPU 0). Put the
model file in `<model>/1/` (`model.onnx` for the {MODEL_BACKEND} backend; Triton completes inputs and
outputs from it). Batching: policy `{plan.batching}`; `max_batch_size` and `preferred_batch_size` are the
design's Batch_max, `max_queue_delay_microseconds` its Time_queue. With preprocessing on the GPU, a DALI
`preprocess` model (add your `model.dali` pipeline) and a `{plan.model_slug}-ensemble` chain decode and model;
rename `INPUT__0`/`OUTPUT__0` to your model's tensor names. Copy `triton/` into the
PersistentVolumeClaim `{MODEL_REPOSITORY_CLAIM}`.

## 3. Kubernetes

The `nvidia.com/mig-<profile>` resources need the NVIDIA device plugin's MIG strategy `mixed` (GPU Operator
`mig.strategy=mixed`); a whole GPU is `nvidia.com/gpu`. CPU requests are the host cores the RPC path and
preprocessing use per replica at the design's rate (Kneepoint's host-CPU model).

| MIG profile | replicas (instances) | Batch_max | Time_queue us | SLA-bounded req/s per replica | HPA averageValue | minReplicas | resource |
|---|---|---|---|---|---|---|---|
{rows}

Each HorizontalPodAutoscaler targets the per-pod metric `{HPA_METRIC}` at the replica's SLA-bounded
throughput x {HPA_HEADROOM:g} (headroom: scale out before the tail reaches the SLA); maxReplicas is the
number of MIG instances of that profile, minReplicas the replicas the offered rate needs at that target.
The metric comes from Triton's counter through the Prometheus Adapter, e.g.:

```yaml
rules:
- seriesQuery: 'nv_inference_request_success{{namespace!="",pod!=""}}'
  resources: {{overrides: {{namespace: {{resource: namespace}}, pod: {{resource: pod}}}}}}
  name: {{matches: "nv_inference_request_success", as: "{HPA_METRIC}"}}
  metricsQuery: 'sum(rate(<<.Series>>{{<<.LabelMatchers>>}}[1m])) by (<<.GroupBy>>)'
```
"""


def bundle_objects(plan: DeployPlan) -> dict[str, object]:
    """Every file of the bundle as the object it encodes (dict for YAML and pbtxt, str for text)."""
    out: dict[str, object] = {}
    if plan.configs:
        out["mig-parted/config.yaml"] = mig_parted_config(plan)
        out["mig-parted/node-labels.sh"] = node_labels(plan)
    for p in plan.profiles:
        repo = f"triton/{p.slug}"
        out[f"{repo}/{plan.model_slug}/config.pbtxt"] = triton_model_config(plan, p)
        out[f"{repo}/{plan.model_slug}/1/MODEL_GOES_HERE.txt"] = (
            f"Put {plan.model}'s model file here (model.onnx for the {MODEL_BACKEND} backend).\n")
        if plan.preprocessing == "gpu":
            out[f"{repo}/preprocess/config.pbtxt"] = triton_preprocess_config(plan, p)
            out[f"{repo}/preprocess/1/MODEL_GOES_HERE.txt"] = "Put the DALI pipeline here (model.dali).\n"
            out[f"{repo}/{plan.model_slug}-ensemble/config.pbtxt"] = triton_ensemble_config(plan, p)
            out[f"{repo}/{plan.model_slug}-ensemble/1/EMPTY.txt"] = "An ensemble has no model file; Triton needs the version directory.\n"
        name = deployment_name(plan, p)
        out[f"kubernetes/{name}-deployment.yaml"] = deployment(plan, p)
        out[f"kubernetes/{name}-hpa.yaml"] = autoscaler(plan, p)
    out["kneepoint-deploy.json"] = plan.model_dump(mode="json")
    out["README.md"] = _readme(plan)
    return out


def encode(path: str, obj: object) -> bytes:
    """The bytes of one bundle file."""
    if path.endswith(".yaml"):
        return yamltext.dumps(obj, comment="Generated by Kneepoint (python -m engine export-design)").encode()
    if path.endswith(".pbtxt"):
        return pbtxt.dumps(obj, comment="Generated by Kneepoint from the design's Batch_max and Time_queue").encode()
    if path.endswith(".json"):
        return (json.dumps(obj, indent=1) + "\n").encode()
    return str(obj).encode()
