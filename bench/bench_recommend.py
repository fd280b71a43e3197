"""Median wall time of recommend() over the example configs (target < 20 ms each).

Run: .venv/bin/python bench/bench_recommend.py [--repeat N]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from gpuwiz.core.catalog import load_catalog
from gpuwiz.core.config_io import load_config
from gpuwiz.core.recommend import recommend

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=30)
    args = ap.parse_args()
    cat = load_catalog()
    all_times: list[float] = []
    for path in sorted(EXAMPLES.glob("*.yaml")):
        req = load_config(path)
        recommend(req, cat)  # warm caches
        times = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            recommend(req, cat)
            times.append((time.perf_counter() - t0) * 1000)
        all_times += times
        print(f"{path.name:40s} median {statistics.median(times):7.2f} ms   max {max(times):7.2f} ms")
    print(f"{'all examples':40s} median {statistics.median(all_times):7.2f} ms   (target < 20 ms)")


if __name__ == "__main__":
    main()
