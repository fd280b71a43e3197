"""Guards on the estimator's accuracy against published training runs (gpuwiz.validation).

Bounds are on the summaries (with a margin over today's figures), never on single entries, so a
better-founded parameter can move individual predictions without breaking the suite.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuwiz.validation.harness import (
    Report,
    bundled_data_path,
    run_validation,
    validate,
)

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


def test_leave_one_source_out_folds_cover_every_source(report: Report):
    res = report.loso
    sources = {c.citation for c in report.cases}
    assert len(res.folds) == len(sources) >= 20
    assert {f.source for f in res.folds} == sources
    measured = [c for c in report.cases if c.measured]
    assert len(res.held_out) == len(measured)  # every measured entry predicted exactly once, held out


def test_held_out_prediction_ignores_its_own_source():
    # Scaling one source's published figures ×3 must not move its own held-out predictions (its data is not
    # in its fit) -- but it does move what the other folds fit, so the LOSO machinery is really refitting.
    from dataclasses import replace

    from gpuwiz.core.catalog import load_catalog
    from gpuwiz.validation.harness import load_data, run_cases
    from gpuwiz.validation.loso import Grid, loso

    cat = load_catalog()
    cases, _ = run_cases(load_data(str(DATA)), cat)
    grid = Grid(arch_scales=(0.5, 1.0, 2.0), recompute=(0.3,), fragmentation=(0.05,))
    src = "MosaicML LLM Foundry \"MPT Training Benchmarks\" tables"
    assert sum(c.citation == src for c in cases) > 100
    base = loso(cases, cat, grid)
    bent = [replace(c, measured=c.measured * 3) if c.citation == src and c.kind == "throughput" and c.measured
            else c for c in cases]
    moved = loso(bent, cat, grid)
    before = {c.id: c.predicted for c in base.held_out if c.citation == src}
    after = {c.id: c.predicted for c in moved.held_out if c.citation == src}
    assert before == after
    fit_before = {f.source: f.scales for f in base.folds if f.source != src}
    fit_after = {f.source: f.scales for f in moved.folds if f.source != src}
    assert fit_before != fit_after


def test_cross_validated_figures_no_worse_than_today(report: Report):
    from gpuwiz.validation.loso import summaries

    k = {s.group: s for s in summaries(report.loso)["kind"]}
    tt, mem = k["throughput + GPU-hours"], k["memory"]
    assert tt.n >= 200 and mem.n >= 20
    assert tt.median < tt.base_median and tt.p90 < tt.base_p90
    assert tt.median <= 0.12 and tt.p90 <= 0.35  # held out: 11.1 % / 31 % today (issue 11's targets)
    assert mem.median <= 0.12  # held out: 8 % today


def test_no_judged_group_is_worse_than_the_naive_rule_held_out(report: Report):
    # issue 11: no GPU generation, model family or stack group (n >= 5) worse than 6ND at 40 % of peak
    from gpuwiz.core.ranges import MIN_GROUP
    from gpuwiz.validation.loso import summaries

    sm = summaries(report.loso)
    worse = [f"{dim} {s.group}: {s.median:.3f} vs {s.base_median:.3f}" for dim in ("generation", "family", "stack")
             for s in sm[dim] if s.n >= MIN_GROUP and s.median >= s.base_median]
    assert not worse


def test_ranges_are_calibrated_on_held_out_entries(report: Report):
    inside, n = report.loso.coverage["throughput"]
    assert n >= 200
    assert 0.70 <= inside / n <= 0.90  # 86 % today (the groups' P10/P90 averaged; their union held 92 %)
    inside, n = report.loso.coverage["memory"]
    assert n >= 20 and 0.6 <= inside / n <= 0.95


def test_range_of_several_groups_is_their_geometric_mean():
    # an estimate matching several groups takes their quantiles averaged in log space, not the widest of them
    from gpuwiz.core.ranges import GroupRange, RangeTable, range_for

    part = {"overall": GroupRange(n=50, p10=0.7, p50=1.0, p90=1.4),
            "generation": {"ampere": GroupRange(n=20, p10=0.8, p50=1.0, p90=1.25)},
            "family": {"decoder LLM": GroupRange(n=20, p10=0.5, p50=1.0, p90=1.6)},
            "stack": {"pytorch": GroupRange(n=3, p10=0.1, p50=1.0, p90=9.0)}}  # under MIN_GROUP: skipped
    sp = range_for(RangeTable(source="t", throughput=part), "throughput",
                   {"generation": "ampere", "family": "decoder LLM", "stack": "pytorch", "scale": "1 GPU"})
    assert sp is not None
    assert sp.p10 == pytest.approx((0.8 * 0.5) ** 0.5) and sp.p90 == pytest.approx((1.25 * 1.6) ** 0.5)
    assert "too few entries for stack pytorch (3 entries)" in sp.basis


def test_bundled_range_table_is_current(report: Report):
    # src/gpuwiz/data/ranges.yaml is generated by `gpuwiz validate --ranges`; regenerate it after a model change
    from gpuwiz.core.ranges import bundled_ranges
    from gpuwiz.validation.loso import range_table

    assert bundled_ranges() == range_table(report.loso, report.cases)


def test_cli_and_engine_never_import_the_validation_package(tmp_path):
    import subprocess
    import sys

    cfg = Path(__file__).resolve().parents[2] / "examples" / "small-team-lora-7b.yaml"
    probe = ("import sys; from gpuwiz.cli import main; "
             f"rc = main(['estimate', {str(cfg)!r}, '--gpu', 'h100-sxm', '--count', '8', '--format', 'json']); "
             "import gpuwiz.core.recommend; "
             "print('\\nLEAK' if any(m.startswith('gpuwiz.validation') for m in sys.modules) else '\\nCLEAN', rc)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().endswith("CLEAN 0")


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


def test_megatron_model_parallel_size_maps_to_the_published_layout():
    # Narayanan et al. 2021 Table 1 / the Megatron-LM README: TP = min(8, M), PP = M / 8 beyond one node
    from gpuwiz.validation.harness import _parallel_from_text

    par = "model-parallel size {} (tensor x pipeline), rest data parallel"
    assert _parallel_from_text(par.format(1), 32)[0] == {"tp": 1, "pp": 1}
    assert _parallel_from_text(par.format(4), 128)[0] == {"tp": 4, "pp": 1}
    assert _parallel_from_text(par.format(16), 512)[0] == {"tp": 8, "pp": 2}
    assert _parallel_from_text(par.format(280), 2520)[0] == {"tp": 8, "pp": 35}
    assert _parallel_from_text("TP=8, PP=16", 1024)[0] == {"tp": 8, "pp": 16}  # explicit degrees win


def test_fit_weighs_every_source_the_same(report: Report):
    from gpuwiz.validation.loso import source_weights

    cases = [c for c in report.cases if c.measured]
    w = source_weights(cases)
    per_source: dict[str, float] = {}
    for c in cases:
        per_source[c.citation] = per_source.get(c.citation, 0.0) + w[c.id]
    assert len(per_source) >= 20
    assert all(v == pytest.approx(1.0) for v in per_source.values())
    big = max(per_source, key=lambda s: sum(c.citation == s for c in cases))
    assert sum(c.citation == big for c in cases) > 100  # one source with most of the rows still weighs 1
