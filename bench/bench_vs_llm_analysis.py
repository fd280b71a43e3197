"""The same 7B training estimate, as a process, with gpuwiz and with llm-analysis (issue 16: gpuwiz <= 0.5x).

Llama 2 7B, full fine-tune in bf16, 1B tokens of 4,096-token sequences, global batch 256, on 8x A100
SXM 80GB: `gpuwiz estimate` (warm catalog cache, as after a user's first run) against
`python -m llm_analysis.analysis train` with the same model, GPU, data, batch, ZeRO-3 and full
recomputation (llm-analysis 0.2.2 from PyPI; it needs transformers, not PyTorch). Both answer with
JSON on stdout. Paired rounds in alternating order, so machine-load drift hits both alike; the ratio
is taken per round and its median printed, with child CPU time and (where valgrind is installed) the
instruction counts of one run each.

llm-analysis lives in its own virtual environment (its pins clash with gpuwiz's):
    python3 -m venv /tmp/llma-venv && /tmp/llma-venv/bin/pip install llm-analysis
    .venv/bin/python bench/bench_vs_llm_analysis.py --llm-analysis-python /tmp/llma-venv/bin/python [N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from proc import instructions, run_timed

CONFIG = """\
version: 1
model: {preset: llama-2-7b, seq_len: 4096}
training: {method: full, precision: bf16, global_batch: 256}
data: {tokens: 1e9}
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("n", nargs="?", type=int, default=10, help="paired rounds")
    ap.add_argument("--llm-analysis-python", default=os.environ.get("LLM_ANALYSIS_PYTHON"),
                    help="the python of a virtual environment with llm-analysis installed")
    ap.add_argument("--no-instructions", action="store_true")
    args = ap.parse_args()
    other = args.llm_analysis_python
    if not other or subprocess.run([other, "-c", "import llm_analysis"], capture_output=True).returncode != 0:
        print("llm-analysis is not installed for the given python (--llm-analysis-python); nothing measured")
        return
    with tempfile.TemporaryDirectory(prefix="gpuwiz-bench-") as tmp:
        cfg = Path(tmp) / "llama2-7b-full.yaml"
        cfg.write_text(CONFIG, encoding="utf-8")
        env = {**os.environ, "GPUWIZ_CACHE_DIR": str(Path(tmp) / "cache"), "TRANSFORMERS_OFFLINE": "1",
               "HF_HUB_OFFLINE": "1"}
        cmds = {
            "gpuwiz": [sys.executable, "-m", "gpuwiz", "estimate", str(cfg), "--gpu", "a100-80gb-sxm", "--count", "8",
                       "--format", "json"],
            "llm-analysis": [other, "-m", "llm_analysis.analysis", "train",
                             "--model_name", "NousResearch_Llama-2-7b-hf",
                             "--gpu_name", "a100-sxm-80gb", "--dtype_name", "w16a16e16", "--seq_len", "4096",
                             "--total_num_tokens", "1000000000", "--global_batch_size", "256",
                             "--batch_size_per_gpu", "1", "--dp_size", "8", "--ds_zero", "3",
                             "--activation_recomputation", "2", "--flops_efficiency", "0.5", "--log_level", "ERROR",
                             "--output_dir", tmp],
        }
        for cmd in cmds.values():  # warm-up: page cache, bytecode, gpuwiz's catalog cache
            run_timed(cmd, env)
        wall: dict[str, list[float]] = {k: [] for k in cmds}
        cpu: dict[str, list[float]] = {k: [] for k in cmds}
        names = list(cmds)
        for r in range(args.n):
            for name in names if r % 2 == 0 else names[::-1]:
                w, c = run_timed(cmds[name], env)
                wall[name].append(w)
                cpu[name].append(c)
        instr = {}
        if not args.no_instructions and shutil.which("valgrind"):
            instr = {k: instructions(cmd, env) for k, cmd in cmds.items()}
    print(f"{args.n} paired rounds, alternating order; {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}\n")
    print(f"{'command':14s} {'wall ms':>8s} {'cpu ms':>8s} {'instructions':>14s}")
    for name in names:
        ins = instr.get(name)
        print(f"{name:14s} {statistics.median(wall[name]) * 1e3:8.1f} {statistics.median(cpu[name]) * 1e3:8.1f} "
              f"{(f'{ins / 1e6:.0f} M') if ins else '-':>14s}")
    paired = statistics.median(a / b for a, b in zip(wall["gpuwiz"], wall["llm-analysis"], strict=True))
    cratio = statistics.median(cpu["gpuwiz"]) / statistics.median(cpu["llm-analysis"])
    line = f"\ngpuwiz / llm-analysis: {paired:.2f}x wall (paired median), {cratio:.2f}x CPU"
    if instr.get("gpuwiz") and instr.get("llm-analysis"):
        line += f", {instr['gpuwiz'] / instr['llm-analysis']:.2f}x instructions"  # type: ignore[operator]
    print(line + "   (target <= 0.5x)")


if __name__ == "__main__":
    main()
