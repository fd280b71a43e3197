"""Where the time goes between a key and the screen, in-process (the UI thread), per key.

    .venv/bin/python bench/bench_tui_profile.py [--keys 40] [--config small-team-lora-7b.yaml] [--top 30]

Runs the wizard headless (100×30) with an example config on the Data step, posts K keys into the
Epochs field (2..9 and backspace in turn, as bench_tui_tmux.py, as the terminal driver posts them) and waits, for
each, until the live panel has been repainted with the new answer. The UI thread runs under cProfile
for the whole loop; the engine worker's thread does not (its time shows as ``engine (worker)``).
Prints the wall time per key, the CPU time per key of the UI thread and of the whole process, the
engine's own time, and the functions of the UI thread that cost the most per key (cumulative).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import pstats
import shutil
import statistics
import tempfile
import time
from importlib import resources
from pathlib import Path


async def drive(config: str, keys: int, prof: cProfile.Profile, engine_process: bool = False) -> dict[str, float]:
    state = tempfile.mkdtemp(prefix="gpuwiz-prof-")
    try:
        return await _drive(state, config, keys, prof, engine_process)
    finally:
        shutil.rmtree(state, ignore_errors=True)


async def _drive(state: str, config: str, keys: int, prof: cProfile.Profile, engine_process: bool) -> dict[str, float]:
    from textual import events

    from gpuwiz.tui.app import create_app
    from gpuwiz.tui.widgets.live_panel import LivePanel

    example = Path(state) / config
    example.write_text(resources.files("gpuwiz").joinpath("examples", config).read_text())
    app = create_app(example, state_dir=state, handle_signals=False, offer_restore=False,
                     engine_process=engine_process)
    walls: list[float] = []
    engine: list[float] = []
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        for _ in range(3):
            await pilot.press("pageup")
            await pilot.pause()
        field = app.screen.query_one("#f-data-epochs")
        field.focus()
        await pilot.press("end")
        await pilot.pause(0.3)
        while engine_process and not (app._engine_proc is not None and app._engine_proc.ready):
            await asyncio.sleep(0.05)  # the child loads the core and the catalog
        panel = app.screen.query_one(LivePanel)
        painted: list[int] = []
        render_line = panel.render_line  # the panel paints through render_line (its changed lines only)

        def timed_render_line(y: int) -> object:
            painted.append(panel.version)
            return render_line(y)

        panel.render_line = timed_render_line  # type: ignore[method-assign]
        cpu0, thr0 = time.process_time(), time.thread_time()
        prof.enable()
        for i in range(keys):
            version = panel.version
            key = "backspace" if i % 2 else "23456789"[(i // 2) % 8]  # new values, as bench_tui_tmux types
            t0 = time.perf_counter()
            app.post_message(events.Key(key, None if key == "backspace" else key))
            while not any(v > version for v in painted) and time.perf_counter() - t0 < 5.0:
                await asyncio.sleep(0.0005)
            walls.append((time.perf_counter() - t0) * 1e3)
            engine.append(app.last_engine_ms)
            painted.clear()
            await asyncio.sleep(0.05)
        prof.disable()
        cpu, thr = time.process_time() - cpu0, time.thread_time() - thr0
    return {"wall_p50": statistics.median(walls), "wall_p95": sorted(walls)[int(0.95 * (len(walls) - 1))],
            "cpu_per_key": cpu / keys * 1e3, "ui_cpu_per_key": thr / keys * 1e3,
            "engine": statistics.median(engine)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keys", type=int, default=40)
    ap.add_argument("--config", default="small-team-lora-7b.yaml")
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--engine-process", action="store_true", help="the engine in a child process (as the CLI runs it)")
    ap.add_argument("--no-profile", action="store_true", help="CPU and wall per key without cProfile's overhead")
    args = ap.parse_args()
    prof = cProfile.Profile()
    if args.no_profile:
        prof.enable = prof.disable = lambda: None  # type: ignore[method-assign]
    r = asyncio.run(drive(args.config, args.keys, prof, args.engine_process))
    where = "child process" if args.engine_process else "thread"
    print(f"{args.config}, engine in a {where}, {args.keys} keys: key -> panel repainted p50 {r['wall_p50']:.1f} ms, "
          f"p95 {r['wall_p95']:.1f} ms; CPU per key: process {r['cpu_per_key']:.1f} ms, "
          f"UI thread {r['ui_cpu_per_key']:.1f} ms; engine (worker) {r['engine']:.1f} ms")
    if args.no_profile:
        return
    out = io.StringIO()
    st = pstats.Stats(prof, stream=out)
    st.sort_stats("cumulative").print_stats(args.top)
    print(out.getvalue())


if __name__ == "__main__":
    main()
