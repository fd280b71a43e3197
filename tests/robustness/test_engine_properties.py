"""Property-based tests: the engine never throws, and the physics holds.

Over random *valid* requirements (and random catalog GPU entries), ``estimate`` and ``recommend``
return a result or a typed "does not fit" answer -- never an exception, never NaN. And:

* more parameters never need less memory per GPU (same plan);
* more tokens never take less time;
* more GPUs with ZeRO-3 sharding never need more memory per GPU;
* a higher electricity price never lowers the cost of buying;
* a longer deadline never makes the chosen build more expensive -- as the cheapest objective counts
  cost (non-CUDA handicap; buying must beat renting by cost.BUY_MARGIN), and up to
  recommend.PICK_BAND, within which the build with fewer GPUs (then one that keeps the memory headroom) wins.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, example, given, note, settings
from hypothesis import strategies as st

from gpuwiz.core.catalog import GPU, load_catalog
from gpuwiz.core.cost import BUY_MARGIN
from gpuwiz.core.errors import GpuwizError
from gpuwiz.core.estimate import estimate
from gpuwiz.core.models import Estimate, Recommendation, Requirements
from gpuwiz.core.recommend import NON_CUDA_HANDICAP, PICK_BAND, recommend

CAT = load_catalog()
GPU_IDS = [g.id for g in CAT.gpus]
TOKEN_PRESETS = [m.id for m in CAT.models
                 if m.modality == "text" and m.family not in ("cnn", "vit", "diffusion", "speech")]
SAMPLE_PRESETS = [m.id for m in CAT.models if m.id not in TOKEN_PRESETS]

FAST = settings(max_examples=40, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
SLOW = settings(max_examples=25, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def finite(lo: float, hi: float) -> st.SearchStrategy[float]:
    return st.floats(min_value=lo, max_value=hi, allow_nan=False, allow_infinity=False)


def log_uniform(lo: float, hi: float) -> st.SearchStrategy[float]:
    return finite(math.log10(lo), math.log10(hi)).map(lambda e: float(f"{10 ** e:.4g}"))


# ---- strategies: valid requirements -------------------------------------------------------------

model_preset = st.fixed_dictionaries({"preset": st.sampled_from(TOKEN_PRESETS + SAMPLE_PRESETS)})
model_params = st.fixed_dictionaries(
    {"params_b": log_uniform(0.01, 3000), "family": st.sampled_from(["decoder", "encoder", "moe"])},
    optional={"seq_len": st.sampled_from([128, 512, 2048, 4096, 32768])},
).map(lambda d: {**d, **({"experts": 8, "top_k": 2} if d["family"] == "moe" else {})})
model_arch = st.fixed_dictionaries({
    "family": st.just("decoder"),
    "layers": st.integers(1, 128),
    "hidden": st.sampled_from([256, 768, 1024, 2048, 4096, 8192, 16384]),
}, optional={"heads": st.sampled_from([8, 16, 32]), "seq_len": st.sampled_from([512, 2048, 8192]),
             "vocab": st.sampled_from([32000, 128256])})

parallel = st.fixed_dictionaries({}, optional={
    "zero_stage": st.sampled_from([0, 1, 2, 3]),
    "tp": st.sampled_from([1, 2, 4, 8]),
    "pp": st.sampled_from([1, 2, 4]),
    "offload": st.sampled_from(["none", "optimizer", "optimizer+params"]),
})
training = st.fixed_dictionaries({}, optional={
    "method": st.sampled_from(["pretrain", "full", "lora", "qlora"]),
    "precision": st.sampled_from(["fp32", "tf32", "fp16", "bf16", "fp8"]),
    "optimizer": st.sampled_from(["adamw", "adamw-8bit", "sgd"]),
    "micro_batch": st.integers(1, 64),
    "global_batch": st.integers(1, 8192),
    "activation_checkpointing": st.sampled_from(["none", "selective", "full"]),
    "flash_attention": st.booleans(),
    "lora_rank": st.sampled_from([4, 16, 64, 256]),
    "parallel": parallel,
})
data = st.fixed_dictionaries({}, optional={
    "tokens": log_uniform(1e6, 1e14),
    "samples": log_uniform(1e3, 1e10),
    "epochs": finite(0.1, 300),
    "dataset_gb": log_uniform(0.01, 1e6),
    "sample_kb": log_uniform(0.1, 1e5),
})
schedule = st.fixed_dictionaries({}, optional={
    "runs_per_month": finite(0.05, 100),
    "deadline_days": finite(0.1, 3650),
})
deployment = st.fixed_dictionaries({}, optional={
    "mode": st.sampled_from(["rent", "buy", "either"]),
    "objective": st.sampled_from(["cheapest", "fastest", "perf-per-watt"]),
    "budget_usd": log_uniform(100, 1e10),
    "horizon_years": finite(0.1, 15),
    "electricity_usd_per_kwh": finite(0, 10),
    "country": st.sampled_from(["US", "DE", "CN", "JP", "IN", "BR"]),
    "data_sensitivity": st.sampled_from(["public", "internal", "confidential", "regulated"]),
    "site": st.sampled_from(["any", "desk", "office", "server-room", "colo", "cloud"]),
    "headroom": finite(0, 0.9),
    "pue": finite(1, 3),
    "utilization": finite(0.01, 1),
    "used_hardware": st.booleans(),
})
hardware = st.none() | st.fixed_dictionaries({"gpu": st.sampled_from(GPU_IDS)}, optional={
    "count": st.integers(1, 4096), "gpus_per_node": st.sampled_from([1, 2, 4, 8])})
calibration = st.none() | st.fixed_dictionaries({}, optional={
    "tokens_per_s_per_gpu": log_uniform(1, 1e6), "mfu": finite(0.01, 1), "peak_memory_gib": finite(0.5, 1000)})

def _valid(m: Any, t: Any, d: Any, s: Any, dep: Any, hw: Any, cal: Any) -> Requirements:
    """Requirements from the parts; a calibrated peak memory below the model's weights alone is refused
    by the engine (issue 10), so such a draw drops its peak_memory_gib and stays a valid config."""
    from gpuwiz.core.estimate import prepare

    req = Requirements.model_validate(
        {"model": m, "training": t, "data": d, "schedule": s, "deployment": dep, "hardware": hw, "calibration": cal})
    if req.calibration is not None and req.calibration.peak_memory_gib is not None:
        try:
            prepare(req, CAT)
        except GpuwizError as exc:
            if str(exc).startswith("calibration.peak_memory_gib: "):
                req = req.model_copy(update={"calibration": req.calibration.model_copy(
                    update={"peak_memory_gib": None})})
    return req


requirements = st.builds(
    _valid, st.one_of(model_preset, model_params, model_arch), training, data, schedule, deployment, hardware,
    calibration,
)


def _all_finite(obj: Any, path: str = "") -> None:
    """No NaN anywhere in a result (infinity is allowed only where a time cannot be estimated)."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            _all_finite(v, f"{path}.{k}")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            _all_finite(v, f"{path}[{i}]")
    elif isinstance(obj, float):
        assert not math.isnan(obj), f"NaN at {path}"


def check_estimate(e: Estimate) -> None:
    assert isinstance(e, Estimate)
    _all_finite(e.model_dump())
    assert e.memory.per_gpu_gib > 0 and math.isfinite(e.memory.per_gpu_gib)
    assert e.plan.gpus >= 1 and e.plan.nodes >= 1
    assert e.time.wall_hours >= 0 and e.time.gpu_hours >= 0
    if not e.feasible:
        assert e.problems or not e.memory.fits, "an infeasible estimate must say why"
    if math.isfinite(e.time.wall_hours):
        json.dumps(e.model_dump(mode="json"), allow_nan=False)  # the CLI's --format json must be valid JSON


def typed_recommend(req: Requirements, **kw: Any) -> Recommendation | None:
    """recommend(), allowing exactly two typed refusals: no data size the model can use (none at all, or
    only tokens for an image/audio model, which counts samples), and a measured peak memory below the
    model's weights (calibration.peak_memory_gib)."""
    try:
        rec = recommend(req, CAT, **kw)
    except GpuwizError as exc:
        if refused_calibration(req, exc):
            return None
        assert req.data.samples is None, f"unexpected GpuwizError: {exc}"
        assert str(exc).startswith("data: no data size"), str(exc)
        return None
    return rec


def refused_calibration(req: Requirements, exc: GpuwizError) -> bool:
    """A measured peak below the weights alone is refused, not taken at face value (issue 10)."""
    cal = req.calibration
    return (cal is not None and cal.peak_memory_gib is not None
            and str(exc).startswith("calibration.peak_memory_gib: measured ")
            and "below the model's weights" in str(exc))


def check_recommendation(r: Recommendation | None) -> None:
    if r is None:
        return
    assert isinstance(r, Recommendation)
    _all_finite(r.model_dump())
    if r.found:
        assert r.build is not None and r.estimate is not None
        # None: a pinned GPU nobody sells or rents has no price -- allowed, but never inf or NaN
        assert r.cost_per_run_usd is None or (math.isfinite(r.cost_per_run_usd) and r.cost_per_run_usd >= 0)
    else:
        assert r.suggestions or r.pitfalls or r.dropped, "a 'does not fit' answer must say why or what would work"


# ---- never throws ---------------------------------------------------------------------------------


@FAST
@given(req=requirements, gpu=st.sampled_from(GPU_IDS), count=st.integers(1, 100_000),
       gpn=st.none() | st.sampled_from([1, 2, 4, 8, 16, 72]))
def test_estimate_never_throws(req, gpu, count, gpn):
    note(repr(req.model_dump(exclude_defaults=True)))
    check_estimate(estimate(req, CAT, gpu=gpu, count=count, gpus_per_node=gpn))


@SLOW
@given(req=requirements)
def test_recommend_never_throws(req):
    note(repr(req.model_dump(exclude_defaults=True)))
    check_recommendation(typed_recommend(req))


@SLOW
@given(req=requirements, objective=st.sampled_from(["cheapest", "fastest", "perf-per-watt"]))
def test_recommend_report_renders(req, objective):
    """The CLI's renderers take whatever recommend returns (text, md, json without NaN)."""
    from gpuwiz.core.report import render_recommendation

    rec = typed_recommend(req, objective=objective)
    if rec is None:
        return
    for fmt in ("text", "md", "json"):
        out = render_recommendation(rec, req, fmt)
        assert isinstance(out, str) and out
    json.loads(render_recommendation(rec, req, "json"))


# ---- random catalog entries --------------------------------------------------------------------

BASE_GPU = CAT.gpu("h100-sxm").model_dump()

gpu_entries = st.builds(
    lambda mem, bw, fp32, bf16, fp8, tdp, form, nvl, multi, price, per_node: GPU.model_validate({
        **BASE_GPU, "id": "random-gpu", "name": "Random GPU", "memory_gib": mem, "memory_bandwidth_gbps": bw,
        "fp32_tflops": fp32, "tf32_tflops": None, "bf16_tflops": bf16, "fp16_tflops": bf16, "fp8_tflops": fp8,
        "tdp_w": tdp, "form_factor": form, "nvlink_gbps": nvl, "nvlink_multi_gpu": multi,
        "price_new_usd": price, "price_used_usd": None, "max_per_node": per_node,
    }),
    log_uniform(1, 1024), log_uniform(50, 20_000), log_uniform(0.5, 200), st.none() | log_uniform(5, 5000),
    st.none() | log_uniform(10, 10_000), log_uniform(30, 2000), st.sampled_from(["pcie", "sxm", "oam", "nvl"]),
    st.sampled_from([0.0, 64.0, 600.0, 1800.0]), st.booleans(), st.none() | log_uniform(100, 100_000),
    st.sampled_from([1, 2, 4, 8]),
)


@SLOW
@given(gpu=gpu_entries, req=requirements, count=st.integers(1, 512))
def test_random_catalog_gpu_never_throws(gpu, req, count):
    cat = CAT.model_copy(update={"gpus": [*CAT.gpus, gpu]})
    note(repr(gpu.model_dump()))
    note(repr(req.model_dump(exclude_defaults=True)))
    hw = req.hardware
    if hw is not None and hw.gpu is not None:  # pin the random GPU instead
        req = req.model_copy(update={"hardware": hw.model_copy(update={"gpu": "random-gpu"})})
    check_estimate(estimate(req, cat, gpu="random-gpu", count=count))
    try:
        rec = recommend(req, cat)
    except GpuwizError as exc:
        if refused_calibration(req, exc):
            return
        # no data size, or none this model can use (tokens for an image model: found by a longer random run)
        assert ((req.data.tokens is None and req.data.samples is None) or "this model can use" in str(exc)) \
            and str(exc).startswith("data: "), str(exc)
        return
    check_recommendation(rec)


@FAST
@given(req=requirements)
def test_missing_data_or_model_is_typed(req):
    """No data size, or no model at all: a GpuwizError naming the field (the CLI adds file and line);
    estimate() still answers the memory question without a data size."""
    bare = Requirements.model_validate({**req.model_dump(exclude_defaults=True), "data": {"tokens": 1e9}, "model": {}})
    with pytest.raises(GpuwizError, match=r"^model\.\w+: "):
        recommend(bare, CAT)
    with pytest.raises(GpuwizError, match=r"^model\.\w+: "):
        estimate(bare, CAT, gpu="h100-sxm", count=8)
    nodata = req.model_copy(update={"data": req.data.model_copy(update={"tokens": None, "samples": None})})
    with pytest.raises(GpuwizError, match=r"^data: no data size given"):
        recommend(nodata, CAT)
    check_estimate(estimate(nodata, CAT, gpu="h100-sxm", count=8))


# ---- physics --------------------------------------------------------------------------------------

PINNED_PLAN = st.fixed_dictionaries({
    "method": st.sampled_from(["pretrain", "full", "lora", "qlora"]),
    "precision": st.sampled_from(["bf16", "fp16", "fp32"]),
    "optimizer": st.sampled_from(["adamw", "adamw-8bit", "sgd"]),
    "micro_batch": st.sampled_from([1, 2, 4]),
    "activation_checkpointing": st.sampled_from(["none", "selective", "full"]),
    "parallel": st.fixed_dictionaries({
        "zero_stage": st.sampled_from([0, 1, 2, 3]), "tp": st.just(1), "pp": st.just(1),
        "offload": st.sampled_from(["none", "optimizer"]),
    }),
})


@FAST
@given(p=log_uniform(0.05, 500), k=finite(1.01, 20), training=PINNED_PLAN,
       gpu=st.sampled_from(GPU_IDS), count=st.sampled_from([1, 2, 8, 64]),
       seq=st.sampled_from([512, 2048, 8192]))
def test_more_parameters_never_need_less_memory(p, k, training, gpu, count, seq):
    def mem(params_b: float) -> float:
        req = Requirements.model_validate({"model": {"family": "decoder", "params_b": params_b, "seq_len": seq},
                                           "training": training, "data": {"tokens": 1e11}})
        return estimate(req, CAT, gpu=gpu, count=count).memory.per_gpu_gib
    small, big = mem(p), mem(min(p * k, 100_000))
    # (within 0.1 %: a model given by its parameter count gets whole layers and a hidden size on a 128 grid, so a
    # slightly bigger one can come out a layer shallower and wider -- 0.1B vs 0.1125B QLoRA on 64 V100s differed
    # by 60 kB in a longer random run)
    assert big >= small * (1 - 1e-3), f"{p}B needs {small:.3f} GiB/GPU but {p * k}B only {big:.3f}"


@FAST
@given(req=requirements, k=finite(1.01, 1000), gpu=st.sampled_from(GPU_IDS), count=st.sampled_from([1, 4, 8, 32, 256]))
def test_more_tokens_never_take_less_time(req, k, gpu, count):
    model = req.model
    assume(model.preset in TOKEN_PRESETS or model.preset is None)
    base = req.data.tokens or 1e9
    more = min(base * k, 1e16)
    def wall(tokens: float) -> float:
        r = req.model_copy(update={"data": req.data.model_copy(update={"tokens": tokens, "samples": None})})
        return estimate(r, CAT, gpu=gpu, count=count).time.wall_hours
    a, b = wall(base), wall(more)
    assert b >= a * (1 - 1e-9), f"{base:g} tokens take {a} h but {more:g} tokens {b} h"


@FAST
# (from 2 GPUs: going from one GPU to two adds the collective buffers -- NCCL, comm buckets, ZeRO-3's gathered
# layer -- that a single process never allocates; for BERT-base that is +0.45 GiB against 0.1 GiB of sharded
# weights saved, found by a longer random run)
@given(preset=st.sampled_from(TOKEN_PRESETS), gpu=st.sampled_from(GPU_IDS), n=st.sampled_from([2, 4, 8, 16, 64]),
       k=st.sampled_from([2, 4, 8]), mb=st.sampled_from([1, 2]),
       method=st.sampled_from(["pretrain", "full", "lora"]), offload=st.sampled_from(["none", "optimizer"]))
def test_more_gpus_with_zero3_never_need_more_memory_per_gpu(preset, gpu, n, k, mb, method, offload):
    req = Requirements.model_validate({
        "model": {"preset": preset},
        "training": {"method": method, "micro_batch": mb, "activation_checkpointing": "full",
                     "parallel": {"zero_stage": 3, "tp": 1, "pp": 1, "offload": offload}},
        "data": {"tokens": 1e11},
    })
    g = CAT.gpu(gpu)
    gpn = min(8, g.max_per_node)
    few = estimate(req, CAT, gpu=gpu, count=n, gpus_per_node=min(gpn, n)).memory.per_gpu_gib
    many = estimate(req, CAT, gpu=gpu, count=n * k, gpus_per_node=min(gpn, n * k)).memory.per_gpu_gib
    assert many <= few * (1 + 1e-9), f"ZeRO-3: {n} GPUs need {few:.3f} GiB each but {n * k} GPUs {many:.3f}"


BUY_REQ = st.builds(
    lambda preset, tokens, gpu, count, rpm, years: Requirements.model_validate({
        "model": {"preset": preset}, "data": {"tokens": tokens},
        "schedule": {"runs_per_month": rpm},
        "deployment": {"mode": "buy", "horizon_years": years},
        "hardware": {"gpu": gpu, "count": count},
    }),
    st.sampled_from(["gpt2-124m", "bert-base", "llama-2-7b", "mistral-7b", "llama-3-8b"]),
    log_uniform(1e8, 1e11), st.sampled_from(["rtx-4090", "l40s", "a100-80gb-sxm", "h100-sxm", "h100-pcie", "mi300x"]),
    st.sampled_from([1, 2, 4, 8]), finite(0.1, 10), finite(1, 6),
)


@SLOW
@given(req=BUY_REQ, p=finite(0, 2), dp=finite(0.001, 3))
def test_higher_electricity_never_lowers_the_cost_of_buying(req, p, dp):
    def tco(price: float) -> float:
        r = req.model_copy(update={"deployment": req.deployment.model_copy(update={"electricity_usd_per_kwh": price})})
        rec = recommend(r, CAT)
        assume(rec.found and rec.cost is not None and rec.cost.onprem is not None)
        return rec.cost.onprem.total_usd
    cheap, dear = tco(p), tco(min(p + dp, 10))
    assert dear >= cheap * (1 - 1e-9), f"buying costs {cheap:,.0f} at ${p}/kWh but {dear:,.0f} at ${p + dp}/kWh"


def effective_per_run(r: Recommendation, mode: str) -> float:
    """Cost per run as the cheapest objective compares it: non-CUDA parts carry the stack handicap,
    and with the choice open (mode either) buying must beat renting by cost.BUY_MARGIN."""
    assert r.cost_per_run_usd is not None and r.build is not None and r.cost is not None
    stack = 1.0 if CAT.gpu(r.build.gpu).vendor == "nvidia" else 1.0 + NON_CUDA_HANDICAP
    margin = 1.0 / BUY_MARGIN if mode == "either" and r.cost.verdict == "buy" else 1.0
    return r.cost_per_run_usd * stack * margin


@SLOW
@given(preset=st.sampled_from(["gpt2-124m", "bert-large", "llama-2-7b", "llama-2-13b", "mistral-7b", "resnet-50"]),
       tokens=log_uniform(1e9, 3e12), d=finite(0.5, 60), k=finite(1.1, 10),
       mode=st.sampled_from(["rent", "buy", "either"]), rpm=finite(0.1, 4))
# (found by a longer random run: the node ladder stopped at the first rung inside the slack without the rented
# run's staging wait, 8 H100 nodes short, and the 1.5-day answer picked 80 H200s 16 % dearer than the 1-day one)
@example(preset="llama-2-7b", tokens=39.24e9, d=1.0, k=1.5, mode="rent", rpm=1.0)
def test_longer_deadline_never_makes_the_build_more_expensive(preset, tokens, d, k, mode, rpm):
    """A longer deadline only adds candidates, so the cheapest one never gets dearer; the pick may
    be dearer than the cheapest by at most PICK_BAND (fewest GPUs, then a build that keeps the memory headroom,
    win near-ties), so the longer deadline's pick costs at most (1 + PICK_BAND) x the shorter deadline's pick."""
    def rec(days: float) -> Recommendation:
        data = {"samples": 1.28e6, "epochs": 10} if preset == "resnet-50" else {"tokens": tokens}
        return recommend(Requirements.model_validate({
            "model": {"preset": preset}, "data": data, "schedule": {"deadline_days": days, "runs_per_month": rpm},
            "deployment": {"mode": mode, "objective": "cheapest"}}), CAT)
    tight, loose = rec(d), rec(min(d * k, 3650))
    # (only where the shorter deadline's answer meets it with slack: a pick that already ends past the slack -- the
    # answer's binding constraint says so -- is the least bad; a longer deadline then buys one that ends in time,
    # dearer, as 1,824 B200s for 698B tokens in 23 h replace 1,824 H200s that took 18.7 h of an 18.75 h deadline)
    if tight.found:
        assert loose.found, "a build that met a tight deadline vanished when the deadline got longer"
    if tight.found and tight.binding_constraint is None:
        note(f"tight: {tight.build and tight.build.gpu} x{tight.estimate and tight.estimate.plan.gpus} "
             f"${tight.cost_per_run_usd}; loose: {loose.build and loose.build.gpu} "
             f"x{loose.estimate and loose.estimate.plan.gpus} ${loose.cost_per_run_usd}")
        bound = effective_per_run(tight, mode) * (1 + PICK_BAND) * (1 + 1e-6)
        assert effective_per_run(loose, mode) <= bound, (
            f"deadline {d:.1f} d -> ${tight.cost_per_run_usd:,.2f}/run; {d * k:.1f} d -> "
            f"${loose.cost_per_run_usd:,.2f}/run")


# ---- regression tests for engine bugs the properties above found (fixed in core/recommend.py) -----
# B1: a pinned GPU with no cloud offer (h200-nvl, h20) gave found=True with cost_per_run_usd=inf
#     (`--format json` printed Infinity, the text report "$infB").
# B2: resnet-50 with data.tokens but no samples: suggestions quoted "inf h per run".
# B3: llama-2-7b, 1e9 tokens, 4 runs/month, rent: deadline 2 d -> 1x h100-sxm $62/run but 12 d ->
#     1x rtx-4090 $118/run (ranked on one reserved instance-year that cannot hold 13,800 h of runs).
# B4: llama-2-7b, 1e12 tokens, 4 runs/month, buy: deadline 3 d -> found, 15 d -> nothing (the
#     scale-out search stopped at the first node count that met the deadline, short of one that
#     could be owned: the month's runs must fit in the month).
# B5: same, mode either: 4 d -> 1024x a100 $300k/run, 16 d -> 256x a100 $323k/run (same cause, and
#     a 5 %-per-doubling handicap that was not bounded; now a near-tie breaker within 5 %).


@pytest.mark.parametrize("gpu,mode", [("h200-nvl", "rent"), ("h20", "either")])
def test_b1_pinned_gpu_without_offer_has_a_finite_or_no_answer(gpu, mode):
    req = Requirements.model_validate({"model": {"preset": "bert-base"}, "data": {"tokens": 1e6},
                                       "deployment": {"mode": mode}, "hardware": {"gpu": gpu, "count": 1}})
    rec = recommend(req, CAT)
    assert not rec.found or (rec.cost_per_run_usd is not None and math.isfinite(rec.cost_per_run_usd))


def test_b2_suggestions_never_quote_infinite_hours():
    # tokens for an image model: no run time can be estimated, so the answer is a one-line refusal that
    # names the field to set (it used to be suggestions quoting "inf hours", later an OverflowError)
    req = Requirements.model_validate({"model": {"preset": "resnet-50"}, "data": {"tokens": 1e9}})
    with pytest.raises(GpuwizError, match=r"^data: no data size this model can use \(set data\.samples"):
        recommend(req, CAT)


def test_b3_longer_deadline_does_not_double_the_cost():
    def rec(days: float) -> Recommendation:
        return recommend(Requirements.model_validate({
            "model": {"preset": "llama-2-7b"}, "data": {"tokens": 1e9},
            "schedule": {"deadline_days": days, "runs_per_month": 4}, "deployment": {"mode": "rent"}}), CAT)
    tight, loose = rec(2), rec(12)
    assert tight.found and loose.found
    assert loose.cost_per_run_usd <= tight.cost_per_run_usd


def test_b4_longer_deadline_keeps_a_buy_answer():
    def rec(days: float) -> Recommendation:
        return recommend(Requirements.model_validate({
            "model": {"preset": "llama-2-7b"}, "data": {"tokens": 1e12},
            "schedule": {"deadline_days": days, "runs_per_month": 4}, "deployment": {"mode": "buy"}}), CAT)
    assert rec(3).found
    assert rec(15).found


def test_b5_longer_deadline_picks_no_dearer_build():
    def rec(days: float) -> Recommendation:
        return recommend(Requirements.model_validate({
            "model": {"preset": "llama-2-7b"}, "data": {"tokens": 1e12},
            "schedule": {"deadline_days": days, "runs_per_month": 4}, "deployment": {"mode": "either"}}), CAT)
    tight, loose = rec(4), rec(16)
    assert tight.found and loose.found
    assert loose.cost_per_run_usd <= tight.cost_per_run_usd * (1 + PICK_BAND)
