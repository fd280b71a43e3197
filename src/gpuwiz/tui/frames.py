"""A screen's frame clock that paints a change at once when the last frame is old enough.

Textual 8.2.8 paints a screen from a repeating timer (``Screen._update_timer``, TEXTUAL_FPS, 60 a
second) that waits paused until something needs a repaint. Its schedule is a grid that started when
the screen was first drawn, and after a pause it skips one slot more than it needs: a change that
comes 17 to 33 ms after the last frame is painted on the slot after next, up to 33 ms later. A key
makes two frames (the typed character at once, the engine's answer in the live panel ~15 ms later),
so the answer was on screen ~18 ms after it arrived (measured in tmux, bench/bench_tui_trace.py:
LivePanel.show -> its render, p50 18.4 ms).

``FrameTimer`` keeps the same ceiling (one frame per interval) but measures from the last frame: a
change is painted as soon as it is asked for when the last frame is an interval old or more, and
otherwise when it will be.
"""

from __future__ import annotations

import asyncio

from textual._time import get_time, sleep
from textual.timer import EventTargetGone, Timer


class FrameTimer(Timer):
    """``Timer`` whose ticks are at least ``interval`` apart, each as early as that allows."""

    async def _run(self) -> None:
        interval = self._interval
        active: asyncio.Event = self._active
        last = get_time() - interval  # no frame yet: the first one goes at once
        count = 0
        while True:
            await active.wait()
            wait = last + interval - get_time()
            if wait > 0:
                await sleep(wait)
                if not active.is_set():
                    continue  # painted meanwhile (a layout pass pauses the clock): wait for the next change
            last = get_time()
            count += 1
            try:
                await self._tick(next_timer=last, count=count)
            except EventTargetGone:
                break
