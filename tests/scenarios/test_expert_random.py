"""The expert checks every scenario's answer passes (test_scenarios.check_universal), on random plausible configs:
a catalog model, a method, a precision, a data size, a schedule and a deployment (mode, objective, site, country,
data policy, horizon, budget, used hardware, utilisation), and at times a GPU asked for by name or hardware the
team owns, drawn together. The 83 scenarios are what reviewers thought of; this
is what they did not. It found a quoted offer that was not the one the ranking priced (runs of minutes), a build
that may run out of memory on the time / cost front beside the pick, QLoRA on a Megatron plan said to use
bitsandbytes, a cost per run on demand beside a rent total on a reservation, and a front point faster and cheaper
than the pick with no word of why it was not picked (the @examples below).

Derandomized in the suite (the same examples every run); ``GPUWIZ_FUZZ=long`` (bench/fuzz_long.py) draws anew."""

from __future__ import annotations

import os
from typing import Any

from hypothesis import HealthCheck, example, given, note, settings
from hypothesis import strategies as st
from test_scenarios import CAT, check_universal

from gpuwiz.core.errors import GpuwizError
from gpuwiz.core.models import Requirements
from gpuwiz.core.recommend import recommend

LONG = os.environ.get("GPUWIZ_FUZZ") == "long"
SETTINGS = settings(max_examples=int(2_000 * float(os.environ.get("GPUWIZ_FUZZ_SCALE", "1"))) if LONG else 150,
                    deadline=None, derandomize=not LONG, print_blob=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
TEXT = [m.id for m in CAT.models if m.modality == "text" and m.family not in ("cnn", "vit", "diffusion", "speech")]
OTHER = [m.id for m in CAT.models if m.id not in TEXT]
GPUS = [g.id for g in CAT.gpus]


@st.composite
def configs(draw: st.DrawFn) -> dict[str, Any]:
    text = draw(st.booleans())
    model = draw(st.sampled_from(TEXT if text else OTHER))
    data = ({"tokens": draw(st.sampled_from([1e6, 3e7, 3e8, 2e9, 2e10, 3e11]))} if text
            else {"samples": draw(st.sampled_from([2e3, 1e5, 1.3e6, 1e7, 1e8]))})
    if draw(st.booleans()):
        data["epochs"] = draw(st.sampled_from([1, 2, 3]))
    deployment: dict[str, Any] = {
        "mode": draw(st.sampled_from(["rent", "buy", "either"])),
        "objective": draw(st.sampled_from(["cheapest", "cheapest", "fastest", "perf-per-watt"])),
        "site": draw(st.sampled_from(["any", "desk", "office", "server-room", "colo", "cloud"])),
        "country": draw(st.sampled_from(["US", "DE", "CN", "JP", "GB", "FR", "IN"])),
        "data_sensitivity": draw(st.sampled_from(["public", "internal", "confidential", "regulated"])),
        "horizon_years": draw(st.sampled_from([1, 3, 5])),
    }
    if draw(st.booleans()):
        deployment["budget_usd"] = draw(st.sampled_from([3e3, 2e4, 1.5e5, 1e6, 3e7]))
    if draw(st.integers(0, 4)) == 0:
        deployment["used_hardware"] = True
    if draw(st.integers(0, 4)) == 0:
        deployment["utilization"] = draw(st.sampled_from([0.1, 0.5, 0.9]))
    extra: dict[str, Any] = {}
    if draw(st.integers(0, 4)) == 0:  # a GPU asked for by name: the answer prices it as asked, and says what it costs
        extra["hardware"] = {"gpu": draw(st.sampled_from(GPUS)), "count": draw(st.sampled_from([1, 2, 4, 8, 16]))}
    if draw(st.integers(0, 4)) == 0:  # hardware the team owns
        extra["have"] = [{"gpu": draw(st.sampled_from(GPUS)), "count": draw(st.sampled_from([1, 2, 4, 8]))}]
    return {**extra, "model": {"preset": model},
            "training": {"method": draw(st.sampled_from(["pretrain", "full", "lora", "qlora"])),
                         "precision": draw(st.sampled_from(["bf16", "bf16", "fp16", "fp8"]))},
            "data": data,
            "schedule": {"runs_per_month": draw(st.sampled_from([0.25, 1, 4, 8, 20])),
                         "deadline_days": draw(st.sampled_from([0.5, 1, 3, 7, 30, 90]))},
            "deployment": deployment}


@SETTINGS
@given(cfg=configs())
@example(cfg={"model": {"preset": "bert-base"}, "training": {"method": "pretrain"}, "data": {"tokens": 7.3e6},
              "schedule": {"runs_per_month": 8, "deadline_days": 1},
              "deployment": {"mode": "either", "site": "cloud", "country": "JP", "horizon_years": 1}})
@example(cfg={"model": {"preset": "mistral-7b"}, "training": {"method": "full", "precision": "fp8"},
              "data": {"samples": 2365}, "schedule": {"runs_per_month": 4, "deadline_days": 90},
              "deployment": {"mode": "rent", "site": "colo", "country": "CN", "data_sensitivity": "confidential",
                             "horizon_years": 5}})
@example(cfg={"model": {"preset": "deepseek-v3"}, "training": {"method": "qlora"}, "data": {"samples": 20_000},
              "schedule": {"runs_per_month": 8, "deadline_days": 2},
              "deployment": {"mode": "rent", "objective": "perf-per-watt", "budget_usd": 150_000}})
@example(cfg={"model": {"preset": "sdxl"}, "training": {"method": "pretrain"}, "data": {"samples": 1.3e6},
              "schedule": {"runs_per_month": 20, "deadline_days": 3},
              "deployment": {"mode": "rent", "objective": "perf-per-watt", "horizon_years": 1, "used_hardware": True}})
@example(cfg={"model": {"preset": "sdxl"}, "training": {"method": "pretrain"}, "data": {"samples": 1e7},
              "schedule": {"runs_per_month": 8, "deadline_days": 30},
              "deployment": {"mode": "rent", "site": "desk", "country": "CN", "horizon_years": 1,
                             "used_hardware": True}})
@example(cfg={"model": {"preset": "llama-2-13b"}, "training": {"method": "pretrain"},
              "data": {"tokens": 2e10, "epochs": 2}, "schedule": {"runs_per_month": 0.25, "deadline_days": 7},
              "deployment": {"mode": "buy", "horizon_years": 1, "used_hardware": True}})
def test_random_configs_get_answers_an_expert_would_sign(cfg: dict[str, Any]) -> None:
    note(repr(cfg))
    req = Requirements.model_validate(cfg)
    try:
        r = recommend(req, CAT)
    except GpuwizError:  # refused in one line (a model the data size does not fit, ...): test_fuzz checks those
        return
    check_universal(req, r)
