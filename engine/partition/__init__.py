"""Partitioning MIG GPUs (DESIGN.md section 5): PARIS, packing into valid layouts, baselines, policies by name.

- paris: Algorithm 1 of the PARIS/ELSA seed (instances per partition size from the batch-size PDF).
- pack: any multiset of MIG instances -> valid placed per-GPU layouts, or a PackingError saying why.
- baselines: homogeneous GPU(n), random heterogeneous, scenarios built from layouts.
- plan: the policies by name (gpu1..gpu7, gpu-max, random, paris) for a scenario's GPUs.
- bounded: simulated latency-bounded throughput (the seed's comparison metric).
"""

from engine.partition.pack import PackingError, pack, parse_items
from engine.partition.paris import ParisError, ParisInput, ParisResult, lognormal_pdf, paris, paris_input_from_book

__all__ = ["PackingError", "ParisError", "ParisInput", "ParisResult", "lognormal_pdf", "pack", "paris",
           "paris_input_from_book", "parse_items"]
