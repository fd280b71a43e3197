"""The SkyPilot catalogs/v8 excerpts under tests/data/skypilot/*-v8 import with the right place and trust."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuwiz.core import skypilot
from gpuwiz.core.catalog import load_catalog

DATA = Path(__file__).resolve().parents[1] / "data" / "skypilot"
GPU_IDS = {g.id for g in load_catalog().gpus}


def _read(folder: str, cloud: str) -> skypilot.ImportResult:
    path = DATA / folder / "vms.csv"
    return skypilot.read_csv(path.read_text(encoding="utf-8"), cloud, str(path), observed="2025",
                             retrieved="2026-12-01", gpu_ids=GPU_IDS)


@pytest.mark.parametrize(("folder", "cloud"), [("gcp-v8", "gcp"), ("lambda-v8", "lambda"), ("nebius-v8", "nebius")])
def test_v8_sample_imports_without_problems(folder: str, cloud: str) -> None:
    res = _read(folder, cloud)
    assert res.offers and not res.problems, res.problems


def test_nebius_regions_tier_and_fabric() -> None:
    res = _read("nebius-v8", "nebius")
    got = {(o["instance_type"], o["region"]): o for o in res.offers}
    assert {o["country"] for o in res.offers} == {"FI", "FR", "US"}
    assert {o["tier"] for o in res.offers} == {"neocloud"}
    h8 = got[("gpu-h100-sxm_8gpu-128vcpu-1600gb", "eu-north1")]
    assert h8["gpu"] == "h100-sxm" and h8["gpu_count"] == 8 and h8["price_per_hour"] == 23.6
    assert h8["spot_per_hour"] == 10.0 and h8["rdma"] is True and h8["interconnect"] == "nvlink"
    assert got[("gpu-b200-sxm_8gpu-160vcpu-1792gb", "us-central1")]["gpu"] == "b200"
    assert res.skipped_no_accelerator == 1  # the CPU row


def test_gcp_v8_host_rows_without_a_price_still_join_their_accelerator_row() -> None:
    res = _read("gcp-v8", "gcp")
    got = {(o["instance_type"], o["region"]): o for o in res.offers}
    assert got[("a4-highgpu-8g", "us-central1")]["price_per_hour"] == 90.216
    assert got[("a3-megagpu-8g", "us-east4")]["price_per_hour"] == pytest.approx(9.46006 + 82.75424)
    assert got[("a3-highgpu-8g", "europe-west1")]["country"] == "BE"
