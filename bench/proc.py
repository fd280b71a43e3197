"""What the process benches share: one run's wall and CPU time, and its instruction count.

Imported by the bench scripts (``python bench/X.py`` puts this folder on ``sys.path``)."""

from __future__ import annotations

import re
import resource
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


def paired(measure: Callable[[int], T], k: int, rounds: int) -> list[list[T]]:
    """``rounds`` rounds of ``measure(i)`` for every case ``i < k``, each round in a rotated order (ABC,
    BCA, CAB, ...), so drift in the machine's speed hits every case alike and a ratio can be taken within
    each round. Returns, per case, its results by round."""
    out: list[list[T]] = [[] for _ in range(k)]
    for r in range(rounds):
        for j in range(k):
            i = (r + j) % k
            out[i].append(measure(i))
    return out


def run_timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, child CPU seconds) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def instructions(cmd: list[str], env: dict[str, str], cwd: Path | None = None) -> int | None:
    """Instructions one run executes, counted by valgrind (callgrind; deterministic), or None when
    valgrind fails. String hashing is seeded the same in every run (PYTHONHASHSEED=0, unless the caller
    set one): with random seeds the set and dict layouts change from process to process, and so does a
    cold recommend()'s count (by up to ~15 %, resnet50)."""
    env = {"PYTHONHASHSEED": "0", **env}
    out = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *cmd], cwd=cwd,
                         env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False)
    m = re.search(r"Collected\s*:\s*(\d+)", out.stderr)
    return int(m.group(1)) if out.returncode == 0 and m else None
