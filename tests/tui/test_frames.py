"""The screens' frame clock (gpuwiz.tui.frames.FrameTimer): a change is painted at once when the
last frame is an interval old, and never sooner than an interval after it. A fake clock: no timing."""

from __future__ import annotations

import asyncio

import pytest

from gpuwiz.tui import frames
from gpuwiz.tui.frames import FrameTimer

INTERVAL = 1 / 60


class Clock:
    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []

    def get_time(self) -> float:
        return self.now

    async def sleep(self, secs: float) -> None:
        self.sleeps.append(secs)
        self.now += secs
        await asyncio.sleep(0)


class Target:  # what a timer points at (held by weak reference)
    pass


class Recorder(FrameTimer):
    """Records each tick and pauses, as Screen._on_timer_update does."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.ticks: list[float] = []

    async def _tick(self, *, next_timer: float, count: int) -> None:
        self.ticks.append(next_timer)
        self.pause()


async def _until(cond: object, turns: int = 1000) -> None:
    for _ in range(turns):
        if cond():  # type: ignore[operator]
            return
        await asyncio.sleep(0)
    raise AssertionError("the timer did not tick")


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    c = Clock()
    monkeypatch.setattr(frames, "get_time", c.get_time)
    monkeypatch.setattr(frames, "sleep", c.sleep)
    return c


def test_a_change_after_a_quiet_spell_is_painted_at_once_and_a_quick_second_one_an_interval_later(
        clock: Clock) -> None:
    async def scenario() -> None:
        target = Target()
        timer = Recorder(target, INTERVAL, pause=True)
        timer._start()
        try:
            await asyncio.sleep(0)
            assert timer.ticks == []  # paused: no frame until something changes
            timer.resume()  # the first change: painted at once
            await _until(lambda: len(timer.ticks) == 1)
            assert timer.ticks[0] == 100.0 and clock.sleeps == []
            clock.now += 0.005  # a second change 5 ms after that frame: waits for the interval
            timer.resume()
            await _until(lambda: len(timer.ticks) == 2)
            assert timer.ticks[1] == pytest.approx(100.0 + INTERVAL)
            assert clock.sleeps == [pytest.approx(INTERVAL - 0.005)]
            clock.now += 0.020  # 20 ms after the last frame (Textual's own clock waited for the slot
            timer.resume()  # after next here, up to 33 ms): painted at once
            await _until(lambda: len(timer.ticks) == 3)
            assert timer.ticks[2] == pytest.approx(100.0 + INTERVAL + 0.020)
            assert len(clock.sleeps) == 1
        finally:
            timer.stop()

    asyncio.run(scenario())


def test_a_change_painted_meanwhile_does_not_tick_again(clock: Clock) -> None:
    async def scenario() -> None:
        timer = Recorder(Target(), INTERVAL, pause=True)
        timer._start()
        try:
            timer.resume()
            await _until(lambda: len(timer.ticks) == 1)
            clock.now += 0.001
            timer.resume()  # a change soon after: the clock sleeps out the interval...
            await asyncio.sleep(0)
            timer.pause()  # ...while a layout pass paints it (Screen._refresh_layout pauses the clock)
            for _ in range(20):
                await asyncio.sleep(0)
            assert len(timer.ticks) == 1  # no frame for nothing
        finally:
            timer.stop()

    asyncio.run(scenario())
