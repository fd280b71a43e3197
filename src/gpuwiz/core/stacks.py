"""Training software stacks as documented capability sets (catalog.yaml ``stacks:``).

A stack is data, not a branch in the code: which parallel dimensions it supports, which kernels it
fuses, its FP8 recipe, how much of each collective it hides under compute, whether it compiles (fewer
launches, fused elementwise chains) and its memory habits. The cost model (``core.schedule``) and the
planner read these fields; ``training.stack: auto`` picks the first stack in ``AUTO_ORDER`` that
supports what the plan needs, and the estimate says which and why.
"""


from functools import cached_property
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

# "offload": the optimizer states and step on the CPU, parameters on the GPU (DeepSpeed ZeRO-Offload);
# "offload-params": the parameters too (DeepSpeed offload_param, PyTorch FSDP CPUOffload(offload_params=True),
# which has no optimizer-only mode): the plan's ``optimizer`` and ``optimizer+params`` offloads
Dim = Literal["dp", "zero1", "zero2", "fsdp", "tp", "sp", "pp", "vp", "cp", "ep", "offload", "offload-params"]
Fp8Recipe = Literal["none", "transformer-engine", "torchao-float8"]
Attention = Literal["eager", "sdpa", "fa2", "fa3"]
MethodName = Literal["pretrain", "full", "lora", "qlora"]
Vendor = Literal["nvidia", "amd", "intel", "huawei"]


def _all_methods() -> list[MethodName]:
    return ["pretrain", "full", "lora", "qlora"]


def _gpu_vendors() -> list[Vendor]:
    return ["nvidia", "amd"]


class Overlap(BaseModel):
    """Share of each collective's time hidden under compute (0 = fully exposed)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, defer_build=True)
    dp: float = Field(default=0.8, ge=0, le=1)  # gradient all-reduce / reduce-scatter under backward, FSDP prefetch
    tp: float = Field(default=0.0, ge=0, le=1)  # TP all-reduce / RS+AG (Megatron-Core --tp-comm-overlap)
    pp: float = Field(default=0.0, ge=0, le=1)  # pipeline p2p
    cp: float = Field(default=0.5, ge=0, le=1)  # ring-attention KV exchange under the attention blocks
    ep: float = Field(default=0.0, ge=0, le=1)  # MoE all-to-all


class StackEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, defer_build=True)
    id: str
    name: str
    parallel: list[Dim]
    methods: list[MethodName] = Field(default_factory=_all_methods)
    vendors: list[Vendor] = Field(default_factory=_gpu_vendors)
    attention: Attention = "fa2"  # the fused attention kernel it uses where the GPU has one
    fused_kernels: bool = False  # fused norm / rotary / bias-activation / softmax kernels
    fused_loss: bool = False  # fused or chunked cross-entropy (logits never fully materialised in fp32)
    compile: bool = False  # torch.compile / CUDA graphs: fewer launches, elementwise chains fused
    fp8: Fp8Recipe = "none"
    # Full activation checkpointing through PyTorch's non-reentrant checkpoint stops the recompute as soon
    # as every tensor the block's backward needs exists again (torch.utils.checkpoint docs,
    # set_checkpoint_early_stop: on by default): the block's last GEMM (the MLP down projection, whose
    # output backward does not need) is not re-run. Reentrant checkpointing (Megatron, DeepSpeed, the
    # transformers default) re-runs the whole block forward.
    recompute_early_stop: bool = False
    overlap: Overlap = Overlap()
    source: str
    as_of: str
    notes: list[str] = Field(default_factory=list)

    @cached_property
    def _dims(self) -> frozenset[str]:
        return frozenset(self.parallel)

    def supports(self, *, tp: int = 1, pp: int = 1, cp: int = 1, ep: int = 1, vp: int = 1, zero: int = 0,
                 offload: str = "none", method: str = "full", vendor: str = "nvidia", fp8: bool = False) -> bool:
        d = self._dims
        if method not in self.methods or vendor not in self.vendors or (fp8 and self.fp8 == "none"):
            return False
        if (tp > 1 and "tp" not in d) or (pp > 1 and "pp" not in d) or (cp > 1 and "cp" not in d):
            return False
        if (ep > 1 and "ep" not in d) or (vp > 1 and "vp" not in d):
            return False
        if offload != "none" and ("offload-params" if offload == "optimizer+params" else "offload") not in d:
            return False
        return zero == 0 or (zero == 3 and "fsdp" in d) or (zero in (1, 2) and f"zero{zero}" in d)


# `auto`: the simplest stack that supports the plan -- plain PyTorch first, DeepSpeed for pipelines without
# TP, Megatron-Core for TP / 3D / CP / EP layouts, torchtitan where FP8 is asked on an FSDP plan
AUTO_ORDER: tuple[str, ...] = ("pytorch", "deepspeed", "megatron", "torchtitan", "mindspeed")


def auto_stack(stacks: dict[str, StackEntry], **plan: object) -> StackEntry | None:
    for sid in AUTO_ORDER:
        st = stacks.get(sid)
        if st is not None and st.supports(**plan):  # type: ignore[arg-type]
            return st
    return None
