"""Config files: forgiving numbers, line-numbered errors, safe YAML, exact round trip, atomic save."""

import os
import stat

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuwiz.core.config_io import dumps_config, load_config, loads_config, save_config
from gpuwiz.core.errors import GpuwizError
from gpuwiz.core.models import Requirements

FULL = """\
version: 1
model:
  preset: llama-2-7b
  family: decoder
  params_b: 6.74
  layers: 32
  hidden: 4096
  heads: 32
  kv_heads: 32
  ffn: 11008
  vocab: 32000
  seq_len: 4096
training:
  method: pretrain
  precision: bf16
  optimizer: adamw
  micro_batch: 4
  global_batch: 1024
  activation_checkpointing: none
  flash_attention: true
  lora_rank: 16
  parallel:
    zero_stage: 3
    tp: 1
    pp: 1
    offload: none
data:
  tokens: 2.0e12
  samples: 1281167
  epochs: 90
  dataset_gb: 150
  sample_kb: 110
schedule:
  runs_per_month: 1
  deadline_days: 14
deployment:
  mode: either
  budget_usd: 250000
  horizon_years: 3
  electricity_usd_per_kwh: 0.12
  country: US
hardware:
  gpu: a100-80gb-sxm
  count: 8
"""


def test_issue_example_config_loads_with_every_key():
    req = loads_config(FULL, "full.yaml")
    assert req.model.preset == "llama-2-7b"
    assert req.training.parallel.zero_stage == 3
    assert req.data.tokens == 2e12  # "2.0e12" is a string to PyYAML
    assert req.hardware.count == 8
    assert req.deployment.electricity_usd_per_kwh == 0.12


@pytest.mark.parametrize(
    "field,text,expected",
    [
        ("tokens", "2e12", 2e12),
        ("tokens", "2T", 2e12),
        ("tokens", "1.5B", 1.5e9),
        ("tokens", "300_000_000", 3e8),
        ("dataset_gb", "150 GB", 150.0),
        ("dataset_gb", "2 TB", 2000.0),
        ("dataset_gb", "512MB", 0.512),
        ("sample_kb", "1.1 MB", 1100.0),
    ],
)
def test_human_numbers(field, text, expected):
    req = loads_config(f"version: 1\ndata:\n  {field}: {text}\n")
    assert getattr(req.data, field) == pytest.approx(expected)


def test_human_int_fields_reject_fractions():
    with pytest.raises(GpuwizError, match=r"x.yaml:3: training.micro_batch: .*whole number"):
        loads_config("version: 1\ntraining:\n  micro_batch: 2.5\n", "x.yaml")
    assert loads_config("version: 1\ntraining:\n  global_batch: 4k\n").training.global_batch == 4000


def test_errors_name_file_line_and_field_one_per_line():
    text = "version: 1\nmodel:\n  preset: llama-2-7b\n  parms_b: 3\ntraining:\n  method: lorra\n"
    with pytest.raises(GpuwizError) as exc:
        loads_config(text, "team.yaml")
    problems = exc.value.problems
    assert problems[0] == "team.yaml:4: model.parms_b: unknown key (did you mean params_b?)"
    assert problems[1].startswith("team.yaml:6: training.method: ")
    assert "'lorra'" in problems[1]
    assert all("\n" not in p for p in problems)


def test_unknown_preset_and_gpu_get_did_you_mean(catalog):
    with pytest.raises(GpuwizError, match=r"c.yaml:3: model.preset: unknown preset 'llama-2-7' \(did you mean "
                                          r"llama-2-7b"):
        loads_config("version: 1\nmodel:\n  preset: llama-2-7\n", "c.yaml", catalog=catalog)
    with pytest.raises(GpuwizError, match=r"c.yaml:3: hardware.gpu: unknown GPU 'h100' \(did you mean .*h100-sxm"):
        loads_config("version: 1\nhardware:\n  gpu: h100\n", "c.yaml", catalog=catalog)


@pytest.mark.parametrize(
    "text,pattern",
    [
        ("", r"empty file"),
        ("- 1\n- 2\n", r"must be a YAML mapping"),
        ("model: {preset: x}\n", r":1: version: missing"),
        ("version: 2\n", r":1: version: config is version 2, this gpuwiz reads version 1"),
        ("version: 1\nmodel: [\n", r"invalid YAML"),
        ("version: 1\ndata:\n  tokens: .nan\n", r":3: data.tokens: must be a finite number"),
        ("version: 1\ndata:\n  tokens: -5\n", r":3: data.tokens: Input should be greater than or equal to 1"),
        ("version: 1\ndata:\n  tokens: 1e300\n", r":3: data.tokens: Input should be less than or equal to"),
        ("version: 1\nx: !!python/object/apply:os.system ['echo hi']\n", r":2: x: YAML tag .* not allowed"),
        ("version: 1\nversion: 1\n", r":2: version: duplicate key"),
    ],
)
def test_bad_configs(text, pattern):
    with pytest.raises(GpuwizError, match=pattern):
        loads_config(text, "bad.yaml")


def test_alias_bomb_is_refused_quickly():
    bomb = "version: 1\na: &a [x, x, x, x, x, x, x, x, x, x]\n"
    for i, name in enumerate("bcdefghij"):
        prev = "abcdefghij"[i]
        bomb += f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 10) + "]\n"
    with pytest.raises(GpuwizError, match="alias bomb"):
        loads_config(bomb, "bomb.yaml")


def test_file_errors(tmp_path):
    with pytest.raises(GpuwizError, match="no such file"):
        load_config(tmp_path / "missing.yaml")
    with pytest.raises(GpuwizError, match="is a directory"):
        load_config(tmp_path)
    binary = tmp_path / "b.yaml"
    binary.write_bytes(b"\x00\x01\x02version: 1")
    with pytest.raises(GpuwizError, match="binary"):
        load_config(binary)


def test_round_trip_is_exact_and_minimal(tmp_path):
    req = loads_config(FULL)
    path = tmp_path / "cfg.yaml"
    save_config(req, path)
    assert load_config(path) == req
    minimal = Requirements()
    text = dumps_config(minimal)
    assert "training" not in text and "deployment" not in text  # defaults are not dumped as noise
    assert loads_config(text) == minimal


def test_relative_hf_config_resolves_next_to_the_config(tmp_path):
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "config.json").write_text("{}")
    (tmp_path / "cfg" / "run.yaml").write_text("version: 1\nmodel:\n  hf_config: config.json\n")
    req = load_config(tmp_path / "cfg" / "run.yaml")
    assert os.path.isabs(req.model.hf_config)
    assert req.model.hf_config.endswith("config.json")


@settings(max_examples=60, deadline=None)
@given(
    tokens=st.floats(min_value=1, max_value=1e15, allow_nan=False),
    epochs=st.floats(min_value=0.01, max_value=1000, allow_nan=False),
    gpus=st.integers(min_value=1, max_value=4096),
    method=st.sampled_from(["pretrain", "full", "lora", "qlora"]),
    budget=st.none() | st.floats(min_value=1, max_value=1e9, allow_nan=False),
)
def test_round_trip_property(tokens, epochs, gpus, method, budget):
    req = Requirements.model_validate({
        "data": {"tokens": tokens, "epochs": epochs},
        "training": {"method": method},
        "hardware": {"gpu": "h100-sxm", "count": gpus},
        "deployment": {"budget_usd": budget},
    })
    assert loads_config(dumps_config(req)) == req


def test_failed_save_leaves_previous_file(tmp_path):
    path = tmp_path / "keep.yaml"
    path.write_text("version: 1\n# precious\n")
    os.chmod(tmp_path, stat.S_IRUSR | stat.S_IXUSR)
    try:
        if os.access(tmp_path, os.W_OK):
            pytest.skip("running as a user who can write to read-only directories (root)")
        with pytest.raises(GpuwizError, match="cannot save"):
            save_config(Requirements(), path)
    finally:
        os.chmod(tmp_path, stat.S_IRWXU)
    assert path.read_text() == "version: 1\n# precious\n"
    assert [p.name for p in tmp_path.iterdir()] == ["keep.yaml"]  # no temp file left behind


@pytest.mark.parametrize("where", ["write", "fsync", "rename"])
def test_interrupted_save_keeps_previous_file(tmp_path, monkeypatch, where):
    """A full disk during write/fsync, or a failure at rename, leaves the old file and no temp file."""
    import errno

    import gpuwiz.core.yamlio as yamlio

    path = tmp_path / "keep.yaml"
    path.write_text("version: 1\n# precious\n")

    def boom(*_a, **_k):
        raise OSError(errno.ENOSPC, "No space left on device")

    if where == "write":
        real_fdopen = os.fdopen

        class Full:
            def __init__(self, fh):
                self.fh = fh

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                self.fh.close()

            def write(self, _text):
                boom()

        monkeypatch.setattr(yamlio.os, "fdopen", lambda fd, *a, **k: Full(real_fdopen(fd, *a, **k)))
    elif where == "fsync":
        monkeypatch.setattr(yamlio.os, "fsync", boom)
    else:
        monkeypatch.setattr(yamlio.os, "replace", boom)
    with pytest.raises(GpuwizError, match=r"keep.yaml: cannot save: No space left on device \(previous file left "
                                          r"unchanged\)"):
        save_config(Requirements(), path)
    assert path.read_text() == "version: 1\n# precious\n"
    assert [p.name for p in tmp_path.iterdir()] == ["keep.yaml"]
