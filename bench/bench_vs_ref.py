"""This tree against an earlier commit, side by side in one run: is the engine slower than before?

Issues 11 and 12 ask that ``recommend()`` and ``gpuwiz recommend`` be no slower than before they
began (the end of round 1 is commit e0031dc, the default ``--ref``). The script checks that commit
out into a temporary worktree and, for every example config the two trees share, measures

- in-process ``recommend()``: CPU time (``time.process_time``) after one warm-up, the memo of this
  tree cleared before every run ("cold", as a config just opened). ``--rounds`` rounds, each a fresh
  interpreter per tree (which tree goes first alternates) running ``--repeat`` answers: the ratio is
  the median of the rounds' ratios (this tree's median / the earlier one's, both from the same
  round), printed with the lowest and highest round, so a minute of a slower machine moves one
  round, not the figure;
- the same, interleaved (``--pairs``): one interpreter per tree, kept running, the two answering one cold
  ``recommend()`` each in turn; the ratio of each pair, median and quartiles, and the ratio of the two
  trees' total CPU over all pairs and of their P10s. A pair is taken within milliseconds, where a round of
  whole processes spans seconds of a machine whose speed moves;
- in-process ``recommend()`` again, as instructions counted by valgrind (callgrind; deterministic,
  so load-independent): (a run of N cold answers - a run of none) / N, both after the same warm-up;
- ``gpuwiz recommend CONFIG --format json`` as a process: instructions counted by valgrind
  (callgrind; one run each) where valgrind is installed.

Both trees run on this checkout's virtual environment (same Python, pydantic, PyYAML), with bytecode
written as a normal install does (PYTHONDONTWRITEBYTECODE unset) and warmed by one run. Prints
figures only; the targets live in the issues, not in tests.

Usage: python bench/bench_vs_ref.py [--ref COMMIT] [--repeat N] [--rounds N] [--pairs N] [--no-instructions]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from proc import instructions

HERE = Path(__file__).resolve().parent.parent

# What the probes below share: the tree's engine, its catalog and the config (a tuple in the older tree)
SETUP = r"""
import json, sys, time
from gpuwiz.core.catalog import load_catalog
from gpuwiz.core.config_io import load_config
from gpuwiz.core.recommend import recommend
try:
    from gpuwiz.core import memo
    clear = memo.clear
except ImportError:  # the older tree has no memo
    clear = lambda: None
cat = load_catalog()
req = load_config(sys.argv[1])
req = req[0] if isinstance(req, tuple) else req
"""

PROBE = SETUP + r"""
recommend(req, cat)
out = []
for _ in range(int(sys.argv[2])):
    clear()
    c0 = time.process_time()
    recommend(req, cat)
    out.append((time.process_time() - c0) * 1000)
print(json.dumps(out))
"""

WORKER = SETUP + r"""
for _ in range(3):
    recommend(req, cat)
for _line in sys.stdin:
    clear()
    c0 = time.process_time()
    recommend(req, cat)
    print((time.process_time() - c0) * 1000, flush=True)
"""


def _interleaved(trees: tuple[Path, Path], caches: tuple[str, str], name: str,
                 pairs: int) -> tuple[list[float], list[float], list[float]]:
    """Per pair, this tree's CPU ms over the earlier one's (and each tree's CPU ms): one interpreter per tree,
    kept running, each answering one cold ``recommend()`` in turn (which goes first alternates), so the two
    answers of a pair are taken within milliseconds of each other. This machine runs whole seconds at a time
    ~1.6x slower (2026-12-07: one process's answers moved between 9 and 15 ms with nothing else running),
    which moves a round of whole processes, not a pair."""
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, str(tree / "examples" / name)], cwd=tree,
                              env=_env(tree, cache), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
             for tree, cache in zip(trees, caches, strict=True)]
    ratios: list[float] = []
    each: tuple[list[float], list[float]] = ([], [])
    try:
        for i in range(pairs):
            ms = [0.0, 0.0]
            for which in ((0, 1) if i % 2 == 0 else (1, 0)):
                p = procs[which]
                assert p.stdin is not None and p.stdout is not None
                p.stdin.write("\n")
                p.stdin.flush()
                ms[which] = float(p.stdout.readline())
            ratios.append(ms[1] / ms[0])
            each[0].append(ms[0])
            each[1].append(ms[1])
    finally:
        for p in procs:
            if p.stdin is not None:
                p.stdin.close()
            p.wait()
    return ratios, each[0], each[1]


def _env(tree: Path, cache: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(tree / "src")
    env["GPUWIZ_CACHE_DIR"] = cache
    return env


def _in_process(tree: Path, config: Path, repeat: int, cache: str) -> list[float]:
    out = subprocess.run([sys.executable, "-c", PROBE, str(config), str(repeat)], cwd=tree, env=_env(tree, cache),
                         capture_output=True, text=True, check=True)
    return [float(x) for x in json.loads(out.stdout.strip().splitlines()[-1])]


COLD_N = 3  # cold answers in the counted in-process run


def _in_process_instructions(tree: Path, config: Path, cache: str) -> float | None:
    """Instructions of one cold in-process recommend(): (PROBE with COLD_N runs - PROBE with none) / COLD_N."""
    def count(n: int) -> int | None:
        return instructions([sys.executable, "-c", PROBE, str(config), str(n)], _env(tree, cache), cwd=tree)

    base, runs = count(0), count(COLD_N)
    return (runs - base) / COLD_N if base and runs else None


def _instructions(tree: Path, config: Path, cache: str) -> int | None:
    cmd = [sys.executable, "-m", "gpuwiz", "recommend", str(config), "--format", "json"]
    subprocess.run(cmd, cwd=tree, env=_env(tree, cache), capture_output=True, check=False)  # warm bytecode, cache
    return instructions(cmd, _env(tree, cache), cwd=tree)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ref", default="e0031dc", help="the earlier commit (default: the end of round 1)")
    ap.add_argument("--repeat", type=int, default=7, help="answers per interpreter (default 7)")
    ap.add_argument("--rounds", type=int, default=8, help="paired rounds per example (default 8)")
    ap.add_argument("--pairs", type=int, default=150,
                    help="interleaved answer pairs per example (default 150; 0: skip)")
    ap.add_argument("--no-instructions", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="gpuwiz-ref-") as tmp:
        ref = Path(tmp) / "ref"
        subprocess.run(["git", "-C", str(HERE), "worktree", "add", "--detach", str(ref), args.ref],
                       check=True, capture_output=True)
        try:
            names = sorted(p.name for p in (ref / "examples").glob("*.yaml")
                           if (HERE / "examples" / p.name).exists())
            count = not args.no_instructions and shutil.which("valgrind") is not None
            print(f"this tree vs {args.ref}; python {sys.version.split()[0]}; {os.cpu_count()} CPUs, "
                  f"load average {os.getloadavg()[0]:.1f}")
            print(f"{'example':32s} {'recommend() CPU ms, median':>28s} {'ratio (rounds)':>18s}"
                  + (f" {'interleaved ratio (IQR)':>24s} {'of sums':>8s} {'of p10s':>8s}" if args.pairs > 0 else "")
                  + (f" {'recommend() instructions (M)':>30s} {'ratio':>6s}"
                     f" {'process instructions (M)':>26s} {'ratio':>6s}" if count else ""))
            for name in names:
                with tempfile.TemporaryDirectory() as c_old, tempfile.TemporaryDirectory() as c_new:
                    old: list[float] = []
                    new: list[float] = []
                    ratios: list[float] = []
                    for r in range(max(1, args.rounds)):  # paired rounds: drift in the machine's speed hits both
                        pair: dict[str, list[float]] = {}
                        for which in (("old", "new") if r % 2 == 0 else ("new", "old")):
                            tree, cache = (ref, c_old) if which == "old" else (HERE, c_new)
                            pair[which] = _in_process(tree, tree / "examples" / name, args.repeat, cache)
                        old += pair["old"]
                        new += pair["new"]
                        ratios.append(statistics.median(pair["new"]) / statistics.median(pair["old"]))
                    mo, mn = statistics.median(old), statistics.median(new)
                    line = (f"{name:32s} {mo:12.1f} -> {mn:8.1f} ms {statistics.median(ratios):6.2f} "
                            f"({min(ratios):.2f}-{max(ratios):.2f})")
                    if args.pairs > 0:
                        inter, i_old, i_new = _interleaved((ref, HERE), (c_old, c_new), name, args.pairs)
                        q = statistics.quantiles(inter, n=4)
                        # the median pair hides what the earlier tree pays on a few answers only (round 1's
                        # engine ran the cyclic collector inside some answers): the ratio of the two trees'
                        # total CPU counts it; the ratio of their P10s compares answers with no such pause
                        p10 = statistics.quantiles(i_new, n=10)[0] / statistics.quantiles(i_old, n=10)[0]
                        line += (f" {statistics.median(inter):11.2f} ({q[0]:.2f}-{q[2]:.2f})"
                                 f" {sum(i_new) / sum(i_old):8.2f} {p10:8.2f}")
                    if count:
                        po = _in_process_instructions(ref, ref / "examples" / name, c_old)
                        pn = _in_process_instructions(HERE, HERE / "examples" / name, c_new)
                        line += (f" {po / 1e6:16.1f} -> {pn / 1e6:8.1f} {pn / po:6.2f}" if po and pn
                                 else f" {'n/a':>30s} {'':6s}")
                        io = _instructions(ref, ref / "examples" / name, c_old)
                        inn = _instructions(HERE, HERE / "examples" / name, c_new)
                        if io and inn:
                            line += f" {io / 1e6:12.0f} -> {inn / 1e6:8.0f} {inn / io:6.2f}"
                    print(line)
            print(f"load average at the end {os.getloadavg()[0]:.1f}")
        finally:
            subprocess.run(["git", "-C", str(HERE), "worktree", "remove", "--force", str(ref)], capture_output=True)


if __name__ == "__main__":
    main()
