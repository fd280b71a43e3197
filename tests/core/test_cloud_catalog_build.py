"""scripts/build_cloud_catalog.py: the generated cloud block is what the vendored SkyPilot excerpts give,
and a newer snapshot of a cloud supersedes an older one's offer for the same instance and region."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from gpuwiz.core.catalog import load_catalog

ROOT = Path(__file__).resolve().parents[2]


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("build_cloud_catalog", ROOT / "scripts" / "build_cloud_catalog.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["build_cloud_catalog"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_generated_block_is_current_and_has_one_offer_per_instance_and_region() -> None:
    mod = _script()
    offers = mod.generated()
    text = mod.CATALOG.read_text(encoding="utf-8")
    assert mod.render(offers) in text  # what --check verifies
    keys = [(o["provider"], o["instance_type"], o["region"]) for o in offers]
    assert len(keys) == len(set(keys))


def test_newer_aws_snapshot_supersedes_the_pre_cut_one() -> None:
    mod = _script()
    by_key = {(o["instance_type"], o["region"]): o for o in mod.generated() if o["provider"] == "AWS"}
    # The v7 excerpt lists p5.48xlarge eu-north-1 at the pre-cut $105.2024; the v8 one at $58.8928.
    p5 = by_key[("p5.48xlarge", "eu-north-1")]
    assert p5["price_per_hour"] == 58.8928 and p5["observed"] == "2025-06"
    assert "aws-v8" in str(p5["source"])
    b200 = by_key[("p6-b200.48xlarge", "us-east-1")]
    assert b200["gpu"] == "b200" and b200["price_per_hour"] == 113.9328
    # ...and the built-in catalog carries it.
    cat = load_catalog()
    assert any(i.instance_type == "p6-b200.48xlarge" and i.region == "us-east-1" for i in cat.cloud_instances)


def test_gcp_v8_a4_is_priced_from_its_accelerator_row() -> None:
    mod = _script()
    by_key = {(o["instance_type"], o["region"]): o for o in mod.generated() if o["provider"] == "GCP"}
    # v8 lists the a4 host VM at $0.0: the B200 x8 accelerator row carries the whole price.
    a4 = by_key[("a4-highgpu-8g", "us-east4")]
    assert a4["gpu"] == "b200" and a4["gpu_count"] == 8 and a4["price_per_hour"] == 64.44
    assert "gcp-v8" in str(a4["source"])
    de = by_key[("a3-highgpu-8g", "europe-west3")]  # an in-country H100 offer for DE
    assert de["country"] == "DE" and de["price_per_hour"] == round(11.16287 + 92.47944, 6)


def test_a_later_hand_rate_supersedes_a_uniform_price_providers_snapshot_in_every_region() -> None:
    mod = _script()
    gen = mod.generated()
    lam = {(o["instance_type"], o["region"]) for o in gen if o["provider"] == "Lambda"}
    neb = {(o["gpu"], o["gpu_count"], o["region"]) for o in gen if o["provider"] == "Nebius"}
    # Lambda's hand 8x H100 SXM (2026-09-20, $3.99/GPU-h) beats the snapshot's $2.99 in every region...
    assert not any(t == "gpu_8x_h100_sxm5" for t, _ in lam)
    # ...while a shape the hand part lacks (2x B200) still comes from the snapshot.
    assert ("gpu_2x_b200_sxm6", "us-east-1") in lam
    # Nebius: hand 8x H200 in eu-north1 (2026-09-25) supersedes the snapshot's eu-west1 / us-central1 rows too.
    assert not any(g == "h200-sxm" and n == 8 for g, n, _ in neb)
    assert ("h200-sxm", 1, "eu-north1") in neb
    # A hyperscaler is regional: GCP's hand a3-ultragpu-8g us-central1 does not drop the v8 us-east4 row.
    assert any(o["provider"] == "GCP" and o["instance_type"] == "a3-ultragpu-8g" and o["region"] == "us-east4"
               for o in gen)
