"""Benchmark the estimator: median time of estimate() and of the quick() fast path per preset model.

Run: .venv/bin/python bench/bench_estimate.py
Targets: estimate() median < 1 ms; ~1000 quick() candidates (GPU × count) in < 20 ms.
"""

from __future__ import annotations

import statistics
import time
from functools import partial

from gpuwiz.core.catalog import Catalog, load_catalog
from gpuwiz.core.estimate import estimate, prepare, quick
from gpuwiz.core.models import Requirements

COUNTS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


def _median(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def _sweep(req: Requirements, cat: Catalog, cands: list[tuple[str, int]]) -> None:
    c = prepare(req, cat)
    for g, n in cands:
        quick(c, g, n)


def main() -> None:
    cat = load_catalog()
    cands = [(g.id, n) for g in cat.gpus for n in COUNTS]
    print(f"{len(cat.models)} presets, {len(cands)} GPU x count candidates per sweep\n")
    print(f"{'preset':24} {'estimate() ms':>14} {'prepare() ms':>13} {'quick() us':>11} {'sweep ms':>9}")
    est_all, q_all, sweep_all = [], [], []
    for m in cat.models:
        req = Requirements.model_validate({"model": {"preset": m.id}, "data": {"tokens": 1e10, "samples": 1e6}})
        # partial binds this iteration's req / ctx (a closure over the loop variables would not)
        est = _median(partial(estimate, req, cat, "h100-sxm", 8), 200)
        prep = _median(partial(prepare, req, cat), 200)
        ctx = prepare(req, cat)
        q = _median(partial(quick, ctx, "h100-sxm", 64), 500)
        sw = _median(partial(_sweep, req, cat, cands), 20)
        est_all.append(est)
        q_all.append(q)
        sweep_all.append(sw / len(cands) * 1000)
        print(f"{m.id:24} {est * 1e3:14.3f} {prep * 1e3:13.3f} {q * 1e6:11.1f} {sw * 1e3:9.2f}")
    print(f"\nmedian estimate(): {statistics.median(est_all) * 1e3:.3f} ms")
    print(f"median quick():    {statistics.median(q_all) * 1e6:.1f} us")
    print(f"median 1000-candidate sweep (prepare + quick x 1000): {statistics.median(sweep_all) * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
