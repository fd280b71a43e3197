"""Where one key's time goes, end to end, in a real terminal (tmux): a stamp at every hop.

    .venv/bin/python bench/bench_tui_trace.py [--keys 20] [--size 100x30] [--config NAME]
                                              [--engine process|thread]

Starts the wizard in a detached tmux session as ``bench_tui_trace.py --inner``: the real app, with
``time.perf_counter`` stamps patched in at each hop of a key (the clock is CLOCK_MONOTONIC, one clock
for every process on Linux, so the wizard's, its engine child's and this script's stamps line up):

  send       this script: ``tmux send-keys``
  input      Textual's input thread has parsed the key (SafeInputDriver.process_message)
  key        the UI thread starts on the Key event (GpuwizApp.on_event)
  edited     the requirements are rebuilt and validated (GpuwizApp.edit_field returned)
  sent       the request is pickled and written to the engine child (EngineProcess.submit returned)
  c_read     child: the request frame is read and unpickled
  c_run      child: the engine has answered (Engine.run returned)
  c_sent     child: the answer (its first frame: the live panel's brief) is pickled and written
  r_read     the UI process has bytes of the answer (its event loop, or its reader thread)
  r_posted   ... unpickled it and posted EngineDone
  done       the UI thread starts on EngineDone (GpuwizApp.on_engine_done)
  shown      LivePanel.show returned (the panel marked for repaint)
  released   the held frame is released (FrameTimer.release: the answer is applied)
  tick       the screen's frame clock ticks (Screen._on_timer_update starts)
  rendered   the compositor has the panel's new lines (LivePanel.render_line, its first line)
  frame      the frame with the panel is handed to Textual's writer thread (App._display returned)
  written    the writer thread has written and flushed it to the terminal
  screen     this script sees the panel change in ``tmux capture-pane``

Prints the median and p95 of each hop (ms after ``send``) and of each step between hops, with the CPU
time its thread spent since its own previous hop (the UI thread's or the child's: ``r_read``'s is the
UI thread's work after ``sent``; where the step's wall time is more, its thread was waiting, mostly for a
CPU on a loaded machine), and the CPU time of each of the
wizard's threads and of the child over the session. Run it on a quiet machine and say on
which (the load average is printed); it is a diagnosis, the targets are bench_tui_tmux.py's.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import sys
import tempfile
import time
from importlib import resources
from pathlib import Path
from typing import Any

from bench_tui_tmux import (
    add_client_arg,
    capture,
    epochs_line,
    epochs_value,
    fresh_base,
    fresh_key_for,
    fresh_start,
    key_for,
    kill,
    next_change,
    panel,
    pct,
    pythonpath,
    tmux,
    to_epochs,
    use_client,
    wait_for,
)

HOPS = ("input", "key", "edited", "sent", "c_read", "c_run", "c_sent", "r_read", "r_posted", "done", "shown",
        "released", "tick", "rendered", "frame", "written")

# ---- inside the wizard: the patches ---------------------------------------------------------------
STAMPS: list[tuple[str, float, float, bool]] = []  # (hop, wall clock, this thread's CPU clock, on the main thread)


def stamp(label: str) -> None:
    import threading

    main = threading.current_thread() is threading.main_thread()
    STAMPS.append((label, time.perf_counter(), time.thread_time(), main))


def _patch_ui(out: str) -> None:
    import atexit
    import pickle

    from textual.drivers import _writer_thread

    from gpuwiz.tui import app as app_mod
    from gpuwiz.tui import driver as driver_mod
    from gpuwiz.tui import engine as engine_mod
    from gpuwiz.tui.widgets import live_panel

    cpu: dict[str, float] = {}

    def wrap(cls: Any, name: str, after: str | None = None, before: str | None = None) -> None:
        orig = getattr(cls, name)

        if hasattr(orig, "__code__") and orig.__code__.co_flags & 0x80:  # a coroutine function
            async def awrapped(*a: Any, **k: Any) -> Any:
                if before:
                    stamp(before)
                r = await orig(*a, **k)
                if after:
                    stamp(after)
                return r
            setattr(cls, name, awrapped)
            return

        def wrapped(*a: Any, **k: Any) -> Any:
            if before:
                stamp(before)
            r = orig(*a, **k)
            if after:
                stamp(after)
            return r
        setattr(cls, name, wrapped)

    orig_pm = driver_mod.SafeInputDriver.process_message

    def process_message(self: Any, message: Any) -> None:
        from textual import events

        if isinstance(message, events.Key):
            stamp("input")
        orig_pm(self, message)
    driver_mod.SafeInputDriver.process_message = process_message  # type: ignore[method-assign]

    orig_on_event = app_mod.GpuwizApp.on_event

    async def on_event(self: Any, event: Any) -> None:
        from textual import events

        if isinstance(event, events.Key):
            stamp("key")
        await orig_on_event(self, event)
    app_mod.GpuwizApp.on_event = on_event  # type: ignore[method-assign]
    wrap(app_mod.GpuwizApp, "edit_field", after="edited")
    wrap(engine_mod.EngineProcess, "submit", after="sent")
    wrap(app_mod.GpuwizApp, "on_engine_done", before="done")
    wrap(live_panel.LivePanel, "show", after="shown")
    from textual.screen import Screen

    from gpuwiz.tui import frames

    wrap(frames.FrameTimer, "release", before="released")
    wrap(Screen, "_on_timer_update", before="tick")
    orig_line = live_panel.LivePanel.render_line

    def render_line(self: Any, y: int) -> Any:
        r = orig_line(self, y)
        if y == 0:
            stamp("rendered")
        return r
    live_panel.LivePanel.render_line = render_line  # type: ignore[method-assign]
    wrap(app_mod.GpuwizApp, "_display", after="frame")

    orig_loads = pickle.loads

    def read_frame(stream: Any) -> bytes | None:  # the reader thread (before the loop takes over)
        f = orig_read_frame(stream)
        stamp("r_read")
        return f
    orig_read_frame = engine_mod._read_frame
    engine_mod._read_frame = read_frame  # type: ignore[assignment]
    wrap(engine_mod.EngineProcess, "_on_readable", before="r_read")  # the event loop reads the pipe

    orig_answer = app_mod.GpuwizApp._answer_from_process

    def answer(self: Any, seq: int, outcome: Any) -> None:
        orig_answer(self, seq, outcome)
        stamp("r_posted")
    app_mod.GpuwizApp._answer_from_process = answer  # type: ignore[method-assign]
    del orig_loads

    def run(self: Any) -> None:
        write, flush, get, qsize = self._file.write, self._file.flush, self._queue.get, self._queue.qsize
        while True:
            text = get()
            if text is None:
                break
            write(text)
            if qsize() == 0:
                flush()
                stamp("written")
        flush()
        cpu["writer"] = time.thread_time()
    _writer_thread.WriterThread.run = run  # type: ignore[method-assign]

    # the child: this file as the engine's program, with stamps of its own
    orig_start = engine_mod.EngineProcess.start

    def start(self: Any) -> bool:
        import subprocess as sp

        real_popen = sp.Popen

        def popen(cmd: list[str], *a: Any, **k: Any) -> Any:
            cmd = [cmd[0], __file__, "--child", out + ".child", *cmd[3:]]
            return real_popen(cmd, *a, **k)
        sp.Popen = popen  # type: ignore[misc,assignment]
        try:
            return orig_start(self)
        finally:
            sp.Popen = real_popen  # type: ignore[misc]
    engine_mod.EngineProcess.start = start  # type: ignore[method-assign]

    def dump() -> None:
        import threading

        per_thread = {t.name: t for t in threading.enumerate()}
        data = {"stamps": STAMPS, "cpu_main": time.thread_time(), "cpu_process": time.process_time(),
                "threads": sorted(per_thread), **cpu}
        with open(out, "w") as fh:
            json.dump(data, fh)
    atexit.register(dump)


def inner(config: str, out: str, engine_process: bool) -> None:
    _patch_ui(out)
    from gpuwiz.tui.app import create_app

    app = create_app(config, handle_signals=True, offer_restore=False, engine_process=engine_process)
    app.run()


def child(out: str, argv: list[str]) -> int:
    import atexit

    from gpuwiz._codegen import install_codegen

    # what engine_child.main does only when it is the process itself (argv None), as the wizard's child:
    install_codegen("engine")  # the code dataclasses & co. generate, compiled, from the cache folder
    from gpuwiz.core import gcpause
    from gpuwiz.tui import engine as engine_mod
    from gpuwiz.tui import engine_child

    gcpause.keep_frozen()  # an answer's objects join the frozen ones (no young collection per answer)

    orig_read, orig_write, orig_run = engine_mod.read_request, engine_mod.write_frame, engine_mod.Engine.run

    def read_request(stream: Any) -> Any:
        r = orig_read(stream)
        stamp("c_read")
        return r

    def write_frame(stream: Any, obj: Any) -> None:
        orig_write(stream, obj)
        stamp("c_sent")

    def run(self: Any, req: Any) -> Any:
        r = orig_run(self, req)
        stamp("c_run")
        return r
    # engine_child.main imports these from gpuwiz.tui.engine when it starts: patched there
    engine_mod.read_request = read_request  # type: ignore[assignment]
    engine_mod.write_frame = write_frame  # type: ignore[assignment]
    engine_mod.Engine.run = run  # type: ignore[method-assign]

    def dump() -> None:
        with open(out, "w") as fh:
            json.dump({"stamps": STAMPS, "cpu": time.process_time()}, fh)
    atexit.register(dump)
    return engine_child.main(argv)


# ---- outside: drive tmux ----------------------------------------------------------------------------
def drive(config: Path, keys: int, size: str, engine: str, fresh: bool = False) -> None:
    cols, rows = size.split("x")
    session = f"gpuwiz-trace-{os.getpid()}"
    state = tempfile.mkdtemp(prefix="gpuwiz-trace-")
    out = os.path.join(state, "trace.json")
    config = Path(shutil.copy(config, state))  # a copy: nothing the wizard does reaches the example
    cmd = (f"exec env GPUWIZ_STATE_DIR={state}{pythonpath()} {sys.executable} {__file__} --inner {config} --out {out}"
           f" --engine {engine}")
    tmux("new-session", "-d", "-s", session, "-x", cols, "-y", rows, cmd)
    sends: list[float] = []
    chars: list[float] = []
    screens: list[float] = []
    values: list[str] = []  # the Epochs value after each key (a value not seen before: a new answer)
    try:
        wait_for(session, lambda ls: any("What-if" in ln for ln in ls), 60)
        to_epochs(session)
        time.sleep(4.0 if engine == "process" else 1.0)  # the child starts after the first answer and loads
        for i in range(keys):
            if fresh and i % 16 == 0:
                fresh_start(session, i // 16)
            before = capture(session)
            line0, panel0 = epochs_line(before), panel(before)
            key = fresh_key_for(i) if fresh else key_for(i)
            t0 = time.perf_counter()
            tmux("send-keys", "-t", session, key)
            t_char = t_panel = None
            while t_char is None or t_panel is None:
                now = capture(session)
                t = time.perf_counter()
                if t_char is None and epochs_line(now) != line0:
                    t_char = t
                if t_panel is None and panel(now) != panel0:
                    t_panel = t
                if t - t0 > 10:
                    raise SystemExit(f"key {key!r}: the screen did not change in 10 s:\n" + "\n".join(now))
                if t_char is None or t_panel is None:
                    next_change(session)
            values.append(epochs_value(epochs_line(now)))
            sends.append(t0)
            chars.append(t_char)
            screens.append(t_panel)
            time.sleep(0.15)
        pid = int(tmux("display-message", "-p", "-t", session, "#{pane_pid}").strip())
        os.kill(pid, signal.SIGTERM)  # the wizard flushes its draft (into the temporary state dir) and exits
        deadline = time.perf_counter() + 10
        while not os.path.exists(out) and time.perf_counter() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)  # the file is written at exit; the child's when its stdin closes
        with open(out) as fh:
            ui = json.load(fh)
        kid: dict[str, Any] = {"stamps": [], "cpu": 0.0}
        if os.path.exists(out + ".child"):
            with open(out + ".child") as fh:
                kid = json.load(fh)
    finally:
        kill(session)
        shutil.rmtree(state, ignore_errors=True)
    seen: set[str] = {fresh_base(k) for k in range(keys // 16 + 1)} if fresh else set()  # (answered unmeasured)
    new: list[int] = []
    for i, v in enumerate(values):
        if v not in seen:
            new.append(i)
        seen.add(v)
    report(config.name, size, engine, sends, chars, screens, ui, kid, range(len(sends)), "all keys")
    print()
    report(config.name, size, engine, sends, chars, screens, ui, kid, new, "the keys that made a new value")


def report(name: str, size: str, engine: str, sends: list[float], chars: list[float], screens: list[float],
           ui: dict[str, Any], kid: dict[str, Any], keys: Any, which: str) -> None:
    stamps = sorted([*[(*s, "ui") for s in ui["stamps"]], *[(*s, "child") for s in kid["stamps"]]],
                    key=lambda s: s[1])
    per_hop: dict[str, list[float]] = {h: [] for h in (*HOPS, "char", "screen")}
    cpu_of: dict[str, list[float]] = {h: [] for h in HOPS}  # per key: the CPU a thread spent on the step to hop h
    minus_engine: list[float] = []
    early: set[int] = set()
    for i, t0 in enumerate(sends):
        if i not in keys:
            continue
        t_end = sends[i + 1] if i + 1 < len(sends) else t0 + 1.0
        mine = [s for s in stamps if t0 <= s[1] < t_end]
        first: dict[str, float] = {}
        clocks: dict[str, tuple[float, str]] = {}  # hop -> (CPU clock of its thread, which thread)
        done_at = None
        for lab, t, cpu, main_thread, who in mine:
            if lab == "done":
                done_at = t if done_at is None else done_at
            if lab == "frame" and done_at is None:
                early.add(i)  # a frame before the answer: the typed character's own (the hold ran out)
            # hops after the answer: the first one after "done"
            after = ("shown", "released", "tick", "rendered", "frame", "written")
            if lab in after and (done_at is None or t < done_at):
                continue
            if lab not in first:
                first[lab] = t
                clocks[lab] = (cpu, who if who == "child" else "main" if main_thread else "other")
        last_on: dict[str, str] = {}  # thread -> its previous hop
        for h in HOPS:
            if h not in clocks:
                continue
            who = clocks[h][1]
            if who != "other" and who in last_on:
                cpu_of[h].append((clocks[h][0] - clocks[last_on[who]][0]) * 1e3)
            last_on[who] = h
        for h in HOPS:
            if h in first:
                per_hop[h].append((first[h] - t0) * 1e3)
        per_hop["char"].append((chars[i] - t0) * 1e3)
        per_hop["screen"].append((screens[i] - t0) * 1e3)
        if "c_read" in first and "c_run" in first:  # the panel on screen minus the child's engine time
            minus_engine.append((screens[i] - t0 - (first["c_run"] - first["c_read"])) * 1e3)
    print(f"{name} at {size}, engine in a {engine}, {which} ({len(keys)} of {len(sends)}; ms after send-keys, "
          "p50 / p95):")
    prev = None
    for h in (*HOPS, "screen"):
        xs = per_hop[h]
        if not xs:
            continue
        step = ""
        if prev is not None and per_hop[prev] and len(per_hop[prev]) == len(xs):
            d = [b - a for a, b in zip(per_hop[prev], xs, strict=True)]
            step = f"   (+{statistics.median(d):5.1f} / {pct(d, .95):5.1f})"
        cpu = cpu_of.get(h) or []
        cpu_note = f"   CPU {statistics.median(cpu):4.1f} / {pct(cpu, .95):4.1f}" if len(cpu) >= len(xs) // 2 else ""
        print(f"  {h:9s} {statistics.median(xs):6.1f} / {pct(xs, .95):6.1f}{step}{cpu_note}")
        prev = h
    print(f"  typed character on screen: {statistics.median(per_hop['char']):.1f} / {pct(per_hop['char'], .95):.1f}")
    print(f"  keys whose typed character had a frame of its own before the answer: {len(early)} of {len(keys)}")
    if minus_engine:
        print(f"  live panel on screen minus the child's engine time (c_read -> c_run): "
              f"{statistics.median(minus_engine):.1f} / {pct(minus_engine, .95):.1f}")
    print(f"  CPU over the whole session: UI thread {ui['cpu_main']:.2f} s, process {ui['cpu_process']:.2f} s, "
          f"writer thread {ui.get('writer', 0):.2f} s, engine child {kid['cpu']:.2f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keys", type=int, default=20)
    ap.add_argument("--size", default="100x30")
    ap.add_argument("--config", default="small-team-lora-7b.yaml")
    ap.add_argument("--engine", choices=("process", "thread"), default="process")
    ap.add_argument("--fresh", action="store_true",
                    help="type Epochs values 1.02, 1.03, ... 1.12, ...: every digit a new value (fresh_key_for)")
    ap.add_argument("--inner", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--out", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    add_client_arg(ap)
    args, rest = ap.parse_known_args()
    if args.child:
        raise SystemExit(child(args.child, rest))
    if args.inner:
        inner(args.inner, args.out, args.engine == "process")
        return
    if shutil.which("tmux") is None:
        raise SystemExit("tmux is not installed")
    folder = Path(str(resources.files("gpuwiz").joinpath("examples")))
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    use_client(args.client)
    drive(folder / args.config, args.keys, args.size, args.engine, args.fresh)
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
