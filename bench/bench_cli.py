"""Process start-up of the headless CLI against the `python -c "import pydantic, yaml"` floor.

Issue 16 targets: `gpuwiz estimate` <= 2.5x and `gpuwiz recommend` <= 2.8x the floor, in one run on one machine.
Timings are paired: each round runs every command once, in a rotated order (ABC, BCA, CAB, ...), so drift
in machine load hits all of them alike; the ratio is taken within each round and its median printed, beside
the ratio of the medians. CPU time (user + sys of the child) is printed too: on a shared machine it moves
less than wall time. Instruction counts come from valgrind (callgrind, one run each: they are deterministic)
where valgrind is installed (`perf stat -e instructions` is not supported in most containers); pass
--no-instructions to skip them. The catalog cache and the generated-code table (gpuwiz/_pyc.py) live in a
temporary GPUWIZ_CACHE_DIR, warmed by the warm-up round, as they are for a user after their first run.

Usage: python bench/bench_cli.py [N] [--no-instructions]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from proc import instructions, paired, run_timed

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "examples" / "small-team-lora-7b.yaml"
PY = sys.executable
COMMANDS: dict[str, list[str]] = {
    "floor": [PY, "-c", "import pydantic, yaml"],
    "estimate": [PY, "-m", "gpuwiz", "estimate", str(CONFIG), "--gpu", "a100-80gb-sxm", "--count", "8",
                 "--format", "json"],
    "recommend": [PY, "-m", "gpuwiz", "recommend", str(CONFIG), "--format", "json"],
    "--help": [PY, "-m", "gpuwiz", "--help"],
}
LABELS = {
    "floor": "python -c 'import pydantic, yaml'",
    "estimate": "gpuwiz estimate --format json",
    "recommend": "gpuwiz recommend --format json",
    "--help": "gpuwiz --help",
}
TARGETS = {"estimate": 2.5, "recommend": 2.8}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("n", nargs="?", type=int, default=15, help="rounds (each runs every command once)")
    ap.add_argument("--no-instructions", action="store_true", help="skip the valgrind instruction counts")
    args = ap.parse_args()
    names = list(COMMANDS)
    with tempfile.TemporaryDirectory(prefix="gpuwiz-bench-cache-") as cache_dir:
        env = {**os.environ, "GPUWIZ_CACHE_DIR": cache_dir}
        for name in names:  # warm-up: page cache, bytecode, the catalog cache
            run_timed(COMMANDS[name], env)
        runs = paired(lambda i: run_timed(COMMANDS[names[i]], env), len(names), args.n)
        wall = {name: [w for w, _c in rs] for name, rs in zip(names, runs, strict=True)}
        cpu = {name: [c for _w, c in rs] for name, rs in zip(names, runs, strict=True)}
        instr: dict[str, int | None] = {}
        if not args.no_instructions and shutil.which("valgrind"):
            instr = {name: instructions(COMMANDS[name], env) for name in names}

    print(f"{args.n} paired rounds, rotated order; python {sys.version.split()[0]}; {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f}; "
          f"PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', '')!r}"
          " (then gpuwiz's bytecode comes from its cache folder, gpuwiz/_pyc.py)\n")
    print(f"{'command':36s} {'wall ms':>8s} {'cpu ms':>8s} {'x floor (paired wall)':>22s} {'x floor cpu':>12s}"
          f" {'instructions':>14s}")
    for name in names:
        w, c = wall[name], cpu[name]
        ratio = statistics.median(a / b for a, b in zip(w, wall["floor"], strict=True))
        cratio = statistics.median(c) / statistics.median(cpu["floor"])
        ins = instr.get(name)
        ins_txt = f"{ins / 1e6:11.0f} M" if ins else "-"
        if ins and instr.get("floor"):
            ins_txt += f" ({ins / instr['floor']:.2f}x)"  # type: ignore[operator]
        target = f"  target <= {TARGETS[name]}x" if name in TARGETS else ""
        print(f"{LABELS[name]:36s} {statistics.median(w) * 1e3:8.1f} {statistics.median(c) * 1e3:8.1f} "
              f"{ratio:21.2f}x {cratio:11.2f}x {ins_txt:>14s}{target}")
    if not instr:
        print("\ninstruction counts skipped (--no-instructions, or valgrind not installed)")
    print("\n(the issue's third ratio, <= 0.5x llm-analysis for the same 7B estimate: bench/bench_vs_llm_analysis.py)")


if __name__ == "__main__":
    main()
