"""docs/LIMITS.md agrees with the code, and each limit is enforced with a clear one-line message:
the value at the limit loads, the next one past it is refused naming file, line and field."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpuwiz.core import config_io, models, yamlio
from gpuwiz.core.config_io import loads_config
from gpuwiz.core.errors import GpuwizError

DOC = (Path(__file__).resolve().parents[2] / "docs" / "LIMITS.md").read_text(encoding="utf-8")

# (section, field, largest accepted value as the doc writes it, the value, just past it)
LIMITS = [
    ("model", "params_b", "100,000", models.MAX_PARAMS_B, models.MAX_PARAMS_B * 1.01),
    ("model", "seq_len", "4,194,304", models.MAX_SEQ_LEN, models.MAX_SEQ_LEN + 1),
    ("data", "tokens", "1e16", models.MAX_TOKENS, models.MAX_TOKENS * 1.01),
    ("data", "samples", "1e13", models.MAX_SAMPLES, models.MAX_SAMPLES * 1.01),
    ("data", "dataset_gb", "1e8 GB", models.MAX_DATASET_GB, models.MAX_DATASET_GB * 1.01),
    ("hardware", "count", "100,000", models.MAX_GPUS, models.MAX_GPUS + 1),
    ("deployment", "budget_usd", "1e11", models.MAX_BUDGET_USD, models.MAX_BUDGET_USD * 1.01),
    ("schedule", "deadline_days", "3,650", 3650, 3651),
    ("hardware", "gpus_per_node", "72", 72, 73),
    ("deployment", "horizon_years", "15", 15, 16),
]


def _doc_row(field: str) -> str:
    rows = [line for line in DOC.splitlines() if line.startswith("|") and (f"`{field}" in line or f".{field}`" in line)]
    assert rows, f"docs/LIMITS.md has no row for {field}"
    return rows[0]


def _yaml_number(v: float) -> str:
    return str(int(v)) if float(v).is_integer() and abs(v) < 1e15 else repr(float(v))


@pytest.mark.parametrize("section,field,doc_text,limit,past", LIMITS, ids=[f"{s}.{f}" for s, f, *_ in LIMITS])
def test_limit_documented_and_enforced(section, field, doc_text, limit, past):
    assert doc_text in _doc_row(field), f"docs/LIMITS.md row for {field} does not say {doc_text}"
    ok = loads_config(f"version: 1\n{section}:\n  {field}: {_yaml_number(limit)}\n", "lim.yaml")
    assert getattr(getattr(ok, section), field) == pytest.approx(limit)
    with pytest.raises(GpuwizError) as exc:
        loads_config(f"version: 1\n{section}:\n  {field}: {_yaml_number(past)}\n", "lim.yaml")
    assert exc.value.problems == [exc.value.problems[0]]
    assert re.match(rf"lim\.yaml:3: {section}\.{field}: Input should be less than or equal to ", str(exc.value))


def test_file_limits_documented():
    assert config_io.MAX_CONFIG_BYTES == 1_000_000 and "Config file size | 1 MB" in DOC
    assert yamlio.MAX_FILE_BYTES == 2_000_000 and "overlay file size | 2 MB" in DOC
    assert f"{yamlio.MAX_NODES:,}" in DOC
    assert f"| Config `version` | {models.CONFIG_VERSION} " in DOC


def test_config_size_limit_is_enforced_at_the_documented_size(tmp_path):
    at = tmp_path / "at.yaml"
    at.write_text("version: 1\n" + "#" * (config_io.MAX_CONFIG_BYTES - 12) + "\n")
    assert at.stat().st_size == config_io.MAX_CONFIG_BYTES
    config_io.load_config(at)
    past = tmp_path / "past.yaml"
    past.write_text(at.read_text() + "\n")
    with pytest.raises(GpuwizError, match=r"past\.yaml: file is 1\.0 MB; gpuwiz reads YAML files up to 1 MB"):
        config_io.load_config(past)


def test_alias_expansion_bound_is_the_documented_one():
    n = 500  # 500 * 500 = 250,000 values > MAX_NODES, but a file of only ~2 KB
    text = "version: 1\nx: &x [" + ", ".join(["1"] * n) + "]\ny: [" + ", ".join(["*x"] * n) + "]\n"
    with pytest.raises(GpuwizError, match=rf"more than {yamlio.MAX_NODES} values \(alias bomb\?\)"):
        yamlio.parse(text, "a.yaml")
    small = "x: &x [" + ", ".join(["1"] * 100) + "]\ny: [" + ", ".join(["*x"] * 100) + "]\n"
    data, _ = yamlio.parse(small, "a.yaml")  # 10,000 values: fine
    assert len(data["y"]) == 100


def test_whole_number_and_finite_rules_documented():
    for phrase in ("`.nan`", "`1e999`", "`micro_batch: 2.5`", "`true`/`false`"):
        assert phrase in DOC
    with pytest.raises(GpuwizError, match=r"training.micro_batch: must be a number, not true/false"):
        loads_config("version: 1\ntraining:\n  micro_batch: true\n")
    with pytest.raises(GpuwizError, match=r"data.tokens: must be a number, not true/false"):
        loads_config("version: 1\ndata:\n  tokens: false\n")
    for text in ("NaN", "inf", "-Infinity", "+inf"):
        with pytest.raises(GpuwizError, match=r"deployment.budget_usd: must be a finite number"):
            loads_config(f"version: 1\ndeployment:\n  budget_usd: \"{text}\"\n")


def _fstat_saying(size: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """os.fstat as the reader sees it: a file that had ``size`` bytes when it was opened."""
    import os

    real = os.fstat

    def fstat(fd: int) -> os.stat_result:
        st = real(fd)
        return os.stat_result((*st[:6], size, *st[7:]))

    monkeypatch.setattr(yamlio.os, "fstat", fstat)


def test_the_reader_reads_past_the_size_the_file_had_when_opened(tmp_path, monkeypatch):
    # read_file_bytes asks for the size fstat gave (+1) first, then reads on: a file that grew after the
    # fstat is still read whole, and one that grew past the cap is refused, not cut short
    f = tmp_path / "grew.yaml"
    body = b"".join(b"x: %d\n" % i for i in range(40_000))  # ~300 kB: several reads after the first
    f.write_bytes(body)
    _fstat_saying(10, monkeypatch)
    assert yamlio.read_file_bytes(f) == body
    with pytest.raises(GpuwizError, match=r"file is over 0\.1 MB"):
        yamlio.read_file_bytes(f, max_bytes=100_000)
    _fstat_saying(0, monkeypatch)  # what procfs and some FUSE files report
    assert yamlio.read_file_bytes(f) == body
