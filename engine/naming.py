"""A design in words: the name a scenario has until someone types one (Scenario.derived_name), and a MIG layout
counted by profile (also the reports' hardware column). Reads a scenario's fields only, so engine.scenario uses it
without an import cycle."""

from __future__ import annotations

from engine.vocab import BatchingPolicy, PreprocessDevice, SchedulerPolicy

DERIVED_NAME_MAX = 80  # a derived name fits a saved scenario's name (engine.store.scenarios.NAME_MAX)


def profile_counts(layout: list[str]) -> str:
    """'1g.10gb x 7' for seven 1g.10gb instances; profiles in the layout's order, placements dropped."""
    counts: dict[str, int] = {}
    for entry in layout:
        profile = entry.split("@")[0]
        counts[profile] = counts.get(profile, 0) + 1
    return " + ".join(f"{profile} x {n}" if n > 1 else profile for profile, n in counts.items())


def derived_name(scenario) -> str:
    """The design in a few words: model, accelerators and their partitioning, preprocessing device, RPC path,
    batching policy (and the scheduler unless FIFS), e.g. 'resnet50, A100-SXM4-80GB 1g.10gb x 7, cpu
    preprocessing, grpc, preba batching'. At most DERIVED_NAME_MAX characters, all of them ones a saved
    scenario's name may hold (engine.store.scenarios)."""
    pre, batching = scenario.preprocessing, scenario.batching.policy
    words = [scenario.model, _hardware_words(scenario),
             f"dpu {pre.units} CUs" if pre.device == PreprocessDevice.DPU else f"{pre.device.value} preprocessing",
             scenario.rpc.preset.value, "no batching" if batching == BatchingPolicy.NONE else f"{batching.value} batching"]
    if scenario.scheduler.policy != SchedulerPolicy.FIFS:
        words.append(scenario.scheduler.policy.value)
    name = ", ".join(words)
    return name if len(name) <= DERIVED_NAME_MAX else name[:DERIVED_NAME_MAX - 3].rstrip(" ,") + "..."


def _hardware_words(scenario) -> str:
    if scenario.fpga is not None:
        return scenario.accelerator_label()
    gpu = scenario.gpu
    count = f"{gpu.count} x " if gpu.count > 1 else ""
    if gpu.shares:
        part = "MPS " + " + ".join(f"{share:g}" for share in gpu.shares)
    elif gpu.layouts:
        part = "; ".join(profile_counts(layout) for layout in gpu.layouts)
    elif gpu.layout:
        part = profile_counts(gpu.layout)
    else:
        part = "whole"
    return f"{count}{gpu.sku} {part}"
