"""Benchmark `gpuwiz calibrate`'s log reading: MB/s and peak Python memory on a synthetic torchtitan log,
and the time to generate every launch target for every example config.

Run: .venv/bin/python bench/bench_calibrate.py [MB]   (default 50 MB of log)
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

from gpuwiz.calibrate.logs import read_log
from gpuwiz.core.catalog import load_catalog
from gpuwiz.core.config_io import load_config
from gpuwiz.core.recommend import recommend
from gpuwiz.launch import TARGETS, generate, job_from, refusal

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def bench_log(mb: float) -> None:
    line = ("[rank0]:[titan] 2025-06-10 10:01:00,000 - root - INFO - step: {i}  loss:  7.9123  "
            "memory: 49.31GiB(62.31%)  tps: 6,934  tflops: 401.58  mfu: 40.60%\n")
    with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as fh:
        i = 0
        while fh.tell() < mb * 1e6:
            i += 1
            fh.write(line.format(i=i))
        path = fh.name
    try:
        size = os.path.getsize(path)
        t = time.perf_counter()
        m = read_log(path)
        dt = time.perf_counter() - t
        tracemalloc.start()  # a second pass for the memory figure (tracing slows reading down)
        read_log(path)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        print(f"calibrate: {size / 1e6:.0f} MB torchtitan log, {m.logged:,} steps: {dt:.1f} s "
              f"({size / 1e6 / dt:.0f} MB/s), peak traced memory {peak / 1e6:.1f} MB, {len(m.points):,} points kept")
    finally:
        os.unlink(path)


def bench_launch() -> None:
    cat = load_catalog()
    for path in sorted(EXAMPLES.glob("*.yaml")):
        req = load_config(path, catalog=cat)
        job = job_from(req, recommend(req, cat), cat, path.name)
        t = time.perf_counter()
        n = 0
        for target in TARGETS:
            if refusal(target, job) is None:
                n += len(generate(target, job))
        print(f"launch: {path.name}: {n} files for {len(TARGETS)} targets in {(time.perf_counter() - t) * 1000:.1f} ms")


if __name__ == "__main__":
    bench_log(float(sys.argv[1]) if len(sys.argv) > 1 else 50.0)
    bench_launch()
