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
