"""Benchmark the estimator: median time of estimate() and of the quick() fast path per preset model.

Run: .venv/bin/python bench/bench_estimate.py [--calls-only] [--instructions]
Targets: estimate() median < 1 ms; ~1000 quick() candidates (GPU × count) in < 20 ms.

``--instructions`` (valgrind installed; slow, ~1 min per example): the same replay's cost in instructions per
call, counted by callgrind (deterministic, unlike CPU time on a shared machine): a process that replays the
calls 3 times on fresh contexts less one that replays them 0 times, over 3 × the calls. Every replay process
first runs the calls once on a context of its own, so the catalog's own tables (rates, GPU factors, operator
times) are warm, as they are for a recommend() after the first.

The second table replays, per example config, the fast-path calls recommend() makes (``quick`` for every
candidate it sizes, ``wall_hours_high`` for those that fit, ``estimate_from`` for the finalists) on a fresh
context each run -- a config just opened, its lookup tables empty -- and prints the CPU time
(``time.process_time``) per call: median and min of the runs (issue 16 asks the per-call cost down).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any

from gpuwiz.core import estimate as est_mod
from gpuwiz.core import memo
from gpuwiz.core.catalog import Catalog, load_catalog
from gpuwiz.core.config_io import load_config
from gpuwiz.core.estimate import estimate, prepare, quick
from gpuwiz.core.models import Requirements
from gpuwiz.core.recommend import recommend

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

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


def _recorded(req: Requirements, cat: Catalog) -> tuple[list[tuple[Any, int, Any, bool]], list[tuple[Any, int, Any]]]:
    """The (GPU, count, GPUs per node[, time_misfit]) of every quick() and estimate_from() call one cold
    recommend() makes."""
    calls: list[tuple[Any, int, Any, bool]] = []
    full: list[tuple[Any, int, Any]] = []
    q0, f0 = est_mod.quick, est_mod.estimate_from

    def q(ctx: Any, g: Any, n: int, gpn: Any = None, time_misfit: bool = True) -> Any:
        calls.append((g, n, gpn, time_misfit))
        return q0(ctx, g, n, gpn, time_misfit=time_misfit)

    def f(ctx: Any, g: Any, n: int, gpn: Any = None) -> Any:
        full.append((g, n, gpn))
        return f0(ctx, g, n, gpn)

    est_mod.quick, est_mod.estimate_from = q, f  # type: ignore[assignment]
    try:
        memo.clear()
        recommend(req, cat)
    finally:
        est_mod.quick, est_mod.estimate_from = q0, f0  # type: ignore[assignment]
    return calls, full


def recommend_calls(cat: Catalog, repeat: int = 21) -> None:
    print(f"{'example':28} {'quick calls':>11} {'quick us/call med':>17} {'min':>6} {'warm':>6} "
          f"{'wall_hours_high us':>19} {'estimate_from us':>17}")
    for path in sorted(EXAMPLES.glob("*.yaml")):
        loaded = load_config(path)
        req = loaded[0] if isinstance(loaded, tuple) else loaded
        calls, full = _recorded(req, cat)
        cold, warm, high, fin = [], [], [], []
        for _ in range(repeat):
            ctx = prepare(req, cat)
            c0 = time.process_time()
            rs = [quick(ctx, g, n, gpn, time_misfit=tm) for g, n, gpn, tm in calls]
            c1 = time.process_time()
            for r in rs:
                if r.fits:
                    est_mod.wall_hours_high(ctx, r)
            c2 = time.process_time()
            for g, n, gpn in full:
                est_mod.estimate_from(ctx, g, n, gpn)
            c3 = time.process_time()
            for g, n, gpn, tm in calls:  # the same calls again: every table filled
                quick(ctx, g, n, gpn, time_misfit=tm)
            c4 = time.process_time()
            cold.append((c1 - c0) / len(calls) * 1e6)
            high.append((c2 - c1) / max(1, sum(r.fits for r in rs)) * 1e6)
            fin.append((c3 - c2) / max(1, len(full)) * 1e6)
            warm.append((c4 - c3) / len(calls) * 1e6)
        print(f"{path.stem:28} {len(calls):11d} {statistics.median(cold):17.1f} {min(cold):6.1f} "
              f"{statistics.median(warm):6.1f} {statistics.median(high):19.1f} {statistics.median(fin):17.1f}")


def _replay(cat: Catalog, name: str, k: int) -> int:
    """Replay one example's recorded calls ``k`` times on fresh contexts (after one warm-up context); the count."""
    loaded = load_config(EXAMPLES / f"{name}.yaml")
    req = loaded[0] if isinstance(loaded, tuple) else loaded
    calls, _full = _recorded(req, cat)
    for i in range(k + 1):  # the first: warm-up
        ctx = prepare(req, cat)
        rs = [quick(ctx, g, n, gpn, time_misfit=tm) for g, n, gpn, tm in calls]
        if i:
            for r in rs:
                if r.fits:
                    est_mod.wall_hours_high(ctx, r)
    return len(calls)


def recommend_instructions() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from proc import instructions

    env = dict(os.environ)
    me = [sys.executable, str(Path(__file__).resolve())]
    print(f"{'example':28} {'quick calls':>11} {'instructions per call (quick + wall_hours_high, fresh context)':>64}")
    for path in sorted(EXAMPLES.glob("*.yaml")):
        n = int(subprocess.run([*me, "--replay", path.stem, "0"], capture_output=True, text=True, check=True,
                               env=env).stdout)
        a = instructions([*me, "--replay", path.stem, "0"], env)
        b = instructions([*me, "--replay", path.stem, "3"], env)
        per = f"{(b - a) / 3 / n:64,.0f}" if a is not None and b is not None else f"{'(valgrind failed)':>64}"
        print(f"{path.stem:28} {n:11d} {per}", flush=True)


def main() -> None:
    if "--replay" in sys.argv:  # (the --instructions child)
        i = sys.argv.index("--replay")
        print(_replay(load_catalog(), sys.argv[i + 1], int(sys.argv[i + 2])))
        return
    if "--instructions" in sys.argv:
        recommend_instructions()
        return
    cat = load_catalog()
    if "--calls-only" in sys.argv:
        recommend_calls(cat)
        return
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
    print("\nper call, over the calls one cold recommend() makes (CPU time, fresh context per run):")
    recommend_calls(cat)


if __name__ == "__main__":
    main()
