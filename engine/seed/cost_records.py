"""Row types of the estimator's seed tables: per-operator model costs and GPU peak specs (issue 13).

A model's cost table lists its operators in graph order with what each costs one sample at the model's
reference input: FLOPs (2 per multiply-accumulate), weight elements read, and activation elements in
and out. Elements, not bytes: the bytes follow from the serving precision (2 B at fp16, 1 B at int8).
Variable-length models scale each column with the input length to the given power
(`(len / ref_len) ** power`): 1 for a token- or frame-wise layer, 2 for attention scores.

`fusable` marks an operator that inference engines fold into the kernel before it (bias, batch norm,
activation, residual add after a conv or matmul): the estimator charges it no kernel of its own.
"""

from typing import Optional

from pydantic import Field, model_validator

from engine.seed.row import _Row
from engine.vocab import OpClass

#: the most operators one model's cost table may hold: BERT-large has ~700, a hostile file far more
MAX_OPS_PER_MODEL = 20_000
#: the largest per-sample FLOPs of one operator: 1e15 (a thousand times VGG-19's whole graph at 224 px)
MAX_OP_FLOPS = 1e15
#: the largest element count of one tensor: 1e12
MAX_ELEMS = 1e12


class OpCostRow(_Row):
    """One operator of a model's graph: its cost for one sample at the reference input length."""

    model: str = Field(min_length=2)
    op: int = Field(ge=0, lt=MAX_OPS_PER_MODEL, description="position in graph order")
    name: str = Field(min_length=1, description="layer name in the source graph")
    op_class: OpClass
    flops: float = Field(ge=0, le=MAX_OP_FLOPS, description="FLOPs per sample (2 per multiply-accumulate)")
    weight_elems: float = Field(ge=0, le=MAX_ELEMS, description="weight elements read once per batch")
    in_elems: float = Field(ge=0, le=MAX_ELEMS, description="activation elements read per sample")
    out_elems: float = Field(ge=0, le=MAX_ELEMS, description="activation elements written per sample")
    ref_len: Optional[float] = Field(default=None, gt=0, description="reference input length (tokens or s); "
                                     "empty for fixed-size inputs")
    flops_len_power: int = Field(default=0, ge=0, le=2)
    in_len_power: int = Field(default=0, ge=0, le=2)
    out_len_power: int = Field(default=0, ge=0, le=2)
    fusable: bool = False
    note: str = ""

    @model_validator(mode="after")
    def _length_needs_reference(self) -> "OpCostRow":
        if self.ref_len is None and (self.flops_len_power or self.in_len_power or self.out_len_power):
            raise ValueError("a length power needs ref_len (the input length the costs are given at)")
        return self


class GpuSpecRow(_Row):
    """Peak dense throughput and memory system of one GPU SKU (vendor datasheet, no sparsity)."""

    sku: str = Field(min_length=2)
    fp32_tflops: float = Field(gt=0, le=1e5)
    tf32_tflops: Optional[float] = Field(default=None, gt=0, le=1e5, description="empty before Ampere")
    fp16_tflops: float = Field(gt=0, le=1e5, description="tensor-core FP16 with FP32 accumulate where given")
    bf16_tflops: Optional[float] = Field(default=None, gt=0, le=1e5, description="empty before Ampere")
    int8_tops: Optional[float] = Field(default=None, gt=0, le=1e5, description="empty where no INT8 tensor cores")
    memory_bw_gbs: float = Field(gt=0, le=1e5, description="memory bandwidth, GB/s")
    l2_mb: float = Field(gt=0, le=1e4)
    family: str = Field(min_length=2, description="architecture: volta | turing | ampere | hopper")
    note: str = ""
