"""What-if knobs and deltas (pure)."""

from __future__ import annotations

from gpuwiz.core import whatif
from gpuwiz.core.models import (
    Build,
    CostAnalysis,
    Estimate,
    Memory,
    MemoryBreakdown,
    ModelInfo,
    Pitfall,
    Plan,
    Recommendation,
    Requirements,
    Throughput,
    Time,
)


def _rec(gpu: str = "h100-sxm", n: int = 8, hours: float = 10.0, cost: float = 1000.0, mem: float = 40.0,
         pitfalls: list[Pitfall] | None = None, verdict: str = "rent") -> Recommendation:
    est = Estimate(
        gpu=gpu, gpu_name=gpu.upper(),
        model=ModelInfo(name="m", family="decoder", params_total=7e9, params_active=7e9, params_trainable=7e9),
        memory=Memory(per_gpu_gib=mem, capacity_gib=80, usable_gib=64, breakdown=MemoryBreakdown(weights=mem),
                      fits=True, headroom_frac=0.5),
        plan=Plan(gpus=n, gpus_per_node=min(n, 8), nodes=max(1, n // 8), dp=n),
        throughput=Throughput(mfu=0.4, peak_tflops=989, achieved_tflops=400),
        time=Time(wall_hours=hours, gpu_hours=hours * n, total_pflop=1.0), feasible=True,
    )
    build = Build(gpu=gpu, gpu_name=gpu.upper(), gpus_per_node=min(n, 8), nodes=max(1, n // 8), cpu="x",
                  capex_usd=300_000)
    return Recommendation(objective="cheapest", found=True, build=build, estimate=est, cost_per_run_usd=cost,
                          cost=CostAnalysis(verdict=verdict, verdict_reason="r"), pitfalls=pitfalls or [])


def test_key_numbers_and_worst_pitfall() -> None:
    pits = [Pitfall(id="a", severity="info", message="a", source=""),
            Pitfall(id="b", severity="high", message="b", source=""),
            Pitfall(id="c", severity="medium", message="c", source="")]
    req = Requirements.model_validate({"schedule": {"runs_per_month": 2}})
    kn = whatif.key_numbers(_rec(pitfalls=pits), req)
    assert kn.gpu_label == "H100-SXM × 8"
    assert kn.cost_per_year_usd == 1000.0 * 2 * 12
    assert kn.worst_pitfall is not None and kn.worst_pitfall.id == "b"
    assert whatif.key_numbers(None).gpu_label == "nothing fits"


def test_diff_directions() -> None:
    base = whatif.key_numbers(_rec(hours=10, cost=1000))
    now = whatif.key_numbers(_rec(n=16, hours=5, cost=1200, verdict="buy"))
    d = {x.key: x for x in whatif.diff(base, now)}
    assert d["time"].direction == "better" and d["time"].change.startswith("−")
    assert d["cost"].direction == "worse" and "+20%" in d["cost"].change
    assert d["gpu"].direction == "changed" and d["gpu"].change == "was ×8"
    other = whatif.diff(base, whatif.key_numbers(_rec(gpu="l40s")))
    assert other[0].change == "was H100-SXM × 8"
    assert d["verdict"].after == "buy"
    same = whatif.diff(base, base)
    assert all(x.direction == "same" and x.change == "" for x in same)


def test_cycles_wrap_and_are_valid() -> None:
    req = Requirements()
    seen = []
    for _ in range(len(whatif.METHODS)):
        req, _msg = whatif.cycle_method(req)
        seen.append(req.training.method)
    assert seen == ["lora", "qlora", "full"]
    req2, msg = whatif.cycle_precision(Requirements())
    assert req2.training.precision == "fp8" and "fp8" in msg
    req3, _ = whatif.cycle_mode(Requirements())  # either -> rent
    assert req3.deployment.mode == "rent"


def test_gpu_and_count_knobs_pin_hardware() -> None:
    ids = ["a100-80", "h100-sxm", "l40s"]
    req, _ = whatif.cycle_gpu(Requirements(), ids, "h100-sxm", +1)
    assert req.hardware is not None and req.hardware.gpu == "l40s"
    req, _ = whatif.cycle_gpu(req, ids, "ignored", +1)
    assert req.hardware is not None and req.hardware.gpu == "a100-80"
    req, _ = whatif.cycle_gpu(req, ids, None, -1)
    assert req.hardware is not None and req.hardware.gpu == "l40s"
    up, _ = whatif.step_count(Requirements(), 8, +1, "h100-sxm")
    assert up.hardware is not None and (up.hardware.count, up.hardware.gpu) == (16, "h100-sxm")
    down, _ = whatif.step_count(up, 8, -1)
    assert down.hardware is not None and down.hardware.count == 8
    three_up, _ = whatif.step_count(Requirements(), 3, +1)
    assert three_up.hardware is not None and three_up.hardware.count == 4
    bottom, _ = whatif.step_count(Requirements(), 1, -1)
    assert bottom.hardware is not None and bottom.hardware.count == 1
    auto, _ = whatif.unpin_hardware(up)
    assert auto.hardware is None


def test_scale_data_and_deadline() -> None:
    req = Requirements.model_validate({"data": {"tokens": "1T", "dataset_gb": 100}})
    two, msg = whatif.scale_data(req, 2.0)
    assert two.data.tokens == 2e12 and two.data.dataset_gb == 200 and msg == "dataset ×2"
    half, msg = whatif.scale_data(req, 0.5)
    assert half.data.tokens == 5e11 and msg == "dataset ÷2"
    same, msg = whatif.scale_data(Requirements(), 2.0)
    assert same == Requirements() and "no dataset" in msg
    huge = Requirements.model_validate({"data": {"tokens": 9e15}})
    capped, msg = whatif.scale_data(huge, 2.0)
    assert capped == huge and "limit" in msg
    d1, _ = whatif.shift_deadline(Requirements(), +1)
    assert d1.schedule.deadline_days == 30
    d2, _ = whatif.shift_deadline(d1, +1)
    assert d2.schedule.deadline_days == 45
    d3, _ = whatif.shift_deadline(d1, -1)
    assert d3.schedule.deadline_days == 21
    d4, _ = whatif.shift_deadline(Requirements.model_validate({"schedule": {"deadline_days": 1}}), -1)
    assert d4.schedule.deadline_days == 1


def test_requirement_changes_lists_dotted_fields() -> None:
    a = Requirements()
    b = Requirements.model_validate({"training": {"method": "lora"}, "hardware": {"gpu": "l40s"}})
    changes = dict((k, (x, y)) for k, x, y in whatif.requirement_changes(a, b))
    assert changes["training.method"] == ("full", "lora")
    assert changes["hardware.gpu"] == ("—", "l40s")
    assert "hardware.count" not in changes  # unset on both sides
    assert whatif.requirement_changes(a, a) == []


def test_formatting_round_trips_through_units() -> None:
    from gpuwiz.core.units import parse_number

    for v in (2e12, 1.5e9, 20e6, 4096.0, 7.0, 0.5, 123456789.0):
        assert parse_number(whatif.fmt_human(v)) == v
    assert whatif.fmt_usd(1234.0) == "$1,234"
    assert whatif.fmt_usd(2_500_000) == "$2.50M"
    assert whatif.fmt_hours(0.5) == "30 min"
    assert whatif.fmt_hours(0.005) == "<1 min" and whatif.fmt_hours(1 / 60) == "1 min"  # seconds are not "0 min"
    assert whatif.fmt_gpu_hours(0.27) == "0.3" and whatif.fmt_gpu_hours(9.94) == "9.9"
    assert whatif.fmt_gpu_hours(12.4) == "12" and whatif.fmt_gpu_hours(4273.2) == "4,273"
    assert whatif.fmt_hours(72) == "3.0 d"


def test_count_change_on_the_same_gpu_reads_short() -> None:
    d = {x.key: x for x in whatif.diff(whatif.key_numbers(_rec(n=8)), whatif.key_numbers(_rec(n=16)))}
    assert d["gpu"].change == "was ×8"
