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


class HoldClock(Clock):
    """Also the wait for a release: other tasks run first (the release may come), else the timeout passes."""

    def __init__(self) -> None:
        super().__init__()
        self.waits: list[float] = []

    async def wait_event(self, event: asyncio.Event, timeout: float) -> None:
        self.waits.append(timeout)
        for _ in range(50):
            if event.is_set():
                return
            await asyncio.sleep(0)
        self.now += timeout


@pytest.fixture
def hold_clock(monkeypatch: pytest.MonkeyPatch) -> HoldClock:
    c = HoldClock()
    monkeypatch.setattr(frames, "get_time", c.get_time)
    monkeypatch.setattr(frames, "sleep", c.sleep)
    monkeypatch.setattr(frames, "wait_event", c.wait_event)
    return c


def test_a_held_frame_waits_for_its_release_then_goes_at_once(hold_clock: HoldClock) -> None:
    """A typed key whose answer is on its way: its character and the answer in one frame, painted
    when the answer is in, not an interval after the last frame."""
    async def scenario() -> None:
        timer = Recorder(Target(), INTERVAL, pause=True)
        timer._start()
        try:
            timer.resume()
            await _until(lambda: len(timer.ticks) == 1)  # an earlier frame (the cursor's blink)
            hold_clock.now += 0.002
            timer.hold(0.010)
            timer.resume()  # the typed character asks for a frame
            await _until(lambda: hold_clock.waits == [pytest.approx(0.010)])
            assert len(timer.ticks) == 1  # held
            hold_clock.now += 0.003
            timer.release()  # the answer is in: one frame for both
            await _until(lambda: len(timer.ticks) == 2)
            assert timer.ticks[1] == pytest.approx(100.005)  # 5 ms after the last frame: no interval wait
            assert hold_clock.sleeps == [] and not timer.holding
        finally:
            timer.stop()

    asyncio.run(scenario())


def test_a_hold_ends_at_its_deadline_and_the_late_answer_is_painted_as_soon_as_it_comes(
        hold_clock: HoldClock) -> None:
    async def scenario() -> None:
        timer = Recorder(Target(), INTERVAL, pause=True)
        timer._start()
        try:
            timer.hold(0.010)
            timer.resume()
            await _until(lambda: len(timer.ticks) == 1)
            assert timer.ticks[0] == pytest.approx(100.010)  # the character waited 10 ms, no more
            assert timer.holding  # its answer has not come yet
            hold_clock.now += 0.004  # it comes 4 ms after that frame
            timer.release()
            timer.resume()
            await _until(lambda: len(timer.ticks) == 2)
            assert timer.ticks[1] == pytest.approx(100.014)  # at once, not an interval after the character
            assert hold_clock.sleeps == []
            hold_clock.now += 0.001  # the next change (no answer awaited) keeps the interval
            timer.release()  # a release without a hold changes nothing
            timer.resume()
            await _until(lambda: len(timer.ticks) == 3)
            assert timer.ticks[2] == pytest.approx(100.014 + INTERVAL)
            assert hold_clock.sleeps == [pytest.approx(INTERVAL - 0.001)]
        finally:
            timer.stop()

    asyncio.run(scenario())


def test_the_hold_follows_the_engines_recent_answer_times() -> None:
    """Fast answers (memo hits, a small model): the short hold. Answers of 8-13 ms (a 70B config's
    new values): long enough for the slowest and its way back, so character and answer share a
    frame. Never longer than HOLD_MAX_S, whatever the engine took."""
    assert frames.hold_for([]) == frames.HOLD_S
    assert frames.hold_for([0.1, 2.0, 5.2]) == frames.HOLD_S
    assert frames.hold_for([0.1, 11.3, 8.4, 12.5]) == pytest.approx(0.0125 + frames.ANSWER_OVERHEAD_S)
    assert frames.HOLD_S < 0.0125 + frames.ANSWER_OVERHEAD_S < frames.HOLD_MAX_S
    assert frames.hold_for([250.0]) == frames.HOLD_MAX_S
