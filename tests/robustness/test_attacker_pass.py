"""What an attacker pass on inputs that were not in the project found (round 2, session 2), each
kept as a regression: SkyPilot CSVs the csv module refuses, garbage in GPUWIZ_TODAY, `catalog import
-o` that skipped the shared -o rule, names over NAME_MAX for every -o, UTF-16 logs."""

from __future__ import annotations

import codecs
import os
import re
from pathlib import Path

import pytest

from gpuwiz.cli import main

ROOT = Path(__file__).resolve().parents[2]
CSV = ROOT / "tests" / "data" / "skypilot" / "aws" / "vms.csv"
HDR = "InstanceType,vCPUs,MemoryGiB,AcceleratorName,AcceleratorCount,GpuInfo,Region,AvailabilityZone,Price,SpotPrice\n"
GOOD = "version: 1\nmodel:\n  preset: llama-2-7b\ndata:\n  tokens: 1T\n"


def _one_line(capsys, argv: list[str], pattern: str) -> str:
    rc = main(argv)
    out, err = capsys.readouterr()
    assert rc == 2, (rc, out, err)
    assert "Traceback" not in err and "internal error" not in err, err
    lines = err.splitlines()
    assert lines and all(ch.isprintable() for line in lines for ch in line), repr(err)
    assert re.search(pattern, lines[-1]), err
    return lines[-1]


def _csv(tmp_path: Path, text: str) -> str:
    d = tmp_path / "aws"
    d.mkdir(exist_ok=True)
    (d / "vms.csv").write_text(text, encoding="utf-8", newline="")
    return str(d / "vms.csv")


def test_a_csv_field_over_the_csv_module_limit_is_one_line(tmp_path, capsys):
    path = _csv(tmp_path, HDR + "p4d," + "9" * 200_000 + ",1152,A100,8,,us-east-1,a,32,9\n")
    _one_line(capsys, ["catalog", "import", "skypilot", path, "-o", str(tmp_path / "o.yaml")],
              rf"^{re.escape(path)}:2: not a readable CSV row \(field larger than field limit")
    assert not (tmp_path / "o.yaml").exists()


def test_quotes_and_newlines_inside_csv_fields_import(tmp_path, capsys):
    path = _csv(tmp_path, HDR + '"p4d.24xlarge",96,1152,A100,8,"{""Gpus"": [1,\n2]}",us-east-1,us-east-1a,32.77,9.8\n')
    assert main(["catalog", "import", "skypilot", path, "-o", str(tmp_path / "o.yaml")]) == 0, capsys.readouterr()
    assert "p4d.24xlarge" in (tmp_path / "o.yaml").read_text(encoding="utf-8")


@pytest.mark.parametrize("value", ["garbage", "2026-13-01", "\x1b[2J"])
def test_garbage_in_gpuwiz_today_is_one_line(monkeypatch, capsys, value):
    monkeypatch.setenv("GPUWIZ_TODAY", value)
    line = _one_line(capsys, ["catalog", "clouds"], r"^GPUWIZ_TODAY: .* is not a date \(YYYY-MM-DD\)")
    assert "\x1b" not in line


def test_catalog_import_never_writes_over_its_own_csv(tmp_path, capsys):
    path = _csv(tmp_path, CSV.read_text(encoding="utf-8"))
    before = Path(path).read_bytes()
    _one_line(capsys, ["catalog", "import", "skypilot", path, "-o", path, "--force"],
              "-o would overwrite the price list it reads")
    assert Path(path).read_bytes() == before


@pytest.mark.parametrize("kind", ["fifo", "link", "folder"])
def test_catalog_import_refuses_odd_targets(tmp_path, capsys, kind):
    target = tmp_path / "o.yaml"
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "link":
        (tmp_path / "real.yaml").write_text("x: 1\n")
        target.symlink_to(tmp_path / "real.yaml")
    else:
        target.mkdir()
    _one_line(capsys, ["catalog", "import", "skypilot", str(CSV), "-o", str(target), "--force"],
              "named pipe|symbolic link|is a directory")
    if kind == "link":
        assert (tmp_path / "real.yaml").read_text() == "x: 1\n" and target.is_symlink()


@pytest.mark.parametrize("argv", [["recommend", "{cfg}"], ["calibrate", str(ROOT / "tests/data/logs/torchtitan.log")],
                                  ["catalog", "import", "skypilot", str(CSV)], ["validate"]],
                         ids=["recommend", "calibrate", "catalog-import", "validate"])
def test_an_output_name_over_name_max_is_one_line(tmp_path, capsys, argv):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(GOOD, encoding="utf-8")
    out = tmp_path / ("y" * 5000)
    _one_line(capsys, [a.replace("{cfg}", str(cfg)) for a in argv] + ["-o", str(out)],
              r"(?i)file name too long")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.yaml"]


def test_a_utf16_log_says_so(tmp_path, capsys):
    log = tmp_path / "train.log"
    log.write_bytes(codecs.BOM_UTF16_LE + (ROOT / "tests/data/logs/torchtitan.log").read_text().encode("utf-16-le"))
    _one_line(capsys, ["calibrate", str(log)], r"is UTF-16 text; gpuwiz reads UTF-8 logs")
