"""`gpuwiz catalog import skypilot`: real SkyPilot CSV samples (tests/data/skypilot/SOURCE.md)."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from gpuwiz.cli import main
from gpuwiz.core import skypilot
from gpuwiz.core.catalog import load_catalog

DATA = Path(__file__).resolve().parents[1] / "data" / "skypilot"
CLOUDS = ("aws", "gcp", "azure", "lambda", "runpod", "vast", "tencentcloud")
GPU_IDS = {g.id for g in load_catalog().gpus}


def _read(cloud: str) -> skypilot.ImportResult:
    path = DATA / cloud / "vms.csv"
    return skypilot.read_csv(path.read_text(encoding="utf-8"), cloud, str(path), observed="2025-05",
                             retrieved="2026-12-01", gpu_ids=GPU_IDS)


def _rows(cloud: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO((DATA / cloud / "vms.csv").read_text(encoding="utf-8"))))


@pytest.mark.parametrize("cloud", CLOUDS)
def test_every_sample_imports_and_loads_as_an_overlay(cloud: str, tmp_path: Path) -> None:
    res = _read(cloud)
    assert res.offers, res.problems
    over = tmp_path / "o.yaml"
    over.write_text(skypilot.overlay_text(res), encoding="utf-8")
    cat = load_catalog(over)
    ids = {o["id"] for o in res.offers}
    got = {i.id: i for i in cat.cloud_instances if i.id in ids}
    assert set(got) == ids
    for inst in got.values():
        assert inst.observed == "2025-05" and inst.currency == "USD" and len(inst.country) == 2
        assert inst.price_usd_per_hour > 0 and inst.gpu in GPU_IDS


def test_prices_come_from_the_rows() -> None:
    # AWS p5.48xlarge us-east-1: on-demand 98.32 in every zone, the lowest spot over its zones.
    rows = [r for r in _rows("aws") if r["InstanceType"] == "p5.48xlarge" and r["Region"] == "us-east-1"]
    o = next(o for o in _read("aws").offers if o["instance_type"] == "p5.48xlarge" and o["region"] == "us-east-1")
    assert o["price_per_hour"] == float(rows[0]["Price"])
    assert o["spot_per_hour"] == min(float(r["SpotPrice"]) for r in rows)
    assert o["gpu"] == "h100-sxm" and o["gpu_count"] == 8 and o["rdma"] is True and o["country"] == "US"
    eu = next(o for o in _read("aws").offers if o["instance_type"] == "p5.48xlarge" and o["region"] == "eu-north-1")
    assert eu["country"] == "SE"


def test_gcp_host_and_accelerator_rows_are_joined() -> None:
    rows = _rows("gcp")
    host = next(r for r in rows if r["InstanceType"] == "a3-highgpu-8g" and r["Region"] == "us-east4")
    acc = next(r for r in rows if r["AcceleratorName"] == "H100" and r["Region"] == "us-east4")
    o = next(o for o in _read("gcp").offers if o["instance_type"] == "a3-highgpu-8g")
    assert o["price_per_hour"] == pytest.approx(float(host["Price"]) + float(acc["Price"]))
    assert o["gpu_count"] == int(acc["AcceleratorCount"]) and o["gpu"] == "h100-sxm"
    res = _read("gcp")
    # host rows in regions without an accelerator price are reported, one line each, with the line
    assert any(":4: AcceleratorName: a3-highgpu-1g in europe-west4" in p for p in res.problems)
    assert set(res.unmapped) == {"tpu-v6e-1", "tpu-v6e-8"}


def test_tiers_and_countries_by_cloud() -> None:
    assert {o["tier"] for o in _read("runpod").offers} == {"marketplace-secure"}
    assert {o["tier"] for o in _read("vast").offers} == {"marketplace-community"}
    assert {o["tier"] for o in _read("lambda").offers} == {"neocloud"}
    vast = {o["instance_type"] + "@" + o["country"] for o in _read("vast").offers}
    assert "2x-RTX_5090-32-65536@CN" in vast and "4x-RTX_4090-32-65536@HK" in vast
    assert {o["country"] for o in _read("runpod").offers} >= {"CA", "NL", "US", "SE", "CZ"}
    lam = {o["region"]: o["country"] for o in _read("lambda").offers}
    assert lam["europe-central-1"] == "DE" and lam["asia-northeast-1"] == "JP"


def test_bad_rows_one_line_each_and_the_rest_import() -> None:
    text = (DATA / "aws" / "vms.csv").read_text(encoding="utf-8").splitlines()
    text.insert(3, "p4d.24xlarge,A100,8.0,96.0,1152.0,,not-a-price,,us-east-1,use1-az9")
    text.insert(4, "p4d.24xlarge,A100,8.0,96.0,1152.0,,32.77,,mars-north-1,mn1-az1")
    text.insert(5, "p4d.24xlarge,A100")
    res = skypilot.read_csv("\n".join(text) + "\n", "aws", "f.csv", observed="2025", retrieved="2026")
    assert "f.csv:4: Price/AcceleratorCount: not a number" in " ".join(res.problems)
    assert any(p.startswith("f.csv:5: Region: 'mars-north-1'") for p in res.problems)
    assert any(p.startswith("f.csv:6: row: 2 fields") for p in res.problems)
    assert len(res.offers) == len(_read("aws").offers)
    assert res.skipped_no_accelerator == 1  # the a1.large CPU row


def test_unmapped_accelerators_are_reported_not_imported() -> None:
    az = _read("azure")
    assert az.unmapped == {"K80": 1}
    assert all(o["gpu"] != "k80" for o in az.offers)
    assert {o["gpu"] for o in az.offers if "H100" in o["instance_type"]} == {"h100-nvl"}  # NC H100 v5 = H100 NVL


def test_not_a_skypilot_file() -> None:
    from gpuwiz.core.errors import GpuwizError

    with pytest.raises(GpuwizError, match=r"x.csv:1: header: missing column"):
        skypilot.read_csv("a,b,c\n1,2,3\n", "aws", "x.csv", observed="2025", retrieved="2026")
    with pytest.raises(GpuwizError, match="unknown cloud 'ibm'"):
        skypilot.read_csv("InstanceType\n", "ibm", "x.csv", observed="2025", retrieved="2026")


def test_cli_import_writes_overlay_and_never_overwrites(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "aws.yaml"
    src = DATA / "aws" / "vms.csv"
    assert main(["catalog", "import", "skypilot", str(src), "-o", str(out), "--observed", "2025-05-20"]) == 0
    cap = capsys.readouterr()
    assert "vms.csv:14: Price: empty" in cap.err and "10 offers" in cap.out
    cat = load_catalog(out)
    assert any(i.id == "aws-p5.48xlarge-us-east-1" and i.observed == "2025-05-20" for i in cat.cloud_instances)
    before = out.read_text(encoding="utf-8")
    assert main(["catalog", "import", "skypilot", str(src), "-o", str(out)]) == 2
    assert "exists; pass --force" in capsys.readouterr().err and out.read_text(encoding="utf-8") == before
    assert main(["catalog", "import", "skypilot", str(src), "-o", str(out), "--force", "--cloud", "aws"]) == 0


def test_a_whole_cloud_fits_the_overlay_limits(tmp_path: Path) -> None:
    # A SkyPilot GPU catalog of one cloud: ~80 GPU instance types x ~30 regions (AWS has fewer).
    lines = ["InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,SpotPrice,Region,"
             "AvailabilityZone"]
    regions = list(skypilot.builtin_map()["clouds"]["aws"]["regions"])
    for t in range(80):
        for r in regions:
            lines.append(f"p{t}.48xlarge,H100,8.0,192.0,2048.0,,{50 + t:.2f},{20 + t:.2f},{r},{r}-az1")
    res = skypilot.read_csv("\n".join(lines) + "\n", "aws", "big.csv", observed="2026-11", retrieved="2026-12")
    assert len(res.offers) == 80 * len(regions) and not res.problems
    over = tmp_path / "big.yaml"
    over.write_text(skypilot.overlay_text(res), encoding="utf-8")
    cat = load_catalog(over)
    assert sum(1 for i in cat.cloud_instances if i.id.startswith("aws-p")) >= 80 * len(regions)


# ---- the overlay's format: JSON (which is YAML), read at C speed, lines found only on error ---------

def _yaml_flow(res: skypilot.ImportResult) -> str:
    """The same offers as a hand-written YAML overlay would hold them (flow mappings)."""
    rows = ("- {" + ", ".join(f"{k}: {skypilot._scalar(v)}" for k, v in o.items()) + "}" for o in res.offers)
    return "cloud_instances:\n" + "\n".join(rows) + "\n"


def test_the_overlay_is_json_with_a_comment_header_and_reads_like_its_yaml_twin(tmp_path: Path) -> None:
    import json

    import yaml

    res = _read("runpod")
    text = skypilot.overlay_text(res, "imported from runpod/vms.csv\nobserved 2025-05")
    assert text.startswith("# imported from runpod/vms.csv\n# observed 2025-05\n")
    body = "\n".join(line for line in text.splitlines() if not line.startswith("#"))
    assert json.loads(body) == yaml.safe_load(text) == {"cloud_instances": res.offers}
    (tmp_path / "j.yaml").write_text(text, encoding="utf-8")
    (tmp_path / "y.yaml").write_text(_yaml_flow(res), encoding="utf-8")
    as_json = load_catalog(tmp_path / "j.yaml").cloud_instances
    as_yaml = load_catalog(tmp_path / "y.yaml").cloud_instances
    assert [i.model_dump() for i in as_json] == [i.model_dump() for i in as_yaml]


def test_a_bad_value_in_a_json_overlay_names_its_line(tmp_path: Path) -> None:
    from gpuwiz.core.errors import GpuwizError

    res = _read("lambda")
    res.offers[2]["price_per_hour"] = 0  # the third offer: after 1 header line and the opening line
    over = tmp_path / "o.yaml"
    over.write_text(skypilot.overlay_text(res, "header"), encoding="utf-8")
    bad = res.offers[2]["id"]
    with pytest.raises(GpuwizError, match=rf"o\.yaml:5: cloud_instances\[\d+\] \({bad}\)\.price_per_hour"):
        load_catalog(over)


def test_json_the_fast_path_refuses_goes_to_the_yaml_reader(tmp_path: Path) -> None:
    from gpuwiz.core.errors import GpuwizError
    from gpuwiz.core.yamlio import parse

    with pytest.raises(GpuwizError, match=r"x:2: .*duplicate key"):
        parse('{"a": 1,\n "a": 2}\n', "x")
    data, lines = parse('# c\n{"a": [1, {"b": "two"}]}\n', "x")
    assert data == {"a": [1, {"b": "two"}]} and lines.line(("a", 1, "b")) == 2
    data, _ = parse('{"a": NaN}\n', "x")  # not JSON's NaN: YAML reads the word
    assert data == {"a": "NaN"}
    with pytest.raises(GpuwizError, match=r"x:1: invalid YAML"):  # a lone surrogate: refused as before
        parse('{"a": "\\ud800"}\n', "x")
