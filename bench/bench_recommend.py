"""In-process wall time of recommend(), reported for EACH case separately: every example config and a
"nothing fits" case (405B full fine-tune on a desk). Also the catalog load time, cold and from the cache.

Issue 16 targets: median <= 5 ms and max <= 15 ms over the examples; <= 25 ms when nothing fits;
catalog load from the cache <= 2 ms. Prints figures only (timing targets live here, not in tests).

Run: .venv/bin/python bench/bench_recommend.py [--repeat N]
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from gpuwiz.core import catalog as catmod
from gpuwiz.core.catalog import Catalog, load_catalog
from gpuwiz.core.config_io import load_config
from gpuwiz.core.models import Requirements
from gpuwiz.core.recommend import recommend

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
NOTHING_FITS = {"model": {"preset": "llama-3.1-405b"}, "training": {"method": "full"},
                "data": {"tokens": 1e9}, "deployment": {"site": "desk"}}


def _ms(fn: Callable[[], object], repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1000)
    return out


def _p95(xs: list[float]) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, math.ceil(0.95 * len(s)) - 1)]


def _row(name: str, xs: list[float], extra: str = "") -> None:
    print(f"{name:34s} median {statistics.median(xs):7.2f}   p95 {_p95(xs):7.2f}   max {max(xs):7.2f} ms{extra}")


def _catalog_load(repeat: int) -> None:
    def cold() -> Catalog:
        catmod._load_cached.cache_clear()
        catmod._builtin_raw.cache_clear()
        with tempfile.TemporaryDirectory() as empty:
            os.environ["GPUWIZ_CACHE_DIR"] = empty
            return load_catalog()

    def from_disk() -> Catalog:
        catmod._load_cached.cache_clear()  # a new process: only the file on disk is left
        return load_catalog()

    saved = os.environ.get("GPUWIZ_CACHE_DIR")
    try:
        cold_ms = _ms(cold, max(3, repeat // 10))
        with tempfile.TemporaryDirectory() as folder:
            os.environ["GPUWIZ_CACHE_DIR"] = folder
            load_catalog()  # write the entry
            hit_ms = _ms(from_disk, repeat)
            probe = ("import time; from gpuwiz.core.catalog import load_catalog; t = time.perf_counter(); "
                     "load_catalog(); print((time.perf_counter() - t) * 1000)")
            new_proc = [float(subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True,
                                             text=True).stdout) for _ in range(max(5, repeat // 3))]
    finally:
        if saved is None:
            os.environ.pop("GPUWIZ_CACHE_DIR", None)
        else:
            os.environ["GPUWIZ_CACHE_DIR"] = saved
        catmod._load_cached.cache_clear()
    _row("load_catalog() no cache (YAML)", cold_ms)
    _row("load_catalog() from disk cache", hit_ms, "   (target <= 2 ms)")
    _row("  same, first call in a new process", new_proc, "   (+ digest of catalog.yaml and the schema source)")
    _row("load_catalog() in-process hit", _ms(load_catalog, repeat))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=30)
    args = ap.parse_args()
    print(f"python {sys.version.split()[0]}, {args.repeat} runs per case after one warm-up; times in ms\n")
    _catalog_load(args.repeat)
    print()
    cat = load_catalog()
    cases: list[tuple[str, Requirements]] = [(p.name, load_config(p)) for p in sorted(EXAMPLES.glob("*.yaml"))]
    medians, maxima = [], []
    for name, req in cases:
        recommend(req, cat)  # warm caches
        xs = _ms(partial(recommend, req, cat), args.repeat)
        medians.append(statistics.median(xs))
        maxima.append(max(xs))
        _row(name, xs)
    nothing = Requirements.model_validate(NOTHING_FITS)
    rec = recommend(nothing, cat)
    assert not rec.found, "the nothing-fits case found a build; pick a bigger model"
    nf = _ms(partial(recommend, nothing, cat), args.repeat)
    _row("nothing fits (405B full, desk)", nf, "   (target <= 25 ms)")
    print(f"\nslowest example median {max(medians):.2f} ms (target <= 5 ms); "
          f"worst single run over the examples {max(maxima):.2f} ms (target <= 15 ms)")


if __name__ == "__main__":
    main()
