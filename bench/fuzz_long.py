"""Long fuzzing run: the targets of tests/robustness/test_fuzz.py, and the expert checks on random configs
(tests/scenarios/test_expert_random.py), with many more (random) examples,
plus the hostile-input timings that tests may not assert (99,000 unknown keys, a 1 MB overlay, FIFOs,
a ~110 MB training log streamed by `gpuwiz calibrate`).

Prints examples and seconds per target; exits non-zero if any target failed (hypothesis prints the
falsifying example -- add it to the test file as an ``@example`` regression case).

Usage: python bench/fuzz_long.py [SCALE]    (SCALE multiplies the long budgets; default 1 = ~30 min
on one core; 0.05 is a 2-minute smoke run)
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGETS = ["robustness/test_fuzz.py::" + t for t in ("test_fuzz_config_text", "test_fuzz_config_structured",
                                                     "test_fuzz_overlay", "test_fuzz_hf_config", "test_fuzz_recommend")]
TARGETS.append("scenarios/test_expert_random.py::test_random_configs_get_answers_an_expert_would_sign")


def timed_cli(label: str, args: list[str]) -> None:
    t0 = time.perf_counter()
    res = subprocess.run([sys.executable, "-m", "gpuwiz", *args], capture_output=True, text=True)
    dt = time.perf_counter() - t0
    lines = res.stderr.splitlines()
    print(f"{label:<44} {dt:6.2f} s  exit {res.returncode}, {len(lines)} line(s) on stderr"
          + (f": {lines[0][:100]}" if lines else ""))


def main() -> int:
    scale = sys.argv[1] if len(sys.argv) > 1 else "1"
    env = {**os.environ, "GPUWIZ_FUZZ": "long", "GPUWIZ_FUZZ_SCALE": scale}
    failed = 0
    for target in TARGETS:
        t0 = time.perf_counter()
        # (-n 0: one process -- pyproject's addopts pass -n to xdist, so xdist must stay loaded)
        res = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider",
                              "--hypothesis-show-statistics", f"tests/{target}"],
                             cwd=ROOT, env=env, capture_output=True, text=True)
        dt = time.perf_counter() - t0
        stats = [ln.strip(" -*") for ln in res.stdout.splitlines()
                 if "passing" in ln or "accepted" in ln or "refused" in ln]
        name = target.rsplit("::", 1)[1][:40]
        print(f"{name:<40} {dt:8.1f} s  {'ok' if res.returncode == 0 else 'FAILED'}  " + "; ".join(stats))
        if res.returncode != 0:
            failed += 1
            print(res.stdout[-4000:] + res.stderr[-2000:])
    with tempfile.TemporaryDirectory() as tmp:
        keys = Path(tmp) / "keys.yaml"
        keys.write_text("version: 1\nmodel:\n  preset: llama-2-7b\n" + "".join(f"k{i}: 1\n" for i in range(99_000)))
        timed_cli("99,000 unknown keys (0.98 MB config)", ["recommend", str(keys)])
        over = Path(tmp) / "over.yaml"
        over.write_text("network:\n" + "".join(
            f"  - {{id: n{i}, name: N, kind: ethernet, gbps: 10, rdma: false, nic_price_usd: 1, source: s, "
            f"as_of: '2025'}}\n" for i in range(12_000)))
        good = Path(tmp) / "good.yaml"
        good.write_text("version: 1\nmodel:\n  preset: llama-2-7b\ndata:\n  tokens: 1B\n")
        size = over.stat().st_size / 1e6
        timed_cli(f"overlay of 12,000 entries ({size:.1f} MB)", ["catalog", "--catalog", str(over)])
        fifo = Path(tmp) / "fifo.yaml"
        os.mkfifo(fifo)
        timed_cli("a FIFO as the config", ["recommend", str(fifo)])
        timed_cli("a FIFO as a training log", ["calibrate", str(fifo)])
        log = Path(tmp) / "big.log"  # a long run's log: streamed line by line, never held whole
        line = "[rank0]: step: {}  loss: 2.1  memory: 61.2GiB(77.3%)  tps: 6,543  tflops: 303.1  mfu: 30.7%\n"
        with open(log, "w", encoding="utf-8") as fh:
            for i in range(1, 1_200_001):
                fh.write(line.format(i))
        timed_cli(f"torchtitan log of {log.stat().st_size / 1e6:.0f} MB (1.2 M steps)", ["calibrate", str(log)])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
