"""Guards on the estimator's accuracy against published training runs (gpuwiz.core.validation).

Bounds are on the summaries (with a margin over today's figures), never on single entries, so a
better-founded parameter can move individual predictions without breaking the suite.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuwiz.core.validation import Report, bundled_data_path, run_validation, validate

DATA = Path(__file__).resolve().parents[1] / "data" / "published_runs.yaml"


@pytest.fixture(scope="module")
def report() -> Report:
    return validate(str(DATA))


def _kind(r: Report, name: str):
    return next(s for s in r.by_kind if s.group == name)


def test_bundled_copy_matches_test_copy():
    assert bundled_data_path().read_bytes() == DATA.read_bytes()


def test_throughput_and_gpu_hours_within_targets(report: Report):
    s = _kind(report, "throughput + GPU-hours")
    assert s.n >= 200
    assert s.median <= 0.15  # target 15 % (currently ~12 %)
    assert s.p90 <= 0.42  # target 40 % (currently ~39 %)


def test_throughput_tables_within_targets(report: Report):
    s = _kind(report, "throughput")
    assert s.median <= 0.14 and s.p90 <= 0.42


def test_whole_runs_no_worse_than_today(report: Report):
    # target (15 % / 40 %) not met for whole runs alone (see docs/VALIDATION.md); guard against regressions
    s = _kind(report, "time")
    assert s.n >= 20
    assert s.median <= 0.28 and s.p90 <= 0.60  # currently ~23 % / ~52 %


def test_measured_memory_no_worse_than_today(report: Report):
    # target 15 % not met (~29 %; torchtune's fused/chunked losses, unknown PEFT batch sizes) -- guard it
    s = _kind(report, "memory")
    assert s.n >= 10
    assert s.median <= 0.16  # target 15 % (currently ~13 %)
    assert s.p90 <= 0.35  # currently ~29 %


def test_fits_oom_accuracy(report: Report):
    f = report.fits
    assert f.n >= 150
    assert any(c.fit_fact is False for c in report.cases), "the set must include out-of-memory facts"
    assert f.accuracy >= 0.97  # currently 100 %
    oom = [c for c in report.cases if c.fit_fact is False]
    assert all(c.pred_fits is False for c in oom)


@pytest.mark.parametrize("kind", ["time", "throughput", "memory", "throughput + GPU-hours"])
def test_every_kind_beats_naive_baseline(report: Report, kind: str):
    s = _kind(report, kind)
    assert s.median < s.base_median
    assert s.p90 < s.base_p90


def test_fits_beats_naive_baseline(report: Report):
    assert report.fits.accuracy > report.fits.base_accuracy


def test_families_beat_baseline_where_data_is_plentiful(report: Report):
    for s in report.by_family:
        if s.n >= 10:
            assert s.median < s.base_median, s.group


def test_holdout_halves_agree(report: Report):
    a, b = (s for _, s in report.holdout)
    assert a.n > 50 and b.n > 50
    assert a.median <= 0.18 and b.median <= 0.18
    assert abs(a.median - b.median) <= 0.06


def test_unmappable_entries_are_listed_with_a_reason(report: Report):
    assert report.skipped
    assert all(s.reason.strip() for s in report.skipped)
    ids = {s.id for s in report.skipped}
    assert "dschat_rlhf_step3_opt_13b_8gpu" in ids  # RLHF: not a training config gpuwiz models
    md = run_validation(str(DATA))
    assert "## Entries not mapped" in md
    assert "dschat_rlhf_step3_opt_13b_8gpu" in md
    # nothing silently dropped: every entry is either evaluated or listed
    import yaml

    raw = yaml.safe_load(DATA.read_text(encoding="utf-8"))
    total = sum(len(raw[k]) for k in ("time_runs", "throughput_runs", "memory_runs"))
    assert len(report.cases) + len(report.skipped) == total


def test_json_format():
    out = json.loads(run_validation(str(DATA), fmt="json"))
    assert out["summary"]["fits"]["accuracy"] >= 0.9
    assert out["cases"] and out["unmapped"]


def test_large_scale_picks_model_parallel_plan():
    # gap (a): 175B on 1024 A100 -> Megatron TP/PP, not FSDP, and MFU near the published ~45 % HFU
    from gpuwiz.core.catalog import load_catalog
    from gpuwiz.core.estimate import estimate
    from gpuwiz.core.models import Requirements

    req = Requirements.model_validate({
        "model": {"params_b": 175, "layers": 96, "hidden": 12288, "heads": 96, "seq_len": 2048},
        "training": {"method": "pretrain", "global_batch": 1536}, "data": {"tokens": 3e11}})
    est = estimate(req, load_catalog(), "a100-80gb-sxm", 1024)
    assert est.plan.tp > 1 or est.plan.pp > 1
    assert 0.33 <= est.throughput.mfu <= 0.55
