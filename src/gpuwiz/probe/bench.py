"""The measurements of ``gpuwiz probe`` (needs PyTorch: ``pip install 'gpuwiz[probe]'``).

Each phase runs inside its share of the time budget: a warm-up call, then timed calls until the share
is spent (at least one). On a GPU the shapes are the plan's; on CPU they are cut to tiny sizes and
every result is labelled "cpu: not representative".

* GEMM: the MLP up-projection of one layer, (micro-batch x seq, hidden) x (hidden, ffn), at the
  training precision; 2·M·N·K FLOPs per call.
* HBM bandwidth: ``dst.copy_(src)`` of a large buffer; 2 x bytes moved per call (read + write).
* One forward/backward of a transformer block (``nn.TransformerEncoderLayer``) at the planned
  micro-batch, or of a ResNet-50 bottleneck block (256 -> 64 -> 256 channels at 56x56) for CNNs;
  model FLOPs = 3 x forward FLOPs, counted from the shapes.
* NCCL all-reduce bus bandwidth with several GPUs (gloo on CPU): bus bw = bytes x 2(n-1)/n / time,
  the definition nccl-tests uses (NVIDIA/nccl-tests doc/PERFORMANCE.md).
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import torch
from torch import nn

CPU_LABEL = "cpu: not representative"
CPU_MAX_TOKENS = 256
CPU_MAX_HIDDEN = 256
CPU_MAX_BATCH = 4
HBM_BYTES_GPU = 1 << 30
HBM_BYTES_CPU = 32 << 20
ALLREDUCE_BYTES_GPU = 256 << 20
ALLREDUCE_BYTES_CPU = 4 << 20
MAX_CALLS = 200

_DTYPES = {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16,
           "fp8": torch.bfloat16}


@dataclass(frozen=True, slots=True)
class Timing:
    seconds: float  # per call (median of the timed calls)
    calls: int


@dataclass(frozen=True, slots=True)
class Shapes:
    """What the probe runs: the plan's shapes (cut to tiny sizes on CPU)."""

    kind: str  # "transformer" | "cnn"
    tokens: int  # micro-batch x seq (transformer) or images (cnn)
    micro_batch: int
    seq: int
    hidden: int
    heads: int
    ffn: int
    precision: str


def device_and_dtype(precision: str) -> tuple[torch.device, torch.dtype, bool]:
    """(device, dtype, on_cpu). CPU runs fp32 (bf16 GEMMs on CPU are emulated and mislead even more)."""
    if torch.cuda.is_available():
        return torch.device("cuda", 0), _DTYPES.get(precision, torch.bfloat16), False
    return torch.device("cpu"), torch.float32, True


def fit_to_device(s: Shapes, on_cpu: bool) -> Shapes:
    if not on_cpu:
        return s
    mb = max(1, min(s.micro_batch, CPU_MAX_BATCH))
    hidden = max(16, min(s.hidden, CPU_MAX_HIDDEN))
    heads = max(1, min(s.heads, hidden // 16))
    while hidden % heads:
        heads -= 1
    seq = max(1, min(s.seq, CPU_MAX_TOKENS // mb)) if s.kind == "transformer" else s.seq
    ffn = max(hidden, min(s.ffn, 4 * hidden))
    return Shapes(s.kind, mb * seq if s.kind == "transformer" else mb, mb, seq, hidden, heads, ffn, s.precision)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(fn: Callable[[], Any], device: torch.device, budget_s: float) -> Timing:
    """Median seconds per call: one warm-up call, then calls until ``budget_s`` is spent (at least one)."""
    fn()
    _sync(device)
    times: list[float] = []
    deadline = time.perf_counter() + max(0.0, budget_s)
    while True:
        t0 = time.perf_counter()
        fn()
        _sync(device)
        times.append(time.perf_counter() - t0)
        if time.perf_counter() >= deadline or len(times) >= MAX_CALLS:
            break
    times.sort()
    return Timing(times[len(times) // 2], len(times))


def gemm_tflops(s: Shapes, device: torch.device, dtype: torch.dtype, budget_s: float) -> tuple[float, str]:
    m, k, n = s.tokens, s.hidden, s.ffn
    if s.kind == "cnn":  # the 3x3 conv of a bottleneck as its implicit GEMM: (N·56·56, 64·9) x (64·9, 64)
        m, k, n = s.micro_batch * 56 * 56, 64 * 9, 64
    a = torch.randn(m, k, device=device, dtype=dtype)
    b = torch.randn(k, n, device=device, dtype=dtype)
    t = timed(lambda: a @ b, device, budget_s)
    return 2.0 * m * n * k / t.seconds / 1e12, f"{m}x{k} @ {k}x{n} {str(dtype).replace('torch.', '')}, {t.calls} calls"


def hbm_gbps(device: torch.device, budget_s: float, on_cpu: bool) -> tuple[float, str]:
    nbytes = HBM_BYTES_CPU if on_cpu else HBM_BYTES_GPU
    src = torch.empty(nbytes // 4, device=device, dtype=torch.float32)
    dst = torch.empty_like(src)
    t = timed(lambda: dst.copy_(src), device, budget_s)
    return 2.0 * nbytes / t.seconds / 1e9, f"copy of {nbytes >> 20} MiB, {t.calls} calls"


class Bottleneck(nn.Module):
    """ResNet-50's bottleneck block (He et al. 2016, Table 1, conv2_x): 1x1, 3x3, 1x1 + identity."""

    def __init__(self, channels: int = 256, width: int = 64) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(channels, width, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(inplace=True),
            nn.Conv2d(width, width, 3, padding=1, bias=False), nn.BatchNorm2d(width), nn.ReLU(inplace=True),
            nn.Conv2d(width, channels, 1, bias=False), nn.BatchNorm2d(channels))
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.relu(self.body(x) + x)
        return out


def block_forward_flops(s: Shapes, side: int = 56) -> float:
    """Forward FLOPs of one block (2 per multiply-add), from the shapes."""
    if s.kind == "cnn":
        px = s.micro_batch * side * side
        return 2.0 * px * (256 * 64 + 64 * 64 * 9 + 64 * 256)
    t, h, f = s.tokens, s.hidden, s.ffn
    proj = 2.0 * t * (4 * h * h + 2 * h * f)  # q, k, v, out + two MLP matrices
    attn = 2.0 * 2 * s.micro_batch * s.seq * s.seq * h  # scores + weighted sum
    return proj + attn


def block_step(s: Shapes, device: torch.device, dtype: torch.dtype, budget_s: float) -> tuple[float, float, str]:
    """(seconds per fwd+bwd, achieved TFLOP/s, detail)."""
    if s.kind == "cnn":
        block: nn.Module = Bottleneck().to(device=device, dtype=dtype)
        x = torch.randn(s.micro_batch, 256, 56, 56, device=device, dtype=dtype, requires_grad=True)
        what = f"ResNet-50 bottleneck block, batch {s.micro_batch}, 256x56x56"
    else:
        block = nn.TransformerEncoderLayer(s.hidden, s.heads, s.ffn, dropout=0.0, batch_first=True,
                                           norm_first=True).to(device=device, dtype=dtype)
        x = torch.randn(s.micro_batch, s.seq, s.hidden, device=device, dtype=dtype, requires_grad=True)
        what = f"transformer block h={s.hidden} heads={s.heads} ffn={s.ffn}, micro-batch {s.micro_batch} x seq {s.seq}"

    def step() -> None:
        out = block(x)
        out.float().sum().backward()

    t = timed(step, device, budget_s)
    achieved = 3.0 * block_forward_flops(s) / t.seconds / 1e12
    return t.seconds, achieved, f"{what}, {t.calls} calls"


def bus_bandwidth_gbps(nbytes: int, world: int, seconds: float) -> float:
    """All-reduce bus bandwidth (nccl-tests): algorithm bw x 2(n-1)/n."""
    if world < 2 or seconds <= 0:
        return 0.0
    return nbytes / seconds * 2.0 * (world - 1) / world / 1e9


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _allreduce_worker(rank: int, world: int, port: int, nbytes: int, budget_s: float, backend: str,
                      result: Any) -> None:
    import torch.distributed as dist

    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group(backend, rank=rank, world_size=world)
    try:
        device = torch.device("cuda", rank) if backend == "nccl" else torch.device("cpu")
        if backend == "nccl":
            torch.cuda.set_device(device)
        buf = torch.ones(nbytes // 4, device=device, dtype=torch.float32)
        dist.all_reduce(buf)
        _sync(device)
        times = []
        deadline = time.perf_counter() + budget_s
        while True:
            dist.barrier()
            t0 = time.perf_counter()
            dist.all_reduce(buf)
            _sync(device)
            times.append(time.perf_counter() - t0)
            flag = torch.tensor([1.0 if time.perf_counter() >= deadline or len(times) >= MAX_CALLS else 0.0],
                                device=device)
            dist.all_reduce(flag, op=dist.ReduceOp.MAX)  # every rank stops after the same call
            if flag.item() > 0:
                break
        times.sort()
        if rank == 0:
            result.put(times[len(times) // 2])
    finally:
        dist.destroy_process_group()


def allreduce_busbw(world: int, budget_s: float, on_cpu: bool) -> tuple[float, str]:
    """Bus bandwidth of an all-reduce over ``world`` local ranks (NCCL on GPUs, gloo on CPU)."""
    import torch.multiprocessing as mp
    from torch.multiprocessing.spawn import start_processes

    nbytes = ALLREDUCE_BYTES_CPU if on_cpu else ALLREDUCE_BYTES_GPU
    backend = "gloo" if on_cpu else "nccl"
    ctx = mp.get_context("spawn")
    result = ctx.SimpleQueue()
    start = cast(Callable[..., object], start_processes)
    start(_allreduce_worker, args=(world, _free_port(), nbytes, budget_s, backend, result), nprocs=world, join=True,
          start_method="spawn")
    seconds = float(result.get())
    return bus_bandwidth_gbps(nbytes, world, seconds), f"{backend} all-reduce of {nbytes >> 20} MiB over {world} ranks"
