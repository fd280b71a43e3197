"""`gpuwiz probe` on CPU (tiny sizes, labelled), its calibration moving the estimate, the all-reduce path,
and owned hardware (`have:`, `recommend --have local`)."""

from __future__ import annotations

import io
import sys

import pytest
import yaml

from conftest import EXAMPLES, run_cli
from gpuwiz.core.config_io import load_config, loads_config
from gpuwiz.core.errors import GpuwizError
from gpuwiz.core.estimate import estimate
from gpuwiz.core.recommend import recommend
from gpuwiz.core.report import render_recommendation
from gpuwiz.probe.inventory import Inventory, LocalGpu

try:
    import torch  # noqa: F401

    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False

needs_torch = pytest.mark.skipif(
    not HAVE_TORCH, reason="PyTorch not installed: probe tests need `pip install -e '.[probe]'` (CI installs it)")
NO_GPU = Inventory((), "", "no GPU found (test)")
CONFIG = """\
version: 1
model: {preset: llama-3-8b, seq_len: 2048}
training: {method: pretrain, global_batch: 64, micro_batch: 1}
data: {tokens: 1B}
"""


@needs_torch  # gpuwiz.probe.bench imports torch at the top
def test_bus_bandwidth_is_the_nccl_tests_definition():
    from gpuwiz.probe.bench import bus_bandwidth_gbps
    # 1 GB in 0.1 s over 8 ranks: algbw 10 GB/s x 2·7/8 = 17.5 GB/s; one rank moves nothing
    assert bus_bandwidth_gbps(10**9, 8, 0.1) == pytest.approx(17.5)
    assert bus_bandwidth_gbps(10**9, 1, 0.1) == 0.0


def test_probe_without_torch_says_how_to_install(monkeypatch, catalog):
    from gpuwiz.probe.run import run_probe

    monkeypatch.setitem(sys.modules, "torch", None)
    monkeypatch.delitem(sys.modules, "gpuwiz.probe.bench", raising=False)
    import gpuwiz.probe

    monkeypatch.delattr(gpuwiz.probe, "bench", raising=False)  # as on a machine that never imported it
    with pytest.raises(GpuwizError, match=r"gpuwiz\[probe\]"):
        run_probe(NO_GPU, catalog, None, budget_s=1)


@needs_torch
def test_cpu_probe_is_labelled_and_its_calibration_changes_the_estimate(catalog):
    from gpuwiz.probe.run import render, run_probe

    req = loads_config(CONFIG, catalog=catalog)
    out = io.StringIO()
    res = run_probe(NO_GPU, catalog, req, budget_s=2, progress=out, measured_at="2026-12-01T00:00:00Z")
    assert res.on_cpu and "not representative" in res.device
    assert all("not representative" in fig for what, fig, _ in res.lines if what != "time")
    assert "probe [" in out.getvalue() and "done" in out.getvalue()
    cal = res.calibration
    assert cal is not None and cal.gpu is None and cal.tokens_per_s_per_gpu and cal.tokens_per_s_per_gpu > 0
    assert "not representative" in (cal.source or "")
    assert "GEMM" in render(res)
    # The documented effect: without a measured GPU the figure replaces the model's for every candidate.
    after = estimate(req.model_copy(update={"calibration": cal}), catalog, gpu="h100-sxm", count=8)
    assert after.throughput.tokens_per_s_per_gpu == pytest.approx(cal.tokens_per_s_per_gpu)
    before = estimate(req, catalog, gpu="h100-sxm", count=8)
    assert after.time.wall_hours != pytest.approx(before.time.wall_hours)


@needs_torch
def test_cpu_probe_of_a_cnn_uses_a_bottleneck_block(catalog):
    from gpuwiz.probe.run import run_probe

    req = load_config(EXAMPLES / "resnet50-imagenet.yaml", catalog=catalog)
    res = run_probe(NO_GPU, catalog, req, budget_s=1, progress=io.StringIO())
    assert "cnn" in res.shapes
    assert any("bottleneck" in d for _, _, d in res.lines)
    assert res.calibration is not None and res.calibration.samples_per_s_per_gpu


@needs_torch
def test_gloo_all_reduce_over_two_cpu_ranks():
    from gpuwiz.probe.bench import allreduce_busbw

    busbw, detail = allreduce_busbw(2, 0.2, on_cpu=True)
    assert busbw > 0 and "gloo" in detail and "2 ranks" in detail


@needs_torch
def test_probe_cli_writes_the_section_and_never_clobbers(tmp_path):
    out = tmp_path / "cal.yaml"
    r = run_cli("probe", "--budget-s", "2", "-o", out)
    assert r.returncode == 0, r.stderr
    section = yaml.safe_load(out.read_text())["calibration"]
    assert "not representative" in section["source"]
    r = run_cli("probe", "--budget-s", "2", "-o", out)
    assert r.returncode == 2 and "--force" in r.stderr
    r = run_cli("probe", "--budget-s", "0")
    assert r.returncode == 2 and "budget" in r.stderr


# ---- owned hardware ----------------------------------------------------------------------------------

HAVE = """\
version: 1
model: {preset: mistral-7b, seq_len: 4096}
training: {method: lora, global_batch: 64}
data: {tokens: 300M, epochs: 2}
schedule: {deadline_days: 3, runs_per_month: 6}
"""


def test_owned_hardware_is_an_option_at_energy_cost(catalog):
    plain = recommend(loads_config(HAVE, catalog=catalog), catalog)
    req = loads_config(HAVE + "have:\n  - {gpu: rtx-4090, count: 2}\n", catalog=catalog)
    rec = recommend(req, catalog)
    first = rec.alternatives[0]
    assert (first.gpu, first.count) == ("rtx-4090", 2) and "already owned" in first.reason
    est = estimate(req, catalog, gpu="rtx-4090", count=2)
    assert first.wall_hours == pytest.approx(est.time.wall_hours, rel=1e-3)
    # energy only: far below buying two cards, and proportional to the hours
    assert 0 < first.cost_per_run_usd < 0.05 * 2 * catalog.gpu("rtx-4090").price_new_usd
    assert rec.alternatives[1:] == plain.alternatives
    assert rec.estimate == plain.estimate  # the pick itself is unchanged


def test_owned_hardware_that_cannot_run_is_a_pitfall(catalog):
    req = loads_config(HAVE + "have:\n  - {gpu: t4, count: 1}\nmodel: {preset: llama-3-70b}\n"
                       .replace("model: {preset: llama-3-70b}\n", ""), catalog=catalog)
    big = req.model_copy(update={"model": req.model.model_copy(update={"preset": "llama-3-70b"}),
                                 "training": req.training.model_copy(update={"method": "full"})})
    rec = recommend(big, catalog)
    assert any(p.id == "owned-does-not-fit" and "T4" in p.message for p in rec.pitfalls)
    assert all(a.gpu != "t4" or "owned" not in a.reason for a in rec.alternatives)


def test_unknown_owned_gpu_is_a_config_error(catalog):
    with pytest.raises(GpuwizError, match=r"have\[0\]\.gpu.*rtx-4090"):
        loads_config(HAVE + "have:\n  - {gpu: rtx-4900, count: 2}\n", "c.yaml", catalog=catalog)


def test_have_local_says_plainly_when_it_finds_no_gpu(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(HAVE)
    r = run_cli("recommend", cfg, "--have", "local", env={"CUDA_VISIBLE_DEVICES": ""})
    assert r.returncode == 0
    assert "--have local: no GPU found" in r.stderr


def test_have_local_adds_the_detected_gpus(monkeypatch, catalog, capsys):
    import gpuwiz.probe.inventory as inv
    from gpuwiz.cli import _have_local

    found = Inventory((LocalGpu(0, "NVIDIA GeForce RTX 4090", 24.0), LocalGpu(1, "NVIDIA GeForce RTX 4090", 24.0)),
                      "NVML", "")
    monkeypatch.setattr(inv, "detect_gpus", lambda: found)
    req = _have_local(loads_config(HAVE, catalog=catalog), catalog)
    assert [(h.gpu, h.count) for h in req.have] == [("rtx-4090", 2)]
    assert "2x NVIDIA GeForce RTX 4090 (rtx-4090) via NVML" in capsys.readouterr().err


def test_owned_hardware_that_does_the_job_leads_the_verdict(catalog):
    """A team that owns 8x A100 80GB was told to rent 8x A100 40GB at $259 a run, its own cards taking as long for
    $43 of energy (listed only as the first alternative). When an owned build ends with slack and keeps up with the
    month's runs, the answer says so as a typed fact (``owned_pick``) and the verdict is to use it; the rent-vs-buy
    verdict is for adding capacity. One that misses the deadline does not lead."""
    base = HAVE.replace("deadline_days: 3", "deadline_days: 4")
    req = loads_config(base + "have:\n  - {gpu: a100-80gb-sxm, count: 8}\n", catalog=catalog)
    rec = recommend(req, catalog)
    assert rec.cost is not None and rec.alternatives[0].gpu == "a100-80gb-sxm"
    pick = rec.owned_pick
    assert pick is not None and (pick.gpu, pick.count, pick.owned) == ("a100-80gb-sxm", 8, 8)
    assert (pick.wall_hours, pick.energy_usd) == (rec.alternatives[0].wall_hours, rec.alternatives[0].cost_per_run_usd)
    plain = recommend(loads_config(base, catalog=catalog), catalog)
    assert plain.cost is not None and plain.owned_pick is None
    assert rec.cost.verdict_reason == plain.cost.verdict_reason  # the rent-vs-buy verdict: for adding capacity
    memo = render_recommendation(rec, req, "text").splitlines()
    assert memo[0].startswith("gpuwiz recommendation: your 8x NVIDIA A100 80GB SXM4 for Mistral 7B")
    assert memo[0].endswith(f"(to add capacity: {rec.build.gpus_per_node * rec.build.nodes}x {rec.build.gpu_name})")
    said = memo[2]
    assert said.startswith("Verdict: USE WHAT YOU OWN. The 8x NVIDIA A100 80GB SXM4 you own does this run in ")
    assert f"To add capacity: {rec.cost.verdict.upper()}. " in said
    assert '"owned_pick": {' in render_recommendation(rec, req, "json")
    slow = recommend(loads_config(base.replace("deadline_days: 4", "deadline_days: 0.5")
                                  + "have:\n  - {gpu: t4, count: 1}\n", catalog=catalog), catalog)
    assert slow.cost is not None and slow.owned_pick is None and "you own" not in slow.cost.verdict_reason
    assert any("owned" in a.reason or "已拥有" in a.reason for a in slow.alternatives if a.gpu == "t4") or any(
        p.id.startswith("owned-") for p in slow.pitfalls)


def test_a_big_owned_fleet_is_costed_for_the_part_the_run_takes(catalog):
    """A fleet of 100,000 H100 was costed whole for a 7B LoRA: '<1 min for $2.81 of energy (95550.0 kW x 0.0 h)',
    a plan with 12,500x the replicas its batch of 64 has samples. The run takes one node of it (it fits a node and
    ends there with slack); the alternative, the energy and the verdict are for that node."""
    rec = recommend(loads_config(HAVE + "have:\n  - {gpu: h100-sxm, count: 100000}\n", catalog=catalog), catalog)
    owned = rec.alternatives[0]
    assert (owned.gpu, owned.count, owned.nodes) == ("h100-sxm", 8, 1)
    assert "8 of the 100000 you own" in owned.reason and "kW for " in owned.reason
    est = estimate(loads_config(HAVE, catalog=catalog), catalog, gpu="h100-sxm", count=8)
    assert owned.wall_hours == pytest.approx(est.time.wall_hours, rel=1e-3)
    assert est.plan.global_batch <= est.plan.batch_limit
    assert rec.owned_pick is not None and (rec.owned_pick.count, rec.owned_pick.owned) == (8, 100000)
    req = loads_config(HAVE + "have:\n  - {gpu: h100-sxm, count: 100000}\n", catalog=catalog)
    memo = render_recommendation(rec, req, "text").splitlines()
    assert memo[0].startswith("gpuwiz recommendation: 8 of your 100000x NVIDIA H100 SXM5 80GB for ")
    assert memo[2].startswith("Verdict: USE WHAT YOU OWN. 8 of the 100000x NVIDIA H100 SXM5 80GB you own do this run "
                              "in ")


def test_an_owned_fleet_takes_more_nodes_where_one_does_not_do_the_run(catalog):
    """70B full fine-tune on an owned 256x H100: cheapest takes the fewest whole nodes that fit it and end with slack
    before the deadline; fastest takes nodes while they still help, never a plan with a bigger batch than the run's."""
    base = ("version: 1\nmodel: {preset: llama-3-70b}\ntraining: {method: full}\ndata: {tokens: 2B}\n"
            "schedule: {runs_per_month: 1, deadline_days: 7}\nhave:\n  - {gpu: h100-sxm, count: 256}\n")
    cheap = recommend(loads_config(base, catalog=catalog), catalog).alternatives[0]
    fast_req = loads_config(base + "deployment: {objective: fastest}\n", catalog=catalog)
    fast = recommend(fast_req, catalog).alternatives[0]
    assert cheap.gpu == fast.gpu == "h100-sxm"
    one_node = estimate(loads_config(base, catalog=catalog), catalog, gpu="h100-sxm", count=8)
    assert cheap.count > 8 and cheap.count % 8 == 0  # one node does not do it (memory or slack): whole nodes
    assert not (one_node.feasible and one_node.time.wall_hours <= cheap.wall_hours)
    assert fast.count > cheap.count and fast.wall_hours < cheap.wall_hours
    plan = estimate(fast_req, catalog, gpu="h100-sxm", count=fast.count, gpus_per_node=8).plan
    assert plan.global_batch <= plan.batch_limit


def test_the_owned_pick_keeps_the_plans_gpus_per_node(catalog):
    """A fleet of 17 H100 (8 per node) taken whole under the fastest objective: three nodes of 8 -- the pick's
    gpus_per_node is the plan's, not the count over the nodes (6), which pinned launch files to another layout."""
    req = loads_config(HAVE + "deployment: {objective: fastest}\nhave:\n  - {gpu: h100-sxm, count: 17}\n",
                       catalog=catalog)
    pick = recommend(req, catalog).owned_pick
    assert pick is not None and (pick.count, pick.nodes, pick.gpus_per_node) == (17, 3, 8)


def test_owned_hardware_far_cheaper_than_the_pick_is_never_called_free(catalog):
    """4 owned RTX PRO 6000 beside a rented cluster picked for the fastest run: energy is 0.2 % of the pick's cost
    per run, which read '100% cheaper per run than the pick' -- as if it cost nothing."""
    req = loads_config("version: 1\nmodel: {preset: whisper-large-v3}\ntraining: {method: pretrain}\n"
                       "data: {samples: 1e8, epochs: 1}\nschedule: {runs_per_month: 1, deadline_days: 90}\n"
                       "deployment: {mode: either, objective: fastest, site: cloud, country: FR,\n"
                       "  data_sensitivity: confidential}\nhave: [{gpu: rtx-pro-6000, count: 4}]\n", "t.yaml")
    r = recommend(req, catalog)
    owned = next(a for a in r.alternatives if "already owned" in a.reason)
    assert r.cost_per_run_usd and owned.cost_per_run_usd < 0.01 * r.cost_per_run_usd
    assert "99% cheaper per run than the pick" in owned.reason and "100%" not in owned.reason


def test_owned_hardware_stands_on_the_time_cost_front_at_its_energy_cost(catalog):
    """4 owned RTX PRO 6000 for a Whisper pretrain: the alternatives priced them at $281 of energy a run while the
    front showed the same four bought at $3,924 -- two prices for one shape. The owned build now stands beside the
    front (in run-time order, 'already owned', at its energy), and the same shape bought leaves it."""
    req = loads_config("version: 1\nmodel: {preset: whisper-large-v3}\ntraining: {method: pretrain}\n"
                       "data: {samples: 1e8, epochs: 1}\nschedule: {runs_per_month: 1, deadline_days: 90}\n"
                       "deployment: {mode: either, objective: fastest, site: cloud, country: FR,\n"
                       "  data_sensitivity: confidential}\nhave: [{gpu: rtx-pro-6000, count: 4}]\n", "t.yaml")
    r = recommend(req, catalog)
    owned = [p for p in r.pareto if p.owned]
    alt = next(a for a in r.alternatives if "already owned" in a.reason)
    assert [(p.gpu, p.count, p.nodes, p.cost_per_run_usd) for p in owned] == [
        (alt.gpu, alt.count, alt.nodes, alt.cost_per_run_usd)]
    assert not [p for p in r.pareto if not p.owned and (p.gpu, p.count, p.nodes) == (alt.gpu, alt.count, alt.nodes)]
    assert [p.wall_hours for p in r.pareto] == sorted(p.wall_hours for p in r.pareto)
    assert "| already owned |" in render_recommendation(r, req, "md")


def test_owned_hardware_that_beats_the_pick_leaves_the_pick_on_the_front(catalog):
    """8 owned A100 do a LoRA run in 4.2 h for $4.28 of energy: the pick (what to add: one H200, rented) stays on
    the front beside them -- a sunk cost dominates nothing."""
    req = loads_config("version: 1\nmodel: {preset: llama-3-8b}\ntraining: {method: lora}\ndata: {tokens: 3e8}\n"
                       "schedule: {runs_per_month: 4, deadline_days: 3}\ndeployment: {mode: either}\n"
                       "have: [{gpu: a100-80gb-sxm, count: 8}]\n", "t.yaml")
    r = recommend(req, catalog)
    assert r.owned_pick is not None and r.build is not None
    kinds = {(p.gpu, p.owned) for p in r.pareto}
    assert ("a100-80gb-sxm", True) in kinds and (r.build.gpu, False) in kinds
