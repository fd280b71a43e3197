"""Process start-up of the headless CLI against the `python -c "import pydantic, yaml"` floor.

Issue 16 targets: `gpuwiz estimate` <= 2.5x and `gpuwiz recommend` <= 2.8x the floor, in one run on one machine.
Timings are paired: each round runs every command once, in a rotated order (ABC, BCA, CAB, ...), so drift
in machine load hits all of them alike; the ratio is taken within each round and its median printed, beside
the ratio of the medians. CPU time (user + sys of the child) is printed too: on a shared machine it moves
less than wall time. Instruction counts come from valgrind (callgrind, one run each: they are deterministic)
where valgrind is installed (`perf stat -e instructions` is not supported in most containers); pass
--no-instructions to skip them.

gpuwiz runs from copies of its package in a temporary folder, one per place its bytecode comes from (STATES:
an installed wheel's __pycache__; a checkout under PYTHONDONTWRITEBYTECODE=1, served by gpuwiz's cache folder,
gpuwiz/_pyc.py; and such a checkout whose __pycache__ from an earlier run went stale), so what this checkout's
src/ happens to hold does not decide the figures. Each state has its own temporary GPUWIZ_CACHE_DIR (the
catalog cache, the bytecode entries, the generated-code table of gpuwiz/_codegen.py), warmed by two warm-up
runs, as it is for a user after their first run.

Usage: python bench/bench_cli.py [N] [--no-instructions]
"""

from __future__ import annotations

import argparse
import compileall
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from proc import instructions, paired, run_timed

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "examples" / "small-team-lora-7b.yaml"
PY = sys.executable
GPUWIZ = {
    "estimate": ["-m", "gpuwiz", "estimate", str(CONFIG), "--gpu", "a100-80gb-sxm", "--count", "8", "--format", "json"],
    "recommend": ["-m", "gpuwiz", "recommend", str(CONFIG), "--format", "json"],
}
# Where gpuwiz's bytecode comes from: each state runs its own copy of the package (PYTHONPATH), so what this
# checkout's src/ happens to hold (a __pycache__ an earlier run left, current or stale) does not decide it.
STATES = {
    "own": "bytecode beside the sources (an installed wheel)",
    "cache": "no bytecode beside the sources, PYTHONDONTWRITEBYTECODE=1: gpuwiz's cache folder (gpuwiz/_pyc.py)",
    "stale": "a __pycache__ gone stale for cli.py, core/recommend.py, core/cost.py (a pull since), "
             "PYTHONDONTWRITEBYTECODE=1",
}
EDITED = ("cli.py", "core/recommend.py", "core/cost.py")
TARGETS = {"estimate": 2.5, "recommend": 2.8}


def _package(root: Path, state: str) -> None:
    """A copy of the gpuwiz package (links followed: catalog.yaml, examples) in ``root``, in ``state``."""
    pkg = root / "gpuwiz"
    shutil.copytree(ROOT / "src" / "gpuwiz", pkg, ignore=shutil.ignore_patterns("__pycache__"))
    if state != "cache":
        compileall.compile_dir(str(pkg), quiet=1)
    if state == "stale":
        for name in EDITED:
            with open(pkg / name, "a", encoding="utf-8") as fh:
                fh.write("\n# edited after its bytecode was written\n")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("n", nargs="?", type=int, default=15, help="rounds (each runs every command once)")
    ap.add_argument("--no-instructions", action="store_true", help="skip the valgrind instruction counts")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="gpuwiz-bench-cli-") as tmp:
        commands: dict[str, tuple[list[str], dict[str, str]]] = {
            "floor": ([PY, "-c", "import pydantic, yaml"], dict(os.environ))}
        labels = {"floor": "python -c 'import pydantic, yaml'"}
        for state in STATES:
            root = Path(tmp) / state
            _package(root, state)
            env = {**os.environ, "PYTHONPATH": str(root), "GPUWIZ_CACHE_DIR": str(Path(tmp) / f"cache-{state}")}
            if state != "own":
                env["PYTHONDONTWRITEBYTECODE"] = "1"
            for cmd, argv in GPUWIZ.items():
                commands[f"{cmd}/{state}"] = ([PY, *argv], env)
                labels[f"{cmd}/{state}"] = f"gpuwiz {cmd} --format json [{state}]"
            if state == "own":
                commands["--help"] = ([PY, "-m", "gpuwiz", "--help"], env)
                labels["--help"] = "gpuwiz --help [own]"
        # the catalog cache keys a file changed within the last 2 s by its content, later by its stat
        # (catalog.file_stamp): past that, the warm-up writes the entry every timed run reads
        time.sleep(2.1)
        names = list(commands)
        for name in names:  # warm-up: page cache, bytecode, the catalog cache, the generated-code table
            run_timed(*commands[name])
            run_timed(*commands[name])
        runs = paired(lambda i: run_timed(*commands[names[i]]), len(names), args.n)
        wall = {name: [w for w, _c in rs] for name, rs in zip(names, runs, strict=True)}
        cpu = {name: [c for _w, c in rs] for name, rs in zip(names, runs, strict=True)}
        instr: dict[str, int | None] = {}
        if not args.no_instructions and shutil.which("valgrind"):
            instr = {name: instructions(*commands[name]) for name in names}

    print(f"{args.n} paired rounds, rotated order; python {sys.version.split()[0]}; {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f}. Where gpuwiz's bytecode comes from, [state]:")
    for state, what in STATES.items():
        print(f"  [{state}] {what}")
    print(f"\n{'command':42s} {'wall ms':>8s} {'cpu ms':>8s} {'x floor (paired wall)':>22s} {'x floor cpu':>12s}"
          f" {'instructions':>14s}")
    for name in names:
        w, c = wall[name], cpu[name]
        ratio = statistics.median(a / b for a, b in zip(w, wall["floor"], strict=True))
        cratio = statistics.median(c) / statistics.median(cpu["floor"])
        ins = instr.get(name)
        ins_txt = f"{ins / 1e6:11.0f} M" if ins else "-"
        if ins and instr.get("floor"):
            ins_txt += f" ({ins / instr['floor']:.2f}x)"  # type: ignore[operator]
        cmd = name.split("/")[0]
        target = f"  target <= {TARGETS[cmd]}x" if cmd in TARGETS else ""
        print(f"{labels[name]:42s} {statistics.median(w) * 1e3:8.1f} {statistics.median(c) * 1e3:8.1f} "
              f"{ratio:21.2f}x {cratio:11.2f}x {ins_txt:>14s}{target}")
    if not instr:
        print("\ninstruction counts skipped (--no-instructions, or valgrind not installed)")
    print("\n(the issue's third ratio, <= 0.5x llm-analysis for the same 7B estimate: bench/bench_vs_llm_analysis.py)")


if __name__ == "__main__":
    main()
