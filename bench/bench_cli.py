"""Process start-up of the headless CLI vs `python -c "import pydantic, yaml"` (target: <= 1.5x).

Prints medians over N runs; asserts nothing (timing targets live here, not in tests).
Usage: python bench/bench_cli.py [N]
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "examples" / "small-team-lora-7b.yaml"


def timed(cmd: list[str], n: int) -> float:
    samples = []
    for _ in range(n):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    py = sys.executable
    base = timed([py, "-c", "import pydantic, yaml"], n)
    est = timed([py, "-m", "gpuwiz", "estimate", str(CONFIG), "--gpu", "a100-80gb-sxm", "--count", "8",
                 "--format", "json"], n)
    rec = timed([py, "-m", "gpuwiz", "recommend", str(CONFIG), "--format", "json"], n)
    print(f"python -c 'import pydantic, yaml'   median {base * 1000:7.1f} ms")
    print(f"gpuwiz estimate --format json       median {est * 1000:7.1f} ms  ({est / base:.2f}x, target <= 1.5x)")
    print(f"gpuwiz recommend --format json      median {rec * 1000:7.1f} ms  ({rec / base:.2f}x)")


if __name__ == "__main__":
    main()
