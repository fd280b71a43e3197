"""`gpuwiz calibrate`: every listed stack's log is detected and read, warm-up skipped, the section valid;
hostile input is one line; the estimate moves the documented way."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from conftest import run_cli
from gpuwiz.calibrate.gpus import match_gpu
from gpuwiz.calibrate.logs import MAX_LINE, detect, read_log
from gpuwiz.calibrate.section import Where, calibration_from
from gpuwiz.core.config_io import loads_config
from gpuwiz.core.errors import GpuwizError
from gpuwiz.core.estimate import estimate
from gpuwiz.core.models import CalibrationSpec

LOGS = Path(__file__).resolve().parents[1] / "data" / "logs"

CASES = {
    "torchtitan.log": "torchtitan", "megatron.log": "megatron", "nemo.log": "nemo", "lightning.log": "lightning",
    "deepspeed.log": "deepspeed", "hf_trainer.log": "hf-trainer", "trainer_state.json": "hf-trainer",
    "accelerate.jsonl": "jsonl", "nvidia-smi.csv": "nvidia-smi", "dcgm-dmon.txt": "dcgm",
}

CONFIG_8B = """\
version: 1
model: {preset: llama-3-8b, seq_len: 4096}
training: {method: pretrain, global_batch: 256, micro_batch: 2}
data: {tokens: 100B}
"""


@pytest.mark.parametrize("name,fmt", sorted(CASES.items()))
def test_each_stack_is_detected_and_gives_a_valid_section(catalog, name, fmt):
    path = str(LOGS / name)
    assert detect(path) == fmt
    m = read_log(path)
    req = loads_config(CONFIG_8B, catalog=catalog)
    cal = calibration_from(m, catalog, Where(gpu="h100-sxm", count=8, req=req), name, "2026-12-01T00:00:00Z")
    assert isinstance(cal, CalibrationSpec)
    assert cal.source and name in cal.source and cal.measured_at
    assert cal.gpu == "h100-sxm" and cal.count == 8
    assert any(x is not None for x in (cal.tokens_per_s_per_gpu, cal.samples_per_s_per_gpu, cal.step_time_s,
                                       cal.peak_memory_gib))


def test_torchtitan_skips_the_first_step_and_takes_the_median(catalog):
    m = read_log(str(LOGS / "torchtitan.log"))
    assert m.skipped == 1 and len(m.points) == 5 and m.count == 8  # the device mesh line gives the GPU count
    cal = calibration_from(m, catalog, Where(gpu="h100-sxm"), "t", "now")
    assert cal.tokens_per_s_per_gpu == 6940.0  # median of 6934, 6952, 6918, 6940, 6961; step 1 (1,021) skipped
    assert cal.peak_memory_gib == 49.52 and cal.count == 8


def test_megatron_tokens_from_step_time_world_size_and_sequence(catalog):
    m = read_log(str(LOGS / "megatron.log"))
    cal = calibration_from(m, catalog, Where(gpu="h100-sxm"), "m", "now")
    assert cal.count == 16 and cal.step_time_s == pytest.approx(6.1059, abs=1e-3)
    # 256 sequences x 4096 tokens per 6.1059 s step over 16 GPUs
    assert cal.tokens_per_s_per_gpu == pytest.approx(256 * 4096 / 6.1059 / 16, rel=1e-3)
    assert cal.peak_memory_gib == pytest.approx(61440.25 / 1024, abs=0.01)


def test_deepspeed_samples_per_gpu_and_step_time(catalog):
    m = read_log(str(LOGS / "deepspeed.log"))
    cal = calibration_from(m, catalog, Where(), "d", "now")
    assert cal.count == 8  # world_size from the printed config
    assert cal.samples_per_s_per_gpu == pytest.approx(96.15 / 8, rel=1e-3)  # median CurrSamplesPerSec / world
    assert cal.step_time_s == pytest.approx(256 / 96.15, rel=1e-3)
    assert cal.peak_memory_gib == pytest.approx(31.7 + 0.5, abs=0.01)


def test_lightning_uses_the_configs_micro_batch(catalog):
    req = loads_config(CONFIG_8B, catalog=catalog)
    m = read_log(str(LOGS / "lightning.log"))
    cal = calibration_from(m, catalog, Where(gpu="a100-80gb-sxm", count=4, req=req), "l", "now")
    assert cal.tokens_per_s_per_gpu == pytest.approx(5.01 * 2 * 4096, rel=1e-3)  # median it/s x mb x seq


def test_nvidia_smi_names_the_gpu_and_count(catalog):
    m = read_log(str(LOGS / "nvidia-smi.csv"))
    cal = calibration_from(m, catalog, Where(), "s", "now")
    assert (cal.gpu, cal.count) == ("h100-sxm", 4)
    assert cal.peak_memory_gib == pytest.approx((61000 + 30) / 1024, abs=0.01)


@pytest.mark.parametrize("name,expected", [
    ("NVIDIA H100 80GB HBM3", "h100-sxm"), ("NVIDIA H100 PCIe", "h100-pcie"),
    ("NVIDIA A100-SXM4-40GB", "a100-40gb-sxm"),
    ("NVIDIA A100 80GB PCIe", "a100-80gb-pcie"), ("NVIDIA GeForce RTX 4090", "rtx-4090"), ("Tesla T4", "t4"),
    ("AMD Instinct MI300X", "mi300x"), ("NVIDIA RTX 6000 Ada Generation", "rtx-6000-ada"), ("Some GPU", None),
])
def test_driver_names_match_catalog_ids(catalog, name, expected):
    assert match_gpu(name, catalog) == expected


def test_calibration_changes_the_estimate_and_scales_to_other_gpus(catalog):
    """The measured point replaces the model there; other counts and types move by the same ratio."""
    base = loads_config(CONFIG_8B, catalog=catalog)
    cal = calibration_from(read_log(str(LOGS / "torchtitan.log")), catalog, Where(gpu="h100-sxm", req=base), "t", "now")
    calibrated = base.model_copy(update={"calibration": cal})
    at = estimate(calibrated, catalog, gpu="h100-sxm", count=8)
    assert at.throughput.tokens_per_s_per_gpu == pytest.approx(cal.tokens_per_s_per_gpu, rel=1e-6)
    raw = estimate(base, catalog, gpu="h100-sxm", count=8).throughput.tokens_per_s_per_gpu
    ratio = cal.tokens_per_s_per_gpu / raw
    for gpu, n in (("h100-sxm", 16), ("a100-80gb-sxm", 8)):
        before = estimate(base, catalog, gpu=gpu, count=n).throughput.tokens_per_s_per_gpu
        after = estimate(calibrated, catalog, gpu=gpu, count=n).throughput.tokens_per_s_per_gpu
        assert after == pytest.approx(before * ratio, rel=1e-6)


def test_step_time_alone_calibrates_at_the_measured_point(catalog):
    req = loads_config(CONFIG_8B + "calibration: {gpu: h100-sxm, count: 8, step_time_s: 10}\n", catalog=catalog)
    est = estimate(req, catalog, gpu="h100-sxm", count=8)
    assert est.throughput.tokens_per_s_per_gpu == pytest.approx(256 * 4096 / 10 / 8, rel=1e-6)


def test_an_unquoted_yaml_timestamp_is_kept_as_text(catalog):
    req = loads_config(CONFIG_8B + "calibration: {tokens_per_s_per_gpu: 5000, measured_at: 2025-06-10T10:00:00}\n",
                       catalog=catalog)
    assert req.calibration is not None and req.calibration.measured_at == "2025-06-10T10:00:00"


def test_unknown_calibration_gpu_is_a_config_error(catalog):
    with pytest.raises(GpuwizError, match=r"calibration\.gpu"):
        loads_config(CONFIG_8B + "calibration: {gpu: h100-sxn, tokens_per_s_per_gpu: 5000}\n", "c.yaml",
                     catalog=catalog)


# ---- hostile input -----------------------------------------------------------------------------------


def test_binary_fifo_huge_line_and_unknown_text_are_one_line_errors(tmp_path):
    binf = tmp_path / "bin.log"
    binf.write_bytes(b"\x7fELF\x00\x00" * 100)
    with pytest.raises(GpuwizError, match="binary"):
        read_log(str(binf))
    huge = tmp_path / "huge.log"
    with open(huge, "w") as fh:
        fh.write("step: 1 loss: 1.0 tps: 100\n")
        fh.write("x" * (MAX_LINE + 10))
    with pytest.raises(GpuwizError, match="over 1 MiB"):
        read_log(str(huge), "torchtitan")
    other = tmp_path / "notes.txt"
    other.write_text("hello\nworld\n")
    with pytest.raises(GpuwizError, match="not a log format"):
        read_log(str(other))
    if hasattr(os, "mkfifo"):
        fifo = tmp_path / "fifo"
        os.mkfifo(fifo)
        with pytest.raises(GpuwizError, match="FIFO"):
            read_log(str(fifo))  # returns at once: a FIFO is never opened
    warm = tmp_path / "warm.log"
    warm.write_text("step:  1  loss: 9.0  memory: 1.0GiB(1%)  tps: 100\n")
    with pytest.raises(GpuwizError, match="warm-up"):
        read_log(str(warm))


def test_many_steps_keep_memory_bounded(tmp_path, monkeypatch):
    import gpuwiz.calibrate.logs as logs

    monkeypatch.setattr(logs, "MAX_POINTS", 64)
    big = tmp_path / "long.log"
    big.write_text("".join(f"step: {i}  loss: 1.0  tps: {1000 + (i % 7)}\n" for i in range(1, 5001)))
    m = read_log(str(big))
    assert len(m.points) < 64 and m.logged == 5000
    assert 1000 <= m.median("tokens_per_s_per_gpu") <= 1006


# ---- the command -------------------------------------------------------------------------------------


def test_cli_prints_a_section_that_loads_as_config(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(CONFIG_8B)
    r = run_cli("calibrate", LOGS / "torchtitan.log", "--config", cfg, "--gpu", "h100-sxm")
    assert r.returncode == 0, r.stderr
    assert "estimate on 8x" in r.stdout
    section = yaml.safe_load(r.stdout)
    assert section["calibration"]["tokens_per_s_per_gpu"] == 6940.0
    assert cfg.read_text() == CONFIG_8B  # never edited
    merged = tmp_path / "m.yaml"
    merged.write_text(CONFIG_8B + r.stdout)
    r2 = run_cli("estimate", merged, "--gpu", "h100-sxm", "--count", "8", "--format", "json")
    assert r2.returncode == 0, r2.stderr
    assert json.loads(r2.stdout)["throughput"]["tokens_per_s_per_gpu"] == pytest.approx(6940.0, rel=1e-6)


def test_cli_output_file_is_never_clobbered_or_the_config(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(CONFIG_8B)
    r = run_cli("calibrate", LOGS / "deepspeed.log", "--config", cfg, "-o", cfg)
    assert r.returncode == 2 and "never edits" in r.stderr
    out = tmp_path / "cal.yaml"
    out.write_text("mine\n")
    r = run_cli("calibrate", LOGS / "deepspeed.log", "-o", out)
    assert r.returncode == 2 and "--force" in r.stderr and out.read_text() == "mine\n"
    r = run_cli("calibrate", LOGS / "deepspeed.log", "-o", out, "--force")
    assert r.returncode == 0 and "calibration:" in out.read_text()
    r = run_cli("calibrate", tmp_path / "missing.log")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
