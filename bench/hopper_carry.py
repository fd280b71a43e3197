"""Would measured hardware rates alone carry A100 efficiency to H100? Prints the held-out Hopper figures.

Issue 11 (Hopper group): today the Hopper generation has its own base efficiency (EfficiencyParams
base_by_arch['hopper'], set on the published H100 runs) and H100 SXM is its own reference GPU, so the
catalog's measured H100 rates (perf: hopper) never touch an H100 estimate. This script makes the A100-80GB
SXM the Hopper reference (a catalog overlay) and gives Hopper the Ampere base, so that an H100 estimate is
the A100 one carried by the operator model's ratio of achieved GEMM / attention / HBM rates, then runs the
same leave-one-source-out harness as `gpuwiz validate` and prints the Hopper rows of both variants.

    .venv/bin/python bench/hopper_carry.py
"""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path

from gpuwiz.core.catalog import load_catalog
from gpuwiz.core.compute import EFF
from gpuwiz.validation.harness import load_data, map_all
from gpuwiz.validation.loso import loso, summaries

OVERLAY = ("perf:\n- id: hopper\n  reference_gpu: a100-80gb-sxm\n"
           "  source: 'bench/hopper_carry.py experiment'\n  as_of: '2026-12-01'\n")


def run(label: str, overlay: str | None, hopper_base: float | None) -> None:
    with tempfile.TemporaryDirectory() as d:
        path = None
        if overlay:
            path = Path(d) / "overlay.yaml"
            path.write_text(overlay, encoding="utf-8")
        catalog = load_catalog(path)
        eff = EFF if hopper_base is None else replace(EFF, base_by_arch={**EFF.base_by_arch, "hopper": hopper_base})
        cases, _ = map_all(load_data(), catalog)
        res = loso(cases, catalog, eff=eff)
    sm = summaries(res)
    big = [f for f in res.folds if f.n > 40 and "hopper" in f.scales]
    rest = sorted({f.scales["hopper"] for f in res.folds if f.n <= 40 and "hopper" in f.scales})
    for s in sm["generation"]:
        if s.group == "hopper":
            print(f"{label:<42} hopper n={s.n} held-out median {s.median:.1%} p90 {s.p90:.1%} "
                  f"bias {s.bias:+.1%} (naive: docs/VALIDATION.md)")
    for f in big:
        print(f"{'':<42} fold holding out {f.source[:40]} ({f.n}): hopper scale {f.scales.get('hopper')}")
    print(f"{'':<42} hopper scale in the other folds: {rest}")
    tot = [s for s in sm["kind"] if s.group.startswith("throughput +")]
    for s in tot:
        print(f"{'':<42} all time-like n={s.n} median {s.median:.1%} p90 {s.p90:.1%}")


def main() -> None:
    run("hopper base 0.49, H100 its own reference", None, None)
    run("A100 reference, ampere base, measured rates", OVERLAY, EFF.base_by_arch["ampere"])


if __name__ == "__main__":
    main()
