"""Training-log readers: the format is detected, warm-up steps are skipped, the rest summarised.

Formats (each as the stack prints it; fixtures in tests/data/logs/):

* ``hf-trainer``   Hugging Face Trainer: ``trainer_state.json`` or the printed dicts (``{'loss': ...}``,
                   the final ``{'train_runtime': ..., 'train_samples_per_second': ...}``)
* ``jsonl``        one JSON object per line (accelerate / custom loggers) with throughput keys
* ``torchtitan``   ``step: 10  loss: 7.9  memory: 35.5GiB(44.9%)  tps: 6,543  tflops: 303  mfu: 30.7%``
* ``megatron``     Megatron-LM ``iteration 10/ 500 | ... elapsed time per iteration (ms): 1234.5 | ...``
* ``nemo``         NeMo / Lightning progress with ``train_step_timing in s=1.23``
* ``lightning``    PyTorch Lightning progress bar ``Epoch 0:  45%|...| 450/1000 [01:30<01:50, 5.00it/s, ...]``
* ``deepspeed``    DeepSpeed's throughput timer ``RunningAvgSamplesPerSec=..., CurrSamplesPerSec=...,
                   MaxMemAllocated=..GB``
* ``nvidia-smi``   ``nvidia-smi --query-gpu=... --format=csv`` samples (memory, GPU name and count)
* ``dcgm``         ``dcgmi dmon -e 252,...`` samples (frame-buffer use per GPU)

Reading is streaming and bounded: lines over ``MAX_LINE`` bytes, binary files, FIFOs and devices are
one-line errors; at most ``MAX_POINTS`` step records are kept (evenly thinned past that).
"""

from __future__ import annotations

import ast
import json
import math
import os
import re
import statistics
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime

from gpuwiz.core.errors import GpuwizError, printable
from gpuwiz.core.yamlio import iter_file_chunks, open_regular, read_file_bytes

MAX_LINE = 1 << 20  # 1 MiB
MAX_JSON_BYTES = 64 << 20  # trainer_state.json is read whole
MAX_LOG_BYTES = 4 << 30  # a month of 1 s nvidia-smi samples on 8 GPUs is ~2 GB; streamed, never held
MAX_POINTS = 100_000
CHUNK = 1 << 16
DEFAULT_WARMUP_STEPS = 10
MIB_PER_GIB = 1024.0
GB_TO_GIB = 1e9 / 2**30

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_TIME = re.compile(r"(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2})")
_NUM = r"([0-9][0-9,]*(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)"


def _f(text: str) -> float:
    return float(text.replace(",", ""))


@dataclass
class Point:
    step: int
    step_time_s: float | None = None
    tokens_per_s_per_gpu: float | None = None
    samples_per_s_total: float | None = None
    samples_per_s_per_gpu: float | None = None
    tokens_per_s_total: float | None = None
    tflops_per_gpu: float | None = None
    mfu: float | None = None
    steps_per_s: float | None = None


@dataclass
class Measurement:
    format: str
    points: list[Point] = field(default_factory=list)  # after warm-up
    logged: int = 0  # step records seen
    skipped: int = 0  # warm-up records dropped
    peak_memory_gib: float | None = None
    gpu_name: str | None = None
    count: int | None = None  # GPUs the run used, when the log says
    global_batch: int | None = None
    micro_batch: int | None = None
    seq_len: int | None = None
    last_time: str | None = None
    whole_run: bool = False  # figures are the run's summary (warm-up included)
    notes: list[str] = field(default_factory=list)

    def median(self, attr: str) -> float | None:
        vals = [v for v in (_get(p, attr) for p in self.points) if v is not None]
        return statistics.median(vals) if vals else None


def _get(p: Point, attr: str) -> float | None:
    table = {
        "step_time_s": p.step_time_s, "tokens_per_s_per_gpu": p.tokens_per_s_per_gpu,
        "samples_per_s_total": p.samples_per_s_total, "samples_per_s_per_gpu": p.samples_per_s_per_gpu,
        "tokens_per_s_total": p.tokens_per_s_total, "tflops_per_gpu": p.tflops_per_gpu, "mfu": p.mfu,
        "steps_per_s": p.steps_per_s,
    }
    return table[attr]


# ---- bounded input --------------------------------------------------------------------------------


def _open_checked(path: str) -> int:
    """The size of ``path`` after the one safe open (regular files only; a FIFO never blocks)."""
    fd = open_regular(path, what="log file")
    try:
        return os.fstat(fd).st_size
    finally:
        os.close(fd)


def iter_lines(path: str) -> Iterator[tuple[int, str]]:
    """(line number, text) for each line; ``\\r`` (progress bars) also ends a line.

    Streams through gpuwiz's one safe reader (regular files only, opened without blocking, at most
    MAX_LOG_BYTES); a NUL in the first 64 KiB means a binary file; bytes that are not UTF-8 are
    replaced (a log is read for numbers, not echoed back whole)."""
    buf = b""
    lineno = 0
    first = True
    for chunk in iter_file_chunks(path, max_bytes=MAX_LOG_BYTES, chunk_bytes=CHUNK, what="log file"):
        if first:
            if chunk.startswith((b"\xff\xfe", b"\xfe\xff")):  # PowerShell's Tee-Object / `>` write UTF-16
                raise GpuwizError(f"{printable(path)}: is UTF-16 text; gpuwiz reads UTF-8 logs (convert it first, "
                                  "e.g. iconv -f UTF-16 -t UTF-8)")
            if b"\x00" in chunk:
                raise GpuwizError(f"{printable(path)}: looks like a binary file, not a text log")
            first = False
        buf += chunk
        parts = re.split(rb"\r\n|\n|\r", buf)
        buf = parts.pop()
        for part in parts:
            lineno += 1
            yield lineno, part.decode("utf-8", errors="replace")
        if len(buf) > MAX_LINE:
            raise GpuwizError(f"{printable(path)}:{lineno + 1}: line is over {MAX_LINE >> 20} MiB; not a training log")
    if buf:
        yield lineno + 1, buf.decode("utf-8", errors="replace")


def _read_json(path: str) -> object:
    """trainer_state.json, whole, through the safe reader; ValueError when it is not JSON."""
    raw = read_file_bytes(path, max_bytes=MAX_JSON_BYTES, what="trainer_state.json")
    try:
        return json.loads(raw.decode("utf-8", errors="replace"))
    except RecursionError:
        raise ValueError("nested too deeply") from None


# ---- detection --------------------------------------------------------------------------------------

_TT = re.compile(r"\bstep:\s*\d+\s.*?\bloss:.*?\b(?:tps|wps):\s*[0-9]")  # detection only
_TT_KV = re.compile(r"\b(step|loss|memory|tps|wps|tflops|mfu):\s*" + _NUM)
_TT_MESH = re.compile(r"Building \d+-D device mesh with \[[^\]]*\], \[([\d, ]+)\]")
_MEG = re.compile(r"\biteration\s+(\d+)\s*/\s*\d+\s*\|.*?elapsed time per iteration \(ms\):\s*" + _NUM)
_MEG_TFLOPS = re.compile(r"throughput per GPU \(TFLOP/s/GPU\):\s*" + _NUM)
_MEG_GB = re.compile(r"global batch size:\s*(\d+)")
_MEG_MEM = re.compile(r"max allocated:\s*" + _NUM)
_MEG_WORLD = re.compile(r"using world size:\s*(\d+)")
_SEQ_ARG = re.compile(r"^\s*(?:seq_length|encoder_seq_length)\s*\.+\s*(\d+)\s*$")
_NEMO = re.compile(r"train_step_timing in s=" + _NUM)
_NEMO_STEP = re.compile(r"global_step=" + _NUM)
_PL = re.compile(r"Epoch\s+\d+:.*?\|\s*(\d+)/(\d+|\?)\s*\[[^\]]*?,\s*" + _NUM + r"\s*(it/s|s/it)")
_DS = re.compile(r"global_step=(\d+),\s*RunningAvgSamplesPerSec=" + _NUM + r",\s*CurrSamplesPerSec=" + _NUM
                 + r",\s*MemAllocated=" + _NUM + r"GB,\s*MaxMemAllocated=" + _NUM + r"GB")
_DS_CFG = re.compile(r"\b(train_batch_size|train_micro_batch_size_per_gpu|world_size)\s*\.*\s+(\d+)\s*$")
_HF = re.compile(r"^\s*\{'(?:loss|train_runtime|eval_loss|grad_norm|learning_rate)'")
_SMI = re.compile(r"memory\.used \[MiB\]")
_DCGM = re.compile(r"^#\s*Entity\b")

TOKEN_FORMATS = ("torchtitan", "megatron", "nemo")  # language-model stacks: the figures are per token
FORMATS = ("hf-trainer", "jsonl", "torchtitan", "megatron", "nemo", "lightning", "deepspeed", "nvidia-smi", "dcgm")


def detect(path: str, head_lines: int = 400) -> str:
    """The log format, from the first lines (or the JSON shape)."""
    size = _open_checked(path)
    lines: list[str] = []
    for _, line in iter_lines(path):
        lines.append(_ANSI.sub("", line))
        if len(lines) >= head_lines:
            break
    text = "\n".join(lines).lstrip()
    if (text.startswith("{") and '"log_history"' in text[:MAX_LINE]) or (text.startswith("{") and size < MAX_JSON_BYTES
                                                                           and _is_trainer_state(path)):
        return "hf-trainer"
    checks = (("deepspeed", _DS), ("torchtitan", _TT), ("megatron", _MEG), ("nemo", _NEMO), ("lightning", _PL),
              ("nvidia-smi", _SMI), ("dcgm", _DCGM), ("hf-trainer", _HF))
    for line in lines:
        for name, rx in checks:
            if rx.search(line):
                return name
    if lines and all(ln.strip().startswith("{") for ln in lines[:5] if ln.strip()):
        return "jsonl"
    raise GpuwizError(f"{printable(path)}: not a log format gpuwiz reads ({', '.join(FORMATS)}); "
                      "no step timing or throughput found in its first lines")


def _is_trainer_state(path: str) -> bool:
    try:
        data = _read_json(path)
    except (GpuwizError, ValueError):
        return False
    return isinstance(data, dict) and isinstance(data.get("log_history"), list)


# ---- reading ----------------------------------------------------------------------------------------


class _Points:
    """Step records, evenly thinned past MAX_POINTS (bounded memory on huge logs)."""

    def __init__(self) -> None:
        self.items: list[Point] = []
        self.stride = 1
        self.seen = 0

    def add(self, p: Point) -> None:
        self.seen += 1
        if (self.seen - 1) % self.stride:
            return
        self.items.append(p)
        if len(self.items) >= MAX_POINTS:
            self.items = self.items[::2]
            self.stride *= 2


def _note_time(m: Measurement, line: str) -> None:
    if "-" not in line[:64]:
        return
    t = _TIME.search(line, 0, 64)
    if t:
        m.last_time = f"{t.group(1)}T{t.group(2)}"


def read_log(path: str, fmt: str | None = None, warmup_steps: int = DEFAULT_WARMUP_STEPS) -> Measurement:
    fmt = fmt or detect(path)
    if fmt not in FORMATS:
        raise GpuwizError(f"calibrate: unknown format {fmt!r} ({', '.join(FORMATS)})")
    m = Measurement(format=fmt)
    pts = _Points()
    if fmt == "hf-trainer" and _is_trainer_state(path):
        _read_trainer_state(path, m)
    else:
        reader = {"hf-trainer": _hf_line, "jsonl": _jsonl_line, "torchtitan": _tt_line, "megatron": _meg_line,
                  "nemo": _nemo_line, "lightning": _pl_line, "deepspeed": _ds_line, "nvidia-smi": None,
                  "dcgm": None}[fmt]
        if fmt == "nvidia-smi":
            _read_smi(path, m)
        elif fmt == "dcgm":
            _read_dcgm(path, m)
        else:
            assert reader is not None
            for _, raw in iter_lines(path):
                line = _ANSI.sub("", raw) if "\x1b" in raw else raw
                _note_time(m, line)
                p = reader(line, m)
                if p is not None:
                    pts.add(p)
    m.logged = pts.seen if pts.seen else m.logged
    if pts.items:
        _skip_warmup(m, pts.items, warmup_steps)
    if fmt not in ("nvidia-smi", "dcgm") and not m.points and not m.whole_run:
        raise GpuwizError(f"{printable(path)}: {fmt} log with no step after warm-up (the first logged step and steps "
                          f"below {warmup_steps} are skipped; --warmup-steps 0 keeps all but the first)")
    return m


def _skip_warmup(m: Measurement, items: list[Point], warmup_steps: int) -> None:
    """Drop the first logged record (compilation, allocator growth, data-loader start) and every
    record below ``warmup_steps``; if that leaves none, keep the records after the first."""
    items = sorted(items, key=lambda p: p.step)
    first = items[0].step
    kept = [p for p in items if p.step > first and p.step >= warmup_steps]
    if not kept:
        kept = items[1:]
    m.points = kept
    m.skipped = len(items) - len(kept)


def _tt_line(line: str, m: Measurement) -> Point | None:
    mesh = _TT_MESH.search(line) if "device mesh" in line else None
    if mesh:
        sizes = [int(x) for x in mesh.group(1).replace(" ", "").split(",") if x]
        m.count = math.prod(sizes) if sizes else None
    if "step:" not in line:
        return None
    kv = dict(_TT_KV.findall(line))
    tps = kv.get("tps") or kv.get("wps")
    if "step" not in kv or "loss" not in kv or tps is None:
        return None
    if "memory" in kv:
        m.peak_memory_gib = max(m.peak_memory_gib or 0.0, _f(kv["memory"]))
    return Point(step=int(_f(kv["step"])), tokens_per_s_per_gpu=_f(tps),
                 tflops_per_gpu=_f(kv["tflops"]) if "tflops" in kv else None,
                 mfu=_f(kv["mfu"]) / 100.0 if "mfu" in kv else None)


def _meg_line(line: str, m: Measurement) -> Point | None:
    w = _MEG_WORLD.search(line)
    if w:
        m.count = int(w.group(1))
    s = _SEQ_ARG.match(line)
    if s:
        m.seq_len = int(s.group(1))
    mem = _MEG_MEM.search(line)
    if mem and "memory (MB)" in line:
        m.peak_memory_gib = max(m.peak_memory_gib or 0.0, _f(mem.group(1)) / MIB_PER_GIB)
    r = _MEG.search(line)
    if not r:
        return None
    gb = _MEG_GB.search(line)
    if gb:
        m.global_batch = int(gb.group(1))
    tf = _MEG_TFLOPS.search(line)
    return Point(step=int(r.group(1)), step_time_s=_f(r.group(2)) / 1000.0,
                 tflops_per_gpu=_f(tf.group(1)) if tf else None)


def _nemo_line(line: str, m: Measurement) -> Point | None:
    r = _NEMO.search(line)
    if not r:
        return None
    st = _NEMO_STEP.search(line)
    step = int(_f(st.group(1))) if st else (m.logged + 1)
    m.logged += 1
    return Point(step=step, step_time_s=_f(r.group(1)))


def _pl_line(line: str, m: Measurement) -> Point | None:
    r = _PL.search(line)
    if not r:
        return None
    step, _total, rate, unit = r.groups()
    rate_f = _f(rate)
    if rate_f <= 0:
        return None
    sps = rate_f if unit == "it/s" else 1.0 / rate_f
    return Point(step=int(step), steps_per_s=sps, step_time_s=1.0 / sps)


def _ds_line(line: str, m: Measurement) -> Point | None:
    c = _DS_CFG.search(line)
    if c:
        key, val = c.group(1), int(c.group(2))
        if key == "train_batch_size":
            m.global_batch = val
        elif key == "train_micro_batch_size_per_gpu":
            m.micro_batch = val
        else:
            m.count = val
    r = _DS.search(line)
    if not r:
        return None
    step, _avg, curr, _mem, maxmem = r.groups()
    m.peak_memory_gib = max(m.peak_memory_gib or 0.0, _f(maxmem))  # DeepSpeed divides by 1024**3: GiB
    return Point(step=int(step), samples_per_s_total=_f(curr))


_HF_SUMMARY_KEYS = ("train_samples_per_second", "train_tokens_per_second", "train_steps_per_second")


def _hf_record(rec: dict[str, object], m: Measurement) -> None:
    if "train_samples_per_second" in rec or "train_tokens_per_second" in rec:
        m.whole_run = True
        sps, tps = rec.get("train_samples_per_second"), rec.get("train_tokens_per_second")
        steps = rec.get("train_steps_per_second")
        m.points = [Point(step=0,
                          samples_per_s_total=float(sps) if isinstance(sps, (int, float)) else None,
                          tokens_per_s_total=float(tps) if isinstance(tps, (int, float)) else None,
                          step_time_s=1.0 / float(steps) if isinstance(steps, (int, float)) and steps > 0 else None)]
    elif "loss" in rec:
        m.logged += 1


def _hf_line(line: str, m: Measurement) -> Point | None:
    s = line.strip()
    if not s.startswith("{") or len(s) > 10_000:
        return None
    try:
        rec = ast.literal_eval(s)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    if isinstance(rec, dict):
        _hf_record(rec, m)
    return None


def _read_trainer_state(path: str, m: Measurement) -> None:
    size = _open_checked(path)
    if size > MAX_JSON_BYTES:
        raise GpuwizError(f"{printable(path)}: {size / 1e6:.0f} MB of JSON; gpuwiz reads trainer_state.json up to "
                          f"{MAX_JSON_BYTES >> 20} MiB")
    try:
        data = _read_json(path)
    except ValueError as exc:
        raise GpuwizError(f"{printable(path)}: not a readable trainer_state.json "
                          f"({printable(' '.join(str(exc).split()))})") from None
    hist = data.get("log_history") if isinstance(data, dict) else None
    if not isinstance(hist, list):
        raise GpuwizError(f"{printable(path)}: no log_history list (not a Hugging Face trainer_state.json)")
    for rec in hist:
        if isinstance(rec, dict):
            _hf_record(rec, m)
    tb = data.get("train_batch_size") if isinstance(data, dict) else None
    if isinstance(tb, int):
        m.micro_batch = tb
    if not m.points:
        raise GpuwizError(f"{printable(path)}: trainer_state.json has no train_samples_per_second summary yet "
                          "(the run has not finished); use the printed log or a JSON-lines log")


_JSONL_KEYS = {
    "tokens_per_s_per_gpu": ("tokens_per_s_per_gpu", "tokens_per_second_per_gpu", "tps_per_gpu"),
    "tokens_per_s_total": ("tokens_per_second", "tokens_per_sec", "throughput_tokens"),
    "samples_per_s_per_gpu": ("samples_per_second_per_gpu", "samples_per_s_per_gpu"),
    "samples_per_s_total": ("samples_per_second", "samples_per_sec", "train_samples_per_second"),
    "step_time_s": ("step_time", "step_time_s", "iteration_time", "time_per_step"),
}


def _jsonl_line(line: str, m: Measurement) -> Point | None:
    s = line.strip()
    if not s.startswith("{"):
        return None
    try:
        rec = json.loads(s)
    except ValueError:
        return None
    if not isinstance(rec, dict):
        return None
    vals: dict[str, float] = {}
    for attr, keys in _JSONL_KEYS.items():
        for k in keys:
            v = rec.get(k)
            if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0:
                vals[attr] = float(v)
                break
    mem = rec.get("peak_memory_gib") or rec.get("max_memory_allocated_gib")
    if isinstance(mem, (int, float)):
        m.peak_memory_gib = max(m.peak_memory_gib or 0.0, float(mem))
    if not vals:
        return None
    step = rec.get("step")
    return Point(step=int(step) if isinstance(step, int) else m.logged + 1, **vals)


def _read_smi(path: str, m: Measurement) -> None:
    header: list[str] | None = None
    gpus: set[str] = set()
    for _lineno, line in iter_lines(path):
        cells = [c.strip() for c in line.split(",")]
        if header is None:
            if "memory.used [MiB]" in cells:
                header = cells
            continue
        if len(cells) != len(header):
            continue
        row = dict(zip(header, cells, strict=False))
        used = row.get("memory.used [MiB]", "").split()[0] if row.get("memory.used [MiB]") else ""
        try:
            mib = float(used)
        except ValueError:
            continue
        m.peak_memory_gib = max(m.peak_memory_gib or 0.0, mib / MIB_PER_GIB)
        m.logged += 1
        if row.get("name"):
            m.gpu_name = row["name"]
        gpus.add(row.get("index") or row.get("pci.bus_id") or row.get("uuid") or str(len(gpus)))
        ts = row.get("timestamp")
        if ts:
            t = _TIME.search(ts.replace("/", "-"))
            if t:
                m.last_time = f"{t.group(1)}T{t.group(2)}"
    if header is None or not m.logged:
        raise GpuwizError(f"{printable(path)}: nvidia-smi CSV without memory.used samples "
                          "(use --query-gpu=...,memory.used --format=csv)")
    m.count = len(gpus) if gpus else None
    m.notes.append("nvidia-smi samples give memory, GPU type and count only, no throughput")


def _read_dcgm(path: str, m: Measurement) -> None:
    cols: list[str] | None = None
    gpus: set[str] = set()
    for _, line in iter_lines(path):
        s = line.strip()
        if _DCGM.match(s):
            cols = s.lstrip("#").split()
            continue
        if cols is None or not s or s.startswith("ID"):
            continue
        parts = s.split()
        if len(parts) < 2 or parts[0] != "GPU":
            continue
        entity = f"{parts[0]} {parts[1]}"
        values = parts[2:]
        names = cols[1:]  # "Entity" spans "GPU 0"
        row = dict(zip(names, values, strict=False))
        fb = row.get("FBUSD")
        try:
            mib = float(fb) if fb not in (None, "N/A") else None
        except ValueError:
            mib = None
        if mib is not None:
            m.peak_memory_gib = max(m.peak_memory_gib or 0.0, mib / MIB_PER_GIB)
            m.logged += 1
        gpus.add(entity)
    if cols is None or not m.logged:
        raise GpuwizError(f"{printable(path)}: dcgmi dmon output without an FBUSD (field 252, frame buffer used) "
                          "column")
    m.count = len(gpus)
    m.notes.append("DCGM samples give memory and GPU count only, no throughput")


def utc_now_iso() -> str:
    return datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def file_time_iso(path: str) -> str:
    try:
        ts = os.stat(path).st_mtime
    except OSError:
        return utc_now_iso()
    return datetime.fromtimestamp(ts, UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")
