"""A measurement -> the config's ``calibration:`` section (validated by CalibrationSpec)."""

from __future__ import annotations

from dataclasses import dataclass

import yaml

from gpuwiz.calibrate.gpus import match_gpu
from gpuwiz.calibrate.logs import TOKEN_FORMATS, Measurement
from gpuwiz.core.catalog import Catalog
from gpuwiz.core.errors import GpuwizError
from gpuwiz.core.models import CalibrationSpec, Requirements


@dataclass(frozen=True, slots=True)
class Where:
    """What the user says about the measured machine (CLI flags), and the config if given."""

    gpu: str | None = None
    count: int | None = None
    gpus_per_node: int | None = None
    req: Requirements | None = None


def _run_facts(req: Requirements | None,
               catalog: Catalog) -> tuple[bool | None, int | None, int | None, int | None, str]:
    """(token model?, seq_len, global batch, micro-batch, precision) from the config."""
    if req is None:
        return None, None, None, None, "bf16"
    from gpuwiz.core.arch import resolve_model

    try:
        model = resolve_model(req.model, catalog)
    except GpuwizError:
        return None, req.model.seq_len, req.training.global_batch, req.training.micro_batch, req.training.precision
    seq = req.model.seq_len or model.seq_len
    return model.is_token_model, seq, req.training.global_batch, req.training.micro_batch, req.training.precision


def calibration_from(m: Measurement, catalog: Catalog, where: Where, source: str, measured_at: str) -> CalibrationSpec:
    """Per-GPU rates from the log's figures; the GPU and count from the flags, the log, or the config."""
    req = where.req
    hw = req.hardware if req else None
    gpu = where.gpu
    if gpu is None and m.gpu_name:
        gpu = match_gpu(m.gpu_name, catalog)
    if gpu is None and hw and hw.gpu:
        gpu = hw.gpu
    if gpu is not None:
        catalog.gpu(gpu)  # unknown id: one line with did-you-mean
    count = where.count or m.count or (hw.count if hw else None)
    gpn = where.gpus_per_node or (hw.gpus_per_node if hw else None)
    if count and gpn and gpn > count:
        gpn = count
    is_token, seq, gb_cfg, mb_cfg, precision = _run_facts(req, catalog)
    seq = m.seq_len or seq
    if is_token is None and m.format in TOKEN_FORMATS:
        is_token = True
    gb = m.global_batch or gb_cfg
    mb = m.micro_batch or mb_cfg
    notes: list[str] = []

    step = m.median("step_time_s")
    tok = m.median("tokens_per_s_per_gpu")
    smp = m.median("samples_per_s_per_gpu")
    tot_s = m.median("samples_per_s_total")
    tot_t = m.median("tokens_per_s_total")
    sps = m.median("steps_per_s")
    if tok is None and tot_t is not None and count:
        tok = tot_t / count
    if smp is None and tot_s is not None and count:
        smp = tot_s / count
    if m.format == "lightning" and sps is not None and mb and smp is None:
        smp = sps * mb  # one progress-bar iteration = one micro-batch per process
    if smp is None and tok is None and step and gb and count:
        smp = gb / step / count
    if step is None and tot_s is not None and gb:
        step = gb / tot_s
    if tok is None and smp is not None and is_token and seq:
        tok = smp * seq
    mfu = m.median("mfu")
    tflops = m.median("tflops_per_gpu")
    if mfu is None and tflops is not None and gpu is not None:
        peak = catalog.gpu(gpu).peak_tflops(precision)
        mfu = min(1.0, tflops / peak) if peak > 0 else None
    if (tok or smp or step or mfu) and not count:
        notes.append("GPU count unknown (pass --count)")
    if m.whole_run:
        notes.append("the run's summary, warm-up included")
    out: dict[str, object] = {"gpu": gpu, "count": count, "gpus_per_node": gpn}
    if tok is not None and is_token is not False:
        out["tokens_per_s_per_gpu"] = round(tok, 3)
    elif smp is not None:
        out["samples_per_s_per_gpu"] = round(smp, 4)
    elif mfu is not None:
        out["mfu"] = round(mfu, 4)
    if step is not None:
        out["step_time_s"] = round(step, 4)
    if m.peak_memory_gib:
        out["peak_memory_gib"] = round(m.peak_memory_gib, 2)
    detail = [f"{m.format} log"]
    if m.points and not m.whole_run:
        detail.append(f"median of {len(m.points)} logged steps, {m.skipped} warm-up skipped")
    detail += m.notes + notes
    out["source"] = f"{source} ({'; '.join(detail)})"[:500]
    out["measured_at"] = (m.last_time or measured_at)[:40]
    clean = {k: v for k, v in out.items() if v is not None}
    if not any(k in clean for k in ("tokens_per_s_per_gpu", "samples_per_s_per_gpu", "mfu", "step_time_s",
                                    "peak_memory_gib")):
        raise GpuwizError(f"{source}: no throughput, step time or memory figure found")
    return CalibrationSpec.model_validate(clean)


ORDER = ("gpu", "count", "gpus_per_node", "tokens_per_s_per_gpu", "samples_per_s_per_gpu", "mfu", "step_time_s",
         "peak_memory_gib", "source", "measured_at")


def calibration_yaml(cal: CalibrationSpec, comment: str | None = None) -> str:
    d = {k: v for k, v in cal.model_dump().items() if v is not None}
    data = {"calibration": {k: d[k] for k in sorted(d, key=lambda k: ORDER.index(k) if k in ORDER else 99)}}
    head = "".join(f"# {ln}\n" for ln in (comment or "").splitlines() if ln)
    return head + yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
