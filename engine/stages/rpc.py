"""RPC / host I/O path: the cost of getting a request onto the GPU and its answer back (DESIGN.md section 5).

Models the SplitRPC seed (Kumar et al. 2023, Sec 2-4, 6.2) and the GPU-runtime-primitives seed (Sec V-A
completion notification, V-B GPU-DMA). A path is four choices (network stack, copy method, orchestration,
completion) plus per-request / per-packet / per-byte costs in `RpcComponents` (unit in the field name,
source in the description). `rpc_breakdown` is pure; it splits end-to-end (E2E) time as Fig 1 / Fig 8 do:
- client proc: client (de)serialisation (for SplitRPC: the 64-B header and the payload copy into packets);
- server proc: server (de)serialisation / dispatch, plus the SmartNIC -> host notification (Sec 7.1);
- network: base round trip + bytes on the wire (payload + per-packet headers and framing) over the link;
- data movement: "the remaining time" (Sec 6.2): network stacks at both ends, the RPC transport (gRPC HTTP/2,
  completion queues, thread hand-offs, flow-control stalls), SmartNIC ARM copies and every memory hop
  (NIC -> kernel -> user -> GPU with cudaMemcpy, a GPU DMA gather from packet buffers, or NIC -> GPU direct);
- orchestration: what the orchestration choice adds to the profiled GPU time (the first CPU launch, Sec 3.2;
  a CUDA-graph launch; or the GPU-managed sync + per-kernel penalty, Fig 3). Reported beside `gpu_s` and as
  `gpu_overhead_s`: the engine adds it to the GPU stage, not to the RPC stage. `paper_categories()` counts
  it inside "GPU", as Fig 8 does for Lynx;
- completion: how the host learns the GPU is done (blocking sync, callback, polling, spin; Sec V-A).
Seconds inside the engine; fields in us / ns / GB/s (decimal). Per-request work (SerDes, stacks, wire, NIC
DMA as packets arrive) is the request's own; per-batch work (host<->GPU copies, launches, completion) covers
the whole batch, is on every member's critical path, and is divided by the batch in `cpu_s_per_request`.
"""

import math
from typing import TYPE_CHECKING, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, computed_field, model_validator

from engine.stages.base import StageCost
from engine.stages.pcie import PCIE_X16_GBPS
from engine.vocab import Completion, CopyMethod, Orchestration, RpcPreset, Stack

if TYPE_CHECKING:  # the spec's type only: the Scenario validates rpc.components against RpcComponents
    from engine.scenario import RpcSpec

#: kernels assumed when a model row has no kernel_count (the median of SplitRPC Table 1).
DEFAULT_KERNEL_COUNT = 50
#: SCV of the RPC stage's service time: between copies (0) and exponential hand-offs (1); assumed, unmeasured.
RPC_SCV = 0.5

_US, _NS = 1e-6, 1e-9


class RpcComponents(BaseModel):
    """Every editable cost of one RPC path. Defaults: the gRPC-over-Linux path on SplitRPC's testbed (Sec 6.1,
    Table 2: 100GbE back-to-back, MTU 9000, PCIe Gen3 switch, A100); `PRESETS` changes choices and costs.
    'tuned' marks a value chosen within a plausible range to fit the seed figures (engine.stages.rpc_calibration)."""

    # allow_inf_nan=False: a component given as text ('nan', 'inf') or a float must still be a finite cost
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    # ---- path choices
    network: bool = Field(True, description="False: client on the server, no NIC and no wire (the local ideal)")
    stack: Stack = Field("kernel", description="server network stack; 'none' exactly when there is no network")
    copy_method: CopyMethod = "cudamemcpy"
    orchestration: Orchestration = "cpu"
    completion: Completion = Field("spin", description="CUDA's default sync (cudaDeviceScheduleAuto) spins when "
                                   "cores outnumber GPU contexts; Sync-lite is 'polling'")
    # ---- wire (network)
    base_rtt_us: float = Field(4.0, ge=0, description="NIC-to-NIC round trip, back-to-back (rpc_figures: RDMA "
                               "write 0.93 us one-way, RoCE send 5.8 us)")
    link_gbps: float = Field(100.0, gt=0, description="Table 2: 100GbE")
    mtu_bytes: int = Field(9000, ge=576, description="jumbo frames (Sec 6.1)")
    header_bytes_per_packet: int = Field(64, ge=0, description="UDP+IP+Ethernet+service header (Sec 5.1)")
    framing_bytes_per_packet: int = Field(24, ge=0, description="Ethernet preamble 8 + gap 12 + FCS 4")
    # ---- serialisation: client proc / server proc (Fig 1 'SerDes(C)', 'SerDes(S)'); bytes = request + response
    client_serdes_us_per_request: float = Field(2.0, ge=0)
    client_serdes_ns_per_byte: float = Field(0.2, ge=0, description="tuned (Fig 1 SerDes <9%): protobuf, 5 GB/s")
    server_serdes_us_per_request: float = Field(3.0, ge=0)
    server_serdes_ns_per_byte: float = Field(0.2, ge=0, description="tuned (as client's; rpc_figures: Triton gRPC "
                                             "(un)marshal 51 us)")
    # ---- RPC transport machinery, each end (data movement: Sec 6.2 counts the remainder there)
    transport_us_per_request: float = Field(100.0, ge=0, description="tuned (Fig 8 LeNet 74%): HTTP/2, completion "
                                            "queues, thread hand-offs (rpc_figures: Triton server overhead 128 us)")
    transport_ns_per_byte: float = Field(0.3, ge=0, description="tuned: copies into/out of gRPC slices")
    transport_window_bytes: int = Field(65535, ge=0, description="HTTP/2 initial flow-control window (RFC 7540 "
                                        "6.9.2); 0 = no flow control")
    transport_us_per_window: float = Field(100.0, ge=0, description="tuned (Fig 8 averages): stall per extra "
                                           "window, one WINDOW_UPDATE round trip through the machinery")
    # ---- network stack, each end (the client runs 'kernel' if the server does, else 'bypass')
    kernel_stack_us_per_request: float = Field(15.0, ge=0, description="syscalls, softirq, wake-up")
    kernel_stack_us_per_packet: float = Field(1.0, ge=0, description="skb + TCP per segment")
    kernel_stack_ns_per_byte: float = Field(0.1, ge=0, description="kernel<->user copy, about 10 GB/s")
    bypass_stack_us_per_request: float = Field(0.5, ge=0, description="DPDK/VMA poll loop (rpc_figures: eRPC 10 M "
                                               "small RPC/s per core)")
    bypass_stack_us_per_packet: float = Field(0.1, ge=0)
    snic_arm_us_per_request: float = Field(1.0, ge=0, description="SmartNIC ARM core per request")
    snic_arm_us_per_packet: float = Field(1.5, ge=0, description="tuned (Sec 6.5: ResNet18 degrades > 2500 RPS)")
    snic_arm_copy_gbps: float = Field(4.0, gt=0, description="tuned (Fig 8: sNIC ~5 points behind pNIC): ARM copy "
                                      "into NIC DRAM")
    snic_arm_cores: float = Field(1.0, gt=0, description="ARM cores on the data path: the cap of Sec 6.4-6.5")
    snic_host_notify_us: float = Field(10.0, ge=0, description="SmartNIC -> host notification (Sec 7.1: 10 us)")
    # ---- memory hops
    pcie_gen: Literal[3, 4, 5, 6] = Field(3, description="Table 2: PLX PEX 8796 Gen3 switch")
    pcie_efficiency: float = Field(0.78, gt=0, le=1, description="pinned copy / x16 peak (rpc_figures: P100 Gen3 "
                                   "12.15 of 15.7 GB/s, A100 Gen4 25 of 31.5)")
    pageable_fraction: float = Field(0.7, gt=0, le=1, description="tuned (V-B CPU cycles): pageable cudaMemcpy "
                                     "rate / pinned")
    cpu_copy_gbps: float = Field(10.0, gt=0, description="one core gathering packet payloads into a buffer")
    memcpy_launch_us: float = Field(10.0, ge=0, description="fixed cost of one synchronous cudaMemcpy")
    gpu_dma_launch_us: float = Field(5.0, ge=0, description="launch of the GPU gather kernel (V-B)")
    gpu_dma_efficiency: float = Field(0.75, gt=0, le=1, description="tuned (V-B Table I): UVA gather of 1-KiB "
                                      "payloads / pinned copy")
    gpu_dma_cpu_ns_per_byte: float = Field(0.0064, ge=0, description="CPU building the packet list (V-B: 86263 "
                                           "cycles at 2.4 GHz for 8 x 602112 B, less the launch)")
    p2p_setup_us: float = Field(1.0, ge=0, description="NIC DMA descriptor + doorbell per transfer")
    gather_kernel_us: float = Field(4.0, ge=0, description="GPU kernel gathering a multi-segment request (Sec 5.2)")
    gpu_mem_gbps: float = Field(700.0, gt=0, description="gather read + write in HBM (A100 1.5 TB/s / 2)")
    # ---- orchestration (Sec 3.2, Fig 3)
    cpu_launch_us_per_kernel: float = Field(5.0, ge=0, description="cudaLaunchKernel host cost, about 4-6 us")
    graph_launch_us: float = Field(8.0, ge=0, description="one cudaGraphLaunch of the whole model (O1+CG)")
    graph_us_per_kernel: float = Field(0.2, ge=0, description="per graph node at launch, host and device")
    gpu_managed_us_per_kernel: float = Field(23.0, ge=0, description="tuned (Fig 3, Fig 8 Lynx): O2 device-side "
                                             "launch + inter-kernel sync per kernel")
    gpu_managed_sync_us: float = Field(250.0, ge=0, description="tuned: O2 parent kernel + final device-side sync, "
                                       "'prohibitive' (Sec 3.2.1)")
    # ---- completion notification (GPU-runtime-primitives Sec V-A)
    blocking_sync_us: float = Field(1022.0, ge=0, description="V-A: synchronize 4.17 ms vs Sync-lite 3.2 ms "
                                    "(4 GPUs, 4 processes; an idle host wakes faster)")
    callback_us: float = Field(652.0, ge=0, description="V-A: callback ~600 us GPU idle, 3.8 vs 3.2 ms")
    polling_interval_us: float = Field(100.0, gt=0, description="V-A: Sync-lite checks every 100 us")
    poll_check_us: float = Field(2.0, ge=0, description="V-A: one cudaEventQuery, about 2 us")
    spin_check_us: float = Field(0.5, ge=0, description="one query in a spin loop; the core spins all the wait")
    # ---- server structure
    serial_executor: bool = Field(False, description="True: one run-to-completion executor per GPU instance "
                                  "does each batch's server-side host work, copies and completion in series with "
                                  "its GPU work (SplitRPC Sec 5.3, 6.4: 'once an execution ... is complete, we run "
                                  "another'); False: a pool of host cores does it beside the GPU")

    @model_validator(mode="after")
    def _stack_matches_network(self) -> "RpcComponents":
        if self.network == (self.stack == "none"):
            raise ValueError(f"stack {self.stack!r} does not fit network={self.network}: 'none' iff no network")
        return self


class RpcBreakdown(BaseModel):
    """One request's E2E split (s), its host CPU-seconds, and the caps that host cores do not set (req/s)."""

    model_config = ConfigDict(frozen=True)

    gpu_s: float
    client_proc_s: float
    server_proc_s: float
    network_s: float
    data_movement_s: float
    orchestration_s: float = Field(description="GPU-stage time added by orchestration (= gpu_overhead_s)")
    completion_s: float
    e2e_s: float
    cpu_s_per_request: float = Field(description="server host CPU-seconds per request, incl. launches and polling")
    critical_cpu_s: float = Field(description="the part of cpu_s_per_request on the critical path before the GPU")
    launch_cpu_s: float = Field(0.0, description="the part of cpu_s_per_request spent launching kernels "
                                                 "(gather kernels, orchestration)")
    arm_s_per_request: float = 0.0
    link_capacity_rps: float = math.inf
    snic_capacity_rps: float = math.inf

    @property
    def gpu_overhead_s(self) -> float:
        """Time the orchestration choice adds to the GPU stage (the engine adds it there)."""
        return self.orchestration_s

    @computed_field
    @property
    def capacity_rps(self) -> float:
        """Tightest cap that host cores do not set: the link or the SmartNIC ARM cores."""
        return min(self.link_capacity_rps, self.snic_capacity_rps)

    def paper_categories(self) -> dict[str, float]:
        """The five categories of SplitRPC Fig 1 / Fig 8 (orchestration inside GPU, completion in server)."""
        return {"gpu": self.gpu_s + self.orchestration_s, "client_proc": self.client_proc_s,
                "server_proc": self.server_proc_s + self.completion_s, "network": self.network_s,
                "data_movement": self.data_movement_s}


#: SplitRPC's stack (Sec 5): UDP + 64-B header over DPDK, the Inference-Monitor state machine, the client copying
#: the payload into packet buffers (tuned 0.2 ns/B: Fig 8 ResNet18 35% over local), no flow control.
_SPLIT = dict(transport_us_per_request=0.5, transport_ns_per_byte=0.0, transport_window_bytes=0,
              client_serdes_us_per_request=1.0, client_serdes_ns_per_byte=0.2, server_serdes_us_per_request=2.0,
              server_serdes_ns_per_byte=0.0)

#: The paths compared in SplitRPC Sec 6.1, plus plain gRPC. All spin-wait for completion.
PRESETS: dict[RpcPreset, RpcComponents] = {
    RpcPreset.GRPC: RpcComponents(),  # gRPC over the Linux stack (Sec 1-2, Fig 1): the Triton-style default
    RpcPreset.GRPC_BYPASS: RpcComponents(stack="bypass"),  # gRPC-VMA (Sec 6.1): kernel bypass; the baseline
    # Lynx-sNIC (Sec 4.2): control and data to the GPU through SmartNIC ARM cores, GPU-managed (O2).
    RpcPreset.LYNX_SNIC: RpcComponents(stack="smartnic", copy_method="direct", orchestration="gpu", **_SPLIT),
    # SplitRPC-pNIC (Sec 4.3, 5.1): control to the CPU, data DMA'd by the P2P NIC into GPU memory, O1.
    RpcPreset.SPLITRPC_PNIC: RpcComponents(stack="bypass", copy_method="direct", **_SPLIT),
    # SplitRPC-sNIC (Sec 5.1-5.2): ARM cores assemble the payload in NIC DRAM and RDMA it to the GPU, O1.
    RpcPreset.SPLITRPC_SNIC: RpcComponents(stack="smartnic", copy_method="direct", **_SPLIT),
    # SplitRPC-local (Sec 6.1): client on the server, tensor written in place in GPU memory: the ideal.
    RpcPreset.LOCAL: RpcComponents(network=False, stack="none", copy_method="direct",
                                   **{**_SPLIT, "client_serdes_ns_per_byte": 0.0}),
}


def with_changes(c: RpcComponents, **changes) -> RpcComponents:
    """A validated copy of `c` with `changes` (pydantic's model_copy would skip validation)."""
    return RpcComponents.model_validate({**c.model_dump(), **changes})


def components_for(spec: "RpcSpec") -> RpcComponents:
    """The preset's components with the spec's overrides (link_gbps always; the others where the spec names one)."""
    names = ("copy_method", "orchestration", "completion", "polling_interval_us")
    return with_changes(PRESETS[spec.preset], **{**spec.components, "link_gbps": spec.link_gbps,
                                                 **{n: getattr(spec, n) for n in names if getattr(spec, n) is not None}})


def _segments(nbytes: float, c: RpcComponents) -> int:
    return max(1, math.ceil(nbytes / (c.mtu_bytes - c.header_bytes_per_packet)))


def _wire_bytes(nbytes: float, c: RpcComponents) -> float:  # payload + per-packet header and Ethernet framing
    return nbytes + _segments(nbytes, c) * (c.header_bytes_per_packet + c.framing_bytes_per_packet)


def _kernels(model: "ModelLike") -> int | None:  # None, NaN (a pandas row) or < 1: unknown
    return int(model.kernel_count) if model.kernel_count is not None and model.kernel_count >= 1 else None


def _stack_s(kind: Stack, c: RpcComponents, packets: int, payload_bytes: float) -> float:
    """One end's network-stack time (s); payload_bytes are the bytes the stack itself copies."""
    per_req, per_pkt, per_byte = {"kernel": (c.kernel_stack_us_per_request, c.kernel_stack_us_per_packet,
                                             c.kernel_stack_ns_per_byte),
                                  "bypass": (c.bypass_stack_us_per_request, c.bypass_stack_us_per_packet, 0.0)
                                  }.get(kind, (0.0, 0.0, 0.0))  # the SmartNIC's ARM work is counted apart
    return (per_req + per_pkt * packets) * _US + per_byte * payload_bytes * _NS


def rpc_breakdown(c: RpcComponents, request_bytes: float, response_bytes: float, kernel_count: int,
                  gpu_time_s: float, batch: int = 1) -> RpcBreakdown:
    """E2E split of one request in a batch of `batch` (seconds); bytes are per request. Hops run in series,
    except the NIC's DMA, which runs as packets arrive and adds what the wire does not cover. Copy methods
    (Sec 3.1, V-B): cudamemcpy = CPU gathers payloads into a buffer, then a synchronous cudaMemcpy (both hold
    a core); gpu-dma = a GPU kernel gathers from pinned packet buffers over PCIe (the CPU only launches it);
    direct = the NIC DMAs into GPU memory (P2P), or ARM cores RDMA it from NIC DRAM; local: in place."""
    if batch < 1 or gpu_time_s < 0 or request_bytes < 0 or response_bytes < 0 or kernel_count < 1:
        raise ValueError("need batch >= 1, kernel_count >= 1 and non-negative bytes and GPU time")
    req, resp, b = float(request_bytes), float(response_bytes), int(batch)
    both, seg = req + resp, _segments(req, c) + _segments(resp, c)  # bytes and packets of the round trip
    pinned, wire = PCIE_X16_GBPS[c.pcie_gen] * c.pcie_efficiency, c.link_gbps / 8.0  # GB/s = bytes per ns
    smart, local = c.stack == "smartnic", not c.network

    client = c.client_serdes_us_per_request * _US + c.client_serdes_ns_per_byte * both * _NS
    server_cpu = c.server_serdes_us_per_request * _US + c.server_serdes_ns_per_byte * both * _NS
    server = server_cpu + (c.snic_host_notify_us * _US if smart and c.orchestration != "gpu" else 0.0)
    network = 0.0 if local else c.base_rtt_us * _US + (_wire_bytes(req, c) + _wire_bytes(resp, c)) / wire * _NS

    # data movement, per request: transports and stacks at both ends, SmartNIC ARM, NIC DMA
    transport = c.transport_us_per_request * _US + c.transport_ns_per_byte * both * _NS
    win = c.transport_window_bytes  # flow control: the sender waits for a window update per extra window
    stall = sum(max(0, math.ceil(x / win) - 1) for x in (req, resp)) * c.transport_us_per_window * _US if win else 0.0
    client_kind: Stack = "none" if local else ("kernel" if c.stack == "kernel" else "bypass")
    host_bytes = 0.0 if c.copy_method == "direct" else both
    server_stack = _stack_s(c.stack, c, seg, host_bytes)
    dm = 2 * transport + stall + _stack_s(client_kind, c, seg, both) + server_stack
    dm_cpu = transport + server_stack
    arm = 0.0
    if smart:  # ARM cores take the packets, copy payloads into NIC DRAM, RDMA them on (Sec 5.1-5.2)
        arm = (c.snic_arm_us_per_request + c.snic_arm_us_per_packet * seg) * _US + both / c.snic_arm_copy_gbps * _NS
        dm += arm + 2 * c.p2p_setup_us * _US + both / pinned * _NS
    elif not local:  # NIC DMA into host or GPU memory overlaps the wire
        for nbytes in (req, resp):  # P2P through the switch is taken to run at the pinned-copy rate
            dm += (c.p2p_setup_us * _US + max(0.0, nbytes / pinned - nbytes / wire) * _NS) if nbytes else 0.0
    launch_cpu = 0.0
    if c.copy_method == "direct" and not local:
        for nbytes in (req, resp):  # multi-segment requests are gathered into one tensor on the GPU (Sec 5.2)
            if _segments(nbytes, c) > 1:
                dm += c.gather_kernel_us * _US + nbytes / c.gpu_mem_gbps * _NS
                launch_cpu += c.cpu_launch_us_per_kernel * _US

    # data movement, per batch: host <-> GPU copies
    bytes_b = both * b
    batch_dm = batch_cpu = 0.0
    copies = (req > 0) + (resp > 0)  # one host->GPU copy for the batch's requests, one back for the responses
    if c.copy_method == "cudamemcpy":
        gather = 0.0 if local else bytes_b / c.cpu_copy_gbps * _NS
        batch_dm = gather + copies * c.memcpy_launch_us * _US + bytes_b / (pinned * c.pageable_fraction) * _NS
        batch_cpu = batch_dm
    elif c.copy_method == "gpu-dma":
        batch_dm = copies * c.gpu_dma_launch_us * _US + bytes_b / (pinned * c.gpu_dma_efficiency) * _NS
        batch_cpu = copies * c.gpu_dma_launch_us * _US + c.gpu_dma_cpu_ns_per_byte * bytes_b * _NS
    dm += batch_dm

    # orchestration (Sec 3.2): extra GPU-stage time and its host CPU
    n = int(kernel_count)
    if c.orchestration == "cpu":  # first launch exposed; launches slower than the kernels stretch the GPU
        orch = c.cpu_launch_us_per_kernel * _US + max(0.0, n * c.cpu_launch_us_per_kernel * _US - gpu_time_s)
        orch_cpu = n * c.cpu_launch_us_per_kernel * _US
    elif c.orchestration == "cpu-graphs":
        orch = orch_cpu = (c.graph_launch_us + n * c.graph_us_per_kernel) * _US
    else:  # persistent kernel, device-side launches and inter-kernel synchronisation
        orch, orch_cpu = (c.gpu_managed_sync_us + n * c.gpu_managed_us_per_kernel) * _US, 0.0

    # completion (V-A): blocking wake-up, callback, or polling every interval
    if c.completion == "blocking":
        done, done_cpu = c.blocking_sync_us * _US, 0.0
    elif c.completion == "callback":
        done, done_cpu = c.callback_us * _US, 0.0
    elif c.completion == "spin":  # the waiting thread holds a core for the whole GPU time
        done = c.spin_check_us * _US
        done_cpu = gpu_time_s + orch + done
    else:  # mean wait half an interval, then one check
        done = (c.polling_interval_us / 2 + c.poll_check_us) * _US
        wait = gpu_time_s + orch + done
        done_cpu = min(wait, (wait / (c.polling_interval_us * _US) + 1) * c.poll_check_us * _US)

    e2e = client + network + server + dm + gpu_time_s + orch + done
    critical_cpu = server_cpu + dm_cpu + batch_cpu / b
    cpu = critical_cpu + launch_cpu + (orch_cpu + done_cpu) / b
    link_cap = wire * 1e9 / max(_wire_bytes(req, c), _wire_bytes(resp, c)) if c.network else math.inf
    snic_cap = c.snic_arm_cores / arm if arm > 0 else math.inf
    return RpcBreakdown(gpu_s=gpu_time_s, client_proc_s=client, server_proc_s=server, network_s=network,
                        data_movement_s=dm, orchestration_s=orch, completion_s=done, e2e_s=e2e,
                        cpu_s_per_request=cpu, critical_cpu_s=critical_cpu, launch_cpu_s=launch_cpu + orch_cpu / b,
                        arm_s_per_request=arm,
                        link_capacity_rps=link_cap, snic_capacity_rps=snic_cap)


def serial_executor_s(c: RpcComponents, request_bytes: float, response_bytes: float,
                      kernel_count: int) -> tuple[float, float]:
    """(seconds per item, seconds per batch) that a run-to-completion server adds to its executor's busy time.

    SplitRPC's servers (Sec 5.3 Inference Monitor, Sec 6.4 work-conserving batching: 'once an execution with a
    particular batch-size is complete, we run another execution') hand a batch to the GPU only when the previous
    one is done, and the thread that does so also does the server side of the RPC path: SerDes, transport and
    stack work for each request, and the batch's host <-> GPU copies (Sec 3.1: cudaMemcpy on the request path
    for gRPC, none for the NIC's direct DMA of Sec 5.1), then waits for completion. Those run in series with the
    kernels, so a path whose server side is heavy saturates its executor before the GPU is busy: the knee moves
    (Sec 6.3, Fig 9) and batching gains less (Sec 6.4, Fig 10). Kernel launches overlap the kernels (O1) and
    are not counted here (the first launch is already in `gpu_overhead_s`).

    Per item: the critical-path host CPU of one request (`RpcBreakdown.critical_cpu_s` less its share of the
    batch's fixed copy cost); per batch: the fixed part of the copies plus the completion latency. Derived from
    `rpc_breakdown` at batch 1 and 2, where critical_cpu_s(b) = item + fixed / b exactly (every copy cost is
    linear in the batch's bytes). Seconds; bytes per request.
    """
    one, two = (rpc_breakdown(c, request_bytes, response_bytes, kernel_count, 0.0, batch=b) for b in (1, 2))
    fixed = max(0.0, 2.0 * (one.critical_cpu_s - two.critical_cpu_s))
    return max(0.0, one.critical_cpu_s - fixed), fixed + one.completion_s


#: host CPU consumers of the RPC stage (HostCpuUse.cores keys)
RPC_SERVING, LAUNCH_THREADS, COMPLETION_WAIT = "RPC serving", "kernel launch threads", "completion wait"


class ModelLike(Protocol):  # a models.csv row (engine.seed.records.ModelRow) or anything with these attributes
    request_bytes: int
    response_bytes: int
    kernel_count: int | None


def rpc_path(spec: "RpcSpec", model: ModelLike, gpu_time_s: float, pcie_gen: int = 4, batch: int = 1) -> RpcBreakdown:
    """`rpc_breakdown` for a scenario's RPC spec and a models.csv row (kernel_count defaults to 50)."""
    return rpc_breakdown(with_changes(components_for(spec), pcie_gen=int(pcie_gen)), model.request_bytes,
                         model.response_bytes, _kernels(model) or DEFAULT_KERNEL_COUNT, gpu_time_s, batch)


def rpc_serial_executor(spec: "RpcSpec", model: ModelLike, pcie_gen: int = 4) -> tuple[float, float]:
    """`serial_executor_s` for a scenario's RPC spec and a models.csv row: (s per request, s per batch)."""
    return serial_executor_s(with_changes(components_for(spec), pcie_gen=int(pcie_gen)), model.request_bytes,
                             model.response_bytes, _kernels(model) or DEFAULT_KERNEL_COUNT)


def rpc_stage(spec: "RpcSpec", model: ModelLike, gpu_time_s: float, pcie_gen: int = 4, cores: float = 1.0,
              batch: int = 1) -> StageCost:
    """The RPC stage for the analytic engine (seconds, requests/s, CPU-seconds).

    service_s: server host work holding a core on the critical path (server SerDes, transport and stack, CPU
    copies); fixed_s: the rest, holding no host core (client, wire, NIC / ARM / GPU DMA, completion). servers =
    cores; capacity_rps = min(cores / host_cpu_s, link cap, SmartNIC ARM cap), where host_cpu_s (CPU-seconds per
    request) includes kernel launches and spin-waiting; scv = RPC_SCV (0.5, assumed). Orchestration is not in
    this stage: add `rpc_path(...).gpu_overhead_s` to the GPU stage. A one-stream server also idles its GPU for
    the completion latency (V-A, Fig 6b); the engine may add `completion_s` to the GPU occupancy.
    """
    bd = rpc_path(spec, model, gpu_time_s, pcie_gen, batch)
    parts = {"client_proc": bd.client_proc_s, "network": bd.network_s, "server_proc": bd.server_proc_s,
             "data_movement": bd.data_movement_s, "completion": bd.completion_s}
    total = sum(parts.values())
    service = min(bd.critical_cpu_s, total)
    cap = min(cores / bd.cpu_s_per_request if bd.cpu_s_per_request > 0 else math.inf, bd.capacity_rps)
    notes = [f"preset {spec.preset.value}; GPU-stage overhead {bd.gpu_overhead_s * 1e6:.1f} us (orchestration)"]
    notes += [f"kernel count unknown: assumed {DEFAULT_KERNEL_COUNT}"] if _kernels(model) is None else []
    notes += ["SmartNIC ARM cores cap throughput"] if cap == bd.snic_capacity_rps < math.inf else []
    # who spends the host CPU: serving the RPC itself, the threads launching kernels, waiting for completion
    waiting = max(0.0, bd.cpu_s_per_request - bd.critical_cpu_s - bd.launch_cpu_s)
    consumers = {name: s for name, s in ((RPC_SERVING, bd.critical_cpu_s), (LAUNCH_THREADS, bd.launch_cpu_s),
                                         (COMPLETION_WAIT, waiting)) if s > 0}
    return StageCost(name="rpc", service_s=service, fixed_s=total - service, servers=cores, scv=RPC_SCV,
                     capacity_rps=cap, host_cpu_s=bd.cpu_s_per_request, breakdown_s=parts,
                     host_cpu_parts_s=consumers if bd.cpu_s_per_request > 0 else {}, notes=tuple(notes))
