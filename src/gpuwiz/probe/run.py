"""``gpuwiz probe``: run the measurements in a time budget, report them, and turn them into the same
``calibration:`` section ``gpuwiz calibrate`` writes, next to what gpuwiz predicted for this machine."""

from __future__ import annotations

import sys
import time
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TextIO

from gpuwiz.calibrate.gpus import match_gpu
from gpuwiz.core.catalog import Catalog
from gpuwiz.core.errors import GpuwizError
from gpuwiz.core.models import CalibrationSpec, Requirements
from gpuwiz.probe.inventory import Inventory

if TYPE_CHECKING:
    from gpuwiz.probe.bench import Shapes

DEFAULT_BUDGET_S = 120.0
SETUP_SHARE = 0.25  # of the budget, left for building tensors/modules and starting ranks
WEIGHTS = {"gemm": 0.25, "hbm": 0.15, "block": 0.4, "allreduce": 0.2}
# Without a config: a Llama-3-8B layer (hidden 4096, 32 heads, ffn 14336) at micro-batch 1 x seq 4096.
DEFAULT_SHAPE = dict(hidden=4096, heads=32, ffn=14336, seq=4096, micro_batch=1)


@dataclass
class ProbeResult:
    device: str
    on_cpu: bool
    gpu_id: str | None
    count: int
    shapes: str
    lines: list[tuple[str, str, str]] = field(default_factory=list)  # (what, figure, detail)
    comparison: list[str] = field(default_factory=list)
    calibration: CalibrationSpec | None = None


def flops_text(tflops: float) -> str:
    return f"{tflops:,.2f} TFLOP/s" if tflops >= 1 else f"{tflops * 1000:,.2f} GFLOP/s"


class Progress:
    """A one-line progress bar on a terminal, one line per phase otherwise."""

    def __init__(self, total: int, out: TextIO) -> None:
        self.total, self.done, self.out = total, 0, out
        self.tty = bool(getattr(out, "isatty", lambda: False)())

    def step(self, what: str) -> None:
        width = 20
        filled = int(width * self.done / max(1, self.total))
        bar = "#" * filled + "." * (width - filled)
        text = f"probe [{bar}] {self.done}/{self.total} {what}"
        self.out.write(("\r" + text.ljust(79)) if self.tty else text + "\n")
        self.out.flush()
        self.done += 1

    def finish(self) -> None:
        self.out.write(("\r" + f"probe [{'#' * 20}] done".ljust(79) + "\n") if self.tty else "probe: done\n")
        self.out.flush()


def _shapes(req: Requirements | None, catalog: Catalog, gpu_id: str | None, count: int) -> tuple[Shapes, str, int]:
    """(Shapes, model name, micro-batch source) for the probe, from the config's model and plan."""
    from gpuwiz.probe.bench import Shapes

    precision = req.training.precision if req else "bf16"
    if req is None:
        d = DEFAULT_SHAPE
        return (Shapes("transformer", d["micro_batch"] * d["seq"], d["micro_batch"], d["seq"], d["hidden"], d["heads"],
                       d["ffn"], precision), "Llama-3-8B-shaped layer (no --config)", 0)
    from gpuwiz.core.arch import resolve_model

    model = resolve_model(req.model, catalog)
    mb = req.training.micro_batch
    if mb is None and gpu_id is not None:
        from gpuwiz.core.estimate import estimate

        try:
            mb = estimate(req, catalog, gpu=gpu_id, count=count).plan.micro_batch
        except GpuwizError:
            mb = None
    mb = int(mb or model.default_micro_batch or 1)
    if not model.is_token_model:
        return Shapes("cnn", mb, mb, 1, 256, 1, 256, precision), model.name, mb
    hidden = int(model.hidden or 4096)
    heads = int(model.heads or max(1, hidden // 128))
    ffn = int(model.ffn or 4 * hidden)
    seq = int(req.model.seq_len or model.seq_len or 2048)
    return Shapes("transformer", mb * seq, mb, seq, hidden, heads, ffn, precision), model.name, mb


def run_probe(inv: Inventory, catalog: Catalog, req: Requirements | None = None, budget_s: float = DEFAULT_BUDGET_S,
              progress: TextIO | None = None, measured_at: str = "") -> ProbeResult:
    try:
        with warnings.catch_warnings():  # torch's CPU build warns when NumPy is absent
            warnings.simplefilter("ignore")
            from gpuwiz.probe import bench
    except ImportError:
        raise GpuwizError("probe: needs PyTorch; install it with `pip install 'gpuwiz[probe]'` "
                          "(the CPU build is enough to try it)") from None
    precision = req.training.precision if req else "bf16"
    device, dtype, on_cpu = bench.device_and_dtype(precision)
    count = 1 if on_cpu else max(1, len(inv.gpus))
    gpu_id = None if on_cpu or inv.name is None else match_gpu(inv.name, catalog)
    shapes, model_name, _ = _shapes(req, catalog, gpu_id, count)
    shapes = bench.fit_to_device(shapes, on_cpu)
    label = (f"CPU ({bench.CPU_LABEL}; {inv.note or 'no GPU'})" if on_cpu
             else f"{count}x {inv.name} via {inv.via}"
             + (f" = catalog {gpu_id}" if gpu_id else " (not in the catalog)"))
    res = ProbeResult(device=label, on_cpu=on_cpu, gpu_id=gpu_id, count=count,
                      shapes=f"{model_name}: {shapes.kind}, micro-batch {shapes.micro_batch}"
                             + (f" x seq {shapes.seq}, hidden {shapes.hidden}" if shapes.kind == "transformer" else ""))
    timed_budget = max(0.0, budget_s) * (1.0 - SETUP_SHARE)
    phases = ["gemm", "hbm", "block"] + (["allreduce"] if count > 1 else [])
    weight = sum(WEIGHTS[p] for p in phases)
    share = {p: timed_budget * WEIGHTS[p] / weight for p in phases}
    bar = Progress(len(phases), progress or sys.stderr)
    suffix = f" [{bench.CPU_LABEL}]" if on_cpu else ""
    started = time.perf_counter()

    bar.step("GEMM")
    tflops, detail = bench.gemm_tflops(shapes, device, dtype, share["gemm"])
    res.lines.append(("GEMM", f"{flops_text(tflops)}{suffix}", detail))
    bar.step("memory bandwidth")
    gbps, detail = bench.hbm_gbps(device, share["hbm"], on_cpu)
    res.lines.append(("memory bandwidth", f"{gbps:,.0f} GB/s{suffix}", detail))
    bar.step("forward/backward")
    step_s, block_tflops, detail = bench.block_step(shapes, device, dtype, share["block"])
    res.lines.append(("fwd/bwd of one block", f"{step_s * 1000:,.1f} ms, {flops_text(block_tflops)}{suffix}", detail))
    busbw = None
    if "allreduce" in phases:
        bar.step("all-reduce")
        busbw, detail = bench.allreduce_busbw(count, share["allreduce"], on_cpu)
        res.lines.append(("all-reduce bus bandwidth", f"{busbw:,.0f} GB/s{suffix}", detail))
    bar.finish()
    res.lines.append(("time", f"{time.perf_counter() - started:,.1f} s", f"budget {budget_s:g} s"))

    # ---- the calibration: the block's achieved FLOP/s, as the whole model's ------------------------
    units: float | None = None
    is_token = shapes.kind == "transformer"
    if req is not None:
        units = _units_per_s(req, catalog, block_tflops * 1e12)
    cal: dict[str, object] = {"gpu": gpu_id, "count": count if gpu_id else None,
                              "gpus_per_node": count if gpu_id else None}
    peak = catalog.gpu(gpu_id).peak_tflops(precision) if gpu_id else 0.0
    if units is not None:
        cal["tokens_per_s_per_gpu" if is_token else "samples_per_s_per_gpu"] = round(units, 4)
    elif peak > 0:
        cal["mfu"] = round(min(1.0, block_tflops / peak), 4)
    where = "cpu" if on_cpu else (gpu_id or str(inv.name))
    cal["source"] = (f"gpuwiz probe on {where}: one block's fwd/bwd at {flops_text(block_tflops)} taken for the "
                     f"whole model (no communication, optimizer or data loading: an upper bound)"
                     + (f"; {bench.CPU_LABEL}" if on_cpu else ""))[:500]
    cal["measured_at"] = measured_at[:40] or None
    res.calibration = CalibrationSpec.model_validate({k: v for k, v in cal.items() if v is not None})

    # ---- against gpuwiz's prediction for this machine ---------------------------------------------
    if on_cpu:
        res.comparison.append("gpuwiz models GPUs, not CPUs: nothing to compare on this machine "
                              "(run the probe on a rented GPU machine)")
    elif gpu_id is None:
        res.comparison.append(f"{inv.name} is not in the catalog: no prediction to compare with")
    else:
        g = catalog.gpu(gpu_id)
        res.comparison.append(f"GEMM {tflops:,.0f} TFLOP/s = {tflops / peak:.0%} of the catalog's "
                              f"{peak:,.0f} dense {precision} peak" if peak > 0 else "no catalog peak")
        res.comparison.append(f"memory {gbps:,.0f} GB/s = {gbps / g.memory_bandwidth_gbps:.0%} of the catalog's "
                              f"{g.memory_bandwidth_gbps:,.0f} GB/s")
        if req is not None:
            from gpuwiz.core.estimate import estimate

            try:
                est = estimate(req, catalog, gpu=gpu_id, count=count)
            except GpuwizError as exc:
                res.comparison.append(f"no estimate for this machine: {exc.problems[0]}")
            else:
                res.comparison.append(f"gpuwiz predicts MFU {est.throughput.mfu:.2f} on {count}x {g.name}; one block "
                                      f"measured {block_tflops / peak:.2f} (an upper bound for the whole step)")
    return res


def _units_per_s(req: Requirements, catalog: Catalog, achieved_flops: float) -> float | None:
    """Tokens (or samples) per second per GPU if the whole model ran at the block's FLOP rate."""
    from gpuwiz.core.arch import resolve_model
    from gpuwiz.core.compute import model_flops_per_token

    model = resolve_model(req.model, catalog)
    if model.is_token_model:
        seq = int(req.model.seq_len or model.seq_len or 2048)
        per = model_flops_per_token(model.params_active, int(model.layers or 1), int(model.hidden or 1), seq,
                                    req.training.method)
    else:
        per = (model.train_gflops_per_sample or 0.0) * 1e9
    return achieved_flops / per if per > 0 else None


def render(res: ProbeResult) -> str:
    width = max(len(w) for w, _, _ in res.lines) if res.lines else 10
    out = [f"gpuwiz probe: {res.device}", f"shapes: {res.shapes}", ""]
    out += [f"  {w.ljust(width)}  {fig}  ({d})" for w, fig, d in res.lines]
    if res.comparison:
        out += ["", "against gpuwiz's prediction:"] + [f"  {c}" for c in res.comparison]
    return "\n".join(out) + "\n"
