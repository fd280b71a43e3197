"""How fast `gpuwiz catalog import skypilot` reads a big SkyPilot CSV, and how big the overlay is.

    .venv/bin/python bench/bench_import.py [--rows 100000] [--runs 3]

Builds a synthetic AWS-format vms.csv from the vendored real sample's GPU rows (tests/data/skypilot/
aws/vms.csv), repeated over AWS regions and availability zones with instance-type suffixes so every
(instance type, region) is a new offer, then times (1) parsing into offers and (2) writing the
overlay text, and (3) loading the overlay with the catalog (validation included) for the first
5,000 offers, as JSON (what the importer writes) and as YAML flow mappings (what a person writes).
Target (issue 13): 100k rows in <= 2 s for (1)+(2). Prints figures only.
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from gpuwiz.core import skypilot
from gpuwiz.core.catalog import _load_cached, load_catalog

SAMPLE = Path(__file__).resolve().parents[1] / "tests" / "data" / "skypilot" / "aws" / "vms.csv"


def synthetic(rows: int) -> str:
    reader = csv.reader(io.StringIO(SAMPLE.read_text(encoding="utf-8")))
    header = next(reader)
    gpu_rows = [r for r in reader if r[1] and r[6]]
    regions = list(skypilot.builtin_map()["clouds"]["aws"]["regions"])
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(header)
    n = 0
    k = 0
    while n < rows:
        for r in gpu_rows:
            for reg in regions:
                for az in ("a", "b", "c"):
                    row = list(r)
                    row[0] = f"{r[0]}-v{k}"
                    row[8], row[9] = reg, f"{reg}-{az}"
                    w.writerow(row)
                    n += 1
                    if n >= rows:
                        return out.getvalue()
        k += 1
    return out.getvalue()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    text = synthetic(a.rows)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"machine: {os.cpu_count()} CPUs, load average {load:.1f}")
    print(f"synthetic AWS vms.csv: {a.rows:,} rows, {len(text) / 1e6:.1f} MB")
    base = []
    for _ in range(a.runs):
        t0 = time.perf_counter()
        sum(1 for _ in csv.reader(io.StringIO(text)))
        base.append(time.perf_counter() - t0)
    print(f"baseline, csv.reader alone over the same text: median {statistics.median(base):.2f} s "
          "(how busy this machine is; the import cannot be faster than this)")
    parse_t, write_t = [], []
    res = None
    out = ""
    for _ in range(a.runs):
        t0 = time.perf_counter()
        res = skypilot.read_csv(text, "aws", "bench.csv", observed="2026-11", retrieved="2026-12")
        t1 = time.perf_counter()
        out = skypilot.overlay_text(res)
        t2 = time.perf_counter()
        parse_t.append(t1 - t0)
        write_t.append(t2 - t1)
    assert res is not None
    total = [p + w for p, w in zip(parse_t, write_t, strict=True)]
    print(f"parse: median {statistics.median(parse_t):.2f} s; "
          f"write overlay: median {statistics.median(write_t):.2f} s; "
          f"total median {statistics.median(total):.2f} s (target <= 2 s) over {a.runs} runs")
    each = len(out) / max(len(res.offers), 1)
    print(f"offers: {len(res.offers):,} ({len(out) / 1e6:.2f} MB of overlay, {each:.0f} bytes each); "
          f"bad rows: {len(res.problems)}")
    sub = skypilot.ImportResult(cloud="aws", offers=res.offers[:5000])
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "o.yaml"
        p.write_text(skypilot.overlay_text(sub), encoding="utf-8")
        load_catalog()
        t0 = time.perf_counter()
        cat = load_catalog(p)
        t1 = time.perf_counter()
        _load_cached.cache_clear()
    size_mb = len(skypilot.overlay_text(sub)) / 1e6
    print(f"load 5,000-offer overlay ({size_mb:.2f} MB, JSON as `catalog import` writes it) "
          f"with the catalog: {t1 - t0:.2f} s, {len(cat.cloud_instances):,} offers")
    # The same offers as a hand-written YAML overlay (flow mappings): the YAML reader's cost.
    flow = "cloud_instances:\n" + "\n".join(
        "- {" + ", ".join(f"{k}: {skypilot._scalar(v)}" for k, v in o.items()) + "}" for o in sub.offers) + "\n"
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "y.yaml"
        p.write_text(flow, encoding="utf-8")
        t0 = time.perf_counter()
        load_catalog(p)
        t1 = time.perf_counter()
        _load_cached.cache_clear()
    print(f"load the same 5,000 offers written as YAML ({len(flow) / 1e6:.2f} MB): {t1 - t0:.2f} s "
          "(first load of a file; later loads come from the on-disk cache)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
