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

A typed key whose answer the engine's child is computing ``hold``s the next frame for a few
milliseconds: when the answer comes within them (``release``), the typed character and the live
panel are painted in ONE frame (the second frame of a key cost ~5 ms of the UI thread and, an
interval after the first, ~17 ms of latency). When it comes later, the character has been painted
at the end of the hold and the answer's frame goes as soon as it is asked for (one such frame per
hold, so a held key never waits an interval for its answer).

How long a hold lasts follows the engine (``hold_for``): HOLD_S while it answers fast, longer (up
to HOLD_MAX_S) while its recent answers took longer, so that a config whose new answers take 8-13 ms
(enterprise-70b-pretrain) still gets its character and its answer in one frame; an answer slower
than that gets a frame of its own, as before, rather than hold the character past its target. A fast answer
releases the hold when it comes, whatever its length: only a key whose answer is slower than the
hold waits for all of it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from textual._time import get_time, sleep
from textual.timer import EventTargetGone, Timer

HOLD_S = 0.010  # how long a typed character waits for its answer while the engine answers fast
HOLD_MAX_S = 0.016  # the longest it waits, whatever the engine takes (issue 9: the character's p95 <= 35 ms)
ANSWER_OVERHEAD_S = 0.003  # an answer's way besides the engine: the pipes, unpickling, applying it


def hold_for(engine_ms: Iterable[float]) -> float:
    """The hold for a typed key, from the engine's recent answer times (milliseconds): long enough
    for the slowest of them and its way back, at least HOLD_S and at most HOLD_MAX_S."""
    slowest = max(engine_ms, default=0.0) / 1e3 + ANSWER_OVERHEAD_S
    return min(max(HOLD_S, HOLD_MAX_S), max(HOLD_S, slowest))


async def wait_event(event: asyncio.Event, timeout: float) -> None:
    """Until ``event`` is set or ``timeout`` seconds have passed."""
    try:
        await asyncio.wait_for(event.wait(), timeout)
    except TimeoutError:
        pass


class FrameTimer(Timer):
    """``Timer`` whose ticks are at least ``interval`` apart, each as early as that allows, with a
    bounded ``hold`` for an expected change (see the module doc)."""

    _hold_until = 0.0  # get_time() until which the next frame waits (0: no hold)
    _awaiting = False  # a hold was asked for and its release has not come yet
    _urgent = False  # the released change's frame goes at once, not an interval after the last one
    _released: asyncio.Event | None = None

    def hold(self, seconds: float | None = None) -> None:
        """The next frame waits up to ``seconds`` (HOLD_S) for ``release`` (an answer on its way)."""
        if self._released is None:
            self._released = asyncio.Event()
        self._released.clear()
        self._hold_until = get_time() + (HOLD_S if seconds is None else seconds)
        self._awaiting = True
        self._urgent = False

    def release(self) -> None:
        """The held-for change is in: paint now (no interval wait for this one frame)."""
        if not self._awaiting:
            return
        self._awaiting = False
        self._hold_until = 0.0
        self._urgent = True
        if self._released is not None:
            self._released.set()

    @property
    def holding(self) -> bool:
        return self._awaiting

    async def _run(self) -> None:
        interval = self._interval
        active: asyncio.Event = self._active
        last = get_time() - interval  # no frame yet: the first one goes at once
        count = 0
        while True:
            await active.wait()
            held = self._hold_until - get_time()
            if held > 0 and self._released is not None:
                await wait_event(self._released, held)
                self._hold_until = 0.0
                if not active.is_set():
                    continue
            if self._urgent:
                self._urgent = False
            else:
                wait = last + interval - get_time()
                if wait > 0:
                    await sleep(wait)
                    if not active.is_set():
                        continue  # painted meanwhile (a layout pass pauses the clock): wait for the next change
                    if self._urgent:  # released while waiting: this frame is the one it asked for
                        self._urgent = False
            last = get_time()
            count += 1
            try:
                await self._tick(next_timer=last, count=count)
            except EventTargetGone:
                break
