"""Startup and responsiveness of the wizard.

    .venv/bin/python bench/bench_tui.py [--runs 7] [--keys 40]

1. Time to first frame: wall time from spawning a fresh interpreter until ``on_ready`` (DOM built,
   first frame drawn, headless 80×24; shutdown not counted), for a minimal Textual app (Header + Static + Footer)
   and for gpuwiz's start screen; N paired rounds (each runs the three start-up cases once, in a rotated
   order, after one warm-up each; ratios are taken within each round), with the process's CPU time
   (load-independent, unlike wall time on a shared machine). Target (issue 16): gpuwiz ≤ 1.3× the minimal app.
   Then "open a config → answer on screen": gpuwiz started with an example config (as ``gpuwiz
   FILE.yaml``: the engine's child prestarted and the catalog checked as the command line does),
   until the Result screen shows the engine's pick for it (answer in, frame drawn); paired with the above.
   Target (issue 16): ≤ 2× gpuwiz's first frame. Both gpuwiz cases route generated code through the
   cache folder's table first, as ``gpuwiz.cli.main`` does for the wizard (gpuwiz/_pyc.py); the minimal
   app has no such table. Run it as a normal install runs (bytecode written: PYTHONDONTWRITEBYTECODE
   unset), or every start compiles gpuwiz from source.
2. Key press → updated live panel: in-process (Pilot), on the Data step with a config open, press a
   key (posted as the terminal driver would) in the Epochs field and wait until the live panel's
   text has changed ("updated"), and until the compositor has asked the panel for its new lines
   ("repainted", the frame that shows it); median / p95 over K presses. Target: < 50 ms. The keys
   alternate "2" / backspace, so the config flips between saved and unsaved on every press.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from importlib import resources
from pathlib import Path

from proc import paired

MINIMAL = """
from textual.app import App
from textual.widgets import Footer, Header, Static
class MinApp(App):
    def compose(self):
        yield Header(); yield Static("hello"); yield Footer()
    def on_ready(self):
        print(time.time(), time.process_time(), flush=True); self.exit()
import time
MinApp().run(headless=True, size=(80, 24))
"""

GPUWIZ = """
import sys
from gpuwiz._codegen import install_codegen
install_codegen("wizard")  # as gpuwiz.cli.main does for the wizard: generated code from the cache folder
from gpuwiz.tui.app import GpuwizApp, create_app
class Timed(GpuwizApp):
    def on_ready(self):
        super().on_ready(); print(time.time(), time.process_time(), flush=True); self.exit()
import time
app = create_app(state_dir=sys.argv[1], handle_signals=False, offer_restore=False)
app.__class__ = Timed
app.run(headless=True, size=(80, 24))
"""


GPUWIZ_OPEN = """
import sys
from gpuwiz._codegen import install_codegen
install_codegen("wizard")  # as gpuwiz.cli.main does for the wizard: generated code from the cache folder
# as `gpuwiz FILE.yaml` does (gpuwiz.cli.cmd_wizard): the engine's child first, the catalog checked, then the app
from gpuwiz.tui.engine import prestart_engine_process
prestart_engine_process(None, "en")
from gpuwiz.core.catalog import load_catalog
load_catalog(None)
from gpuwiz.tui.app import GpuwizApp, create_app
class Timed(GpuwizApp):
    # checked after each engine answer (no polling timer: one would take the GIL from the engine thread)
    def on_engine_done(self, message):  # Textual runs GpuwizApp's handler too (every class's in the MRO)
        self.call_later(self._check)
    def _check(self):
        from gpuwiz.tui.screens.result import ResultScreen
        if isinstance(self.screen, ResultScreen) and self.answered and self.recommendation is not None:
            self.call_after_refresh(self._done)
    def _done(self):
        print(time.time(), time.process_time(), flush=True); self.exit()
import time
app = create_app(sys.argv[2], state_dir=sys.argv[1], handle_signals=False, offer_restore=False, engine_process=True)
app.__class__ = Timed
app.run(headless=True, size=(80, 24))
"""


def _timed(cmd: list[str]) -> tuple[float, float]:
    """(wall, CPU) in ms of one run: wall from spawning the interpreter, CPU of the wizard's process (all
    its threads; not its engine child) until the moment it prints. CPU is what the machine's load does
    not change much (the 2 cores here are shared)."""
    t0 = time.time()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.split()
    return (float(out[0]) - t0) * 1e3, float(out[1]) * 1e3  # spawn -> the print (frame drawn)


def start_ups(cmds: list[list[str]], runs: int) -> list[list[tuple[float, float]]]:
    """``runs`` paired rounds of the start-up commands (``proc.paired``: rotated order, so drift in the
    machine's speed hits them alike and a ratio can be taken within each round; the machine here moves a
    process's CPU time by up to 1.6x between minutes), after one warm-up each (page cache, .pyc).
    Returns, per command, its (wall, CPU) per round."""
    for cmd in cmds:
        subprocess.run(cmd, check=True, capture_output=True)
    return paired(lambda i: _timed(cmds[i]), len(cmds), runs)


def _ratio(a: list[tuple[float, float]], b: list[tuple[float, float]], col: int) -> float:
    """Median over the rounds of a[round] / b[round] (wall: col 0, CPU: col 1)."""
    return statistics.median(x[col] / y[col] for x, y in zip(a, b, strict=True))


async def key_latency(presses: int, state: str) -> tuple[list[float], list[float], list[float]]:
    from textual import events

    from gpuwiz.tui.app import create_app
    from gpuwiz.tui.widgets.live_panel import LivePanel

    example = Path(state) / "example.yaml"
    example.write_text(resources.files("gpuwiz").joinpath("examples", "small-team-lora-7b.yaml").read_text())
    app = create_app(example, state_dir=state, handle_signals=False, offer_restore=False)
    lat: list[float] = []
    painted: list[float] = []
    engine: list[float] = []
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await pilot.press("ctrl+b", "ctrl+b", "ctrl+b")  # result -> data
        await pilot.pause()
        field = app.screen.query_one("#f-data-epochs")
        field.focus()
        await pilot.press("end")
        await pilot.pause()
        panel = app.screen.query_one(LivePanel)
        rendered: list[tuple[int, float]] = []
        render_line = panel.render_line

        def timed_render(y: int) -> object:  # the compositor asks the panel for its lines: the repaint
            rendered.append((panel.version, time.perf_counter()))
            return render_line(y)

        panel.render_line = timed_render  # type: ignore[method-assign,assignment]
        for i in range(presses):
            before = panel.text
            version = panel.version
            key = "2" if i % 2 == 0 else "backspace"
            t0 = time.perf_counter()
            # the same Key event the terminal driver posts (Pilot.press adds idle waits of its own)
            app.post_message(events.Key(key, "2" if key == "2" else None))
            while panel.version == version and time.perf_counter() - t0 < 2.0:
                await asyncio.sleep(0.0005)
            lat.append((time.perf_counter() - t0) * 1e3)
            assert panel.text != before, "the live panel did not change"
            while not any(v > version for v, _ in rendered) and time.perf_counter() - t0 < 2.0:
                await asyncio.sleep(0.0005)
            painted.append((min(t for v, t in rendered if v > version) - t0) * 1e3)
            rendered.clear()
            engine.append(app.last_engine_ms)
    return lat, painted, engine


def main() -> None:
    ap = argparse.ArgumentParser(description="gpuwiz TUI benchmark")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--keys", type=int, default=40)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as state:
        example = str(resources.files("gpuwiz").joinpath("examples", "small-team-lora-7b.yaml"))
        py = sys.executable
        mini, wiz, opened = start_ups([[py, "-c", MINIMAL], [py, "-c", GPUWIZ, state],
                                    [py, "-c", GPUWIZ_OPEN, state, example]], args.runs)
        try:
            load = f"load average {os.getloadavg()[0]:.1f}"
        except OSError:
            load = "load average unknown"

        def med(xs: list[tuple[float, float]], col: int) -> float:
            return statistics.median(x[col] for x in xs)

        print(f"machine: {os.cpu_count()} CPUs, {load}; {args.runs} paired rounds (rotated order); wall ms "
              "(CPU ms of the process), medians; ratios are the median of each round's ratio")
        print(f"first frame, minimal Textual app : {med(mini, 0):7.1f} ms ({med(mini, 1):5.1f} CPU)")
        print(f"first frame, gpuwiz start screen : {med(wiz, 0):7.1f} ms ({med(wiz, 1):5.1f} CPU) = "
              f"{_ratio(wiz, mini, 0):.2f}x minimal, CPU {_ratio(wiz, mini, 1):.2f}x (target <= 1.3x)")
        print(f"open a config -> answer on screen: {med(opened, 0):7.1f} ms ({med(opened, 1):5.1f} CPU) = "
              f"{_ratio(opened, wiz, 0):.2f}x gpuwiz first frame, CPU {_ratio(opened, wiz, 1):.2f}x "
              "(target <= 2x; small-team-lora-7b.yaml, Result screen)")
        lat, painted, eng = asyncio.run(key_latency(args.keys, state))
    for label, xs in (("key press -> live panel updated  ", lat), ("key press -> live panel repainted", painted)):
        xs.sort()
        p95 = xs[min(len(xs) - 1, int(0.95 * len(xs)))]
        print(f"{label}: median {statistics.median(xs):.1f} ms, p95 {p95:.1f} ms, "
              f"max {xs[-1]:.1f} ms over {len(xs)} presses (target < 50 ms)")
    print(f"  of which engine (recommend)    : median {statistics.median(eng):.1f} ms")


if __name__ == "__main__":
    main()
