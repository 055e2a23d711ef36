"""What a published ratio implies under the engine's own laws: the inversions that say why an entry misses.

When a mechanism cannot reach a published number, the honest report is the measurement it would need. These
functions solve the engine's laws backwards for the one unknown a published ratio pins down, so an entry can
name it next to what the engine uses (GPU runtime primitives seed, Sec V-D and VI-A). They predict nothing:
their inputs are the paper's own ratios, and no entry's value is computed from them.
"""

from __future__ import annotations

from engine.tenancy.errors import TenancyError


def implied_half_saturation_batch(batch: float, gpu_share: float, latency_ratio: float) -> float:
    """The slice law's half-saturation batch h = t_fixed T (items) that makes one instance's latency grow by
    `latency_ratio` when its GPU% share drops from the whole GPU to `gpu_share` (a fraction in (0, 1)).

    Slice law (DESIGN.md section 5; seed Sec IV-A, GPU% = share of the SMs): t(b; s) = t_fixed + b / (s T), so
    t(b; s) / t(b; 1) = (h + b/s) / (h + b) = r, solved: h = b (1/s - r) / (r - 1). A small h means the batch
    fills the GPU (latency stretches almost as 1/s); a large h means it hardly does (Sec IV-C: kernels that
    leave the GPU idle between launches lose little to a smaller share). Seed Sec V-D, Fig 9: "n instances at
    100/n % each" gives r = n / (throughput ratio). Raises TenancyError where no h >= 0 gives r (r <= 1: the
    share costs nothing; r > 1/s: slower than the SMs alone explain).
    """
    if batch <= 0:
        raise TenancyError(f"batch must be positive, got {batch!r}")
    if not 0 < gpu_share < 1:
        raise TenancyError(f"gpu_share must be a fraction in (0, 1), got {gpu_share!r}")
    if not 1 < latency_ratio <= 1 / gpu_share:
        raise TenancyError(f"a latency ratio of {latency_ratio:g} at a {gpu_share:.0%} share has no slice-law "
                           f"half-saturation batch: it must lie in (1, {1 / gpu_share:g}]")
    return batch * (1 / gpu_share - latency_ratio) / (latency_ratio - 1)


def implied_copy_cpu_s_per_item(target_rps: float, dma_rps: float, dma_cpu_s_per_item: float) -> float:
    """CPU seconds per item the CUDA-Copy path must cost for one host thread to fall from `dma_rps` (items/s with
    GPU-DMA) to `target_rps` (items/s), when that thread copies each batch and then waits for it to run (seed
    Sec IV-A: one run-to-completion VNF thread; Sec V-B: CUDA-Copy gathers and cudaMemcpy's on the CPU, GPU-DMA
    only launches the gather kernel; Sec VI-A: "The CPU becomes the bottleneck").

    Per item the thread spends K/b on the GPU's part of a batch of b and x on the CPU's copy: 1/dma_rps = K/b + d
    with d = `dma_cpu_s_per_item`, 1/target_rps = K/b + c, so c = d + 1/target_rps - 1/dma_rps (seconds per
    item). A thread that only copies (one gather thread for every GPU) has K = 0 and dma_rps = 1/d: c = 1/target.
    """
    if not (target_rps > 0 and dma_rps > 0 and dma_cpu_s_per_item >= 0):
        raise ValueError(f"need positive throughputs and a non-negative GPU-DMA cost; got target={target_rps!r}, "
                         f"dma={dma_rps!r}, d={dma_cpu_s_per_item!r}")
    return dma_cpu_s_per_item + 1.0 / target_rps - 1.0 / dma_rps
