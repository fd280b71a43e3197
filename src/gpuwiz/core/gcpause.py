"""The cyclic garbage collector held off while the engine computes one answer.

CPython's cyclic collector runs every 700 net allocations of container objects and, every 10th and
100th time, walks the older generations too: the catalog's objects and the memo tables. An answer
allocates tens of thousands of short-lived tuples, dicts and dataclass instances that reference
counting frees at once, so almost none of those collections finds anything, yet they cost a large
share of a cold answer (measured with gc.callbacks on this project's 2-core machine, 2026-12-06: 70B
pretrain 7.9 ms of 21.6 ms in 13 collections; small-team-lora-7b 3.5 ms in 5.5 collections).

``paused()`` turns the collector off for the answer. What the answer leaves behind -- its memo entries
and the answer itself, ~5,000 container objects on small-team-lora-7b -- lives on, and holds no
reference cycle (tests/core/test_gcpause.py checks every example). As the pause ends, those objects are
moved into the oldest generation (``gc.freeze()`` then ``gc.unfreeze()``: two list splices, no object
visited) instead of being walked by a young collection: that collection, over objects long out of the
CPU's caches, cost 0.7-1.1 ms an answer and freed nothing (interleaved in one process, 2026-12-06:
small-team-lora-7b 10.6 -> 9.8 ms, 70B 15.8 -> 14.3 ms, p25 of 150 answers each, the same as with no
collector at all). A cycle made meanwhile by other code is freed by the next full collection, not by
the next young one. Where the process has frozen objects of its own (``gc.get_freeze_count()``), an
unfreeze would thaw them too: there the young collection is made instead, as before -- unless the process
said its heap is the engine's (``keep_frozen``: the headless commands, the wizard's engine child), where
what a pause leaves joins the frozen objects. Nested and
concurrent uses (the TUI's engine thread beside the UI thread) share one hold: the collector comes back
when the last one ends, and only if it was on before the first began.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0
_was_enabled = False
_keep_frozen = False  # keep_frozen(): a process whose heap is the engine's


def keep_frozen(on: bool = True) -> None:
    """For a process that froze its long-lived objects itself and runs nothing but the engine besides them (a
    headless command, the wizard's engine child): what a pause leaves joins the frozen objects (``gc.freeze``,
    one list splice) -- neither walked by a young collection nor thawing the process's own frozen objects. A
    cycle among them would then wait for ``sweep``: the engine makes none (tests/core/test_gcpause.py)."""
    global _keep_frozen
    _keep_frozen = on


def sweep() -> int:
    """Free what is unreachable among the frozen objects too (a full collection), and freeze the rest again:
    for a ``keep_frozen`` process's idle time. Returns the objects found unreachable."""
    with _lock:
        gc.unfreeze()
        try:
            return gc.collect()
        finally:
            gc.freeze()


@contextmanager
def paused() -> Iterator[None]:
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                _settle()
                gc.enable()


def _settle() -> None:
    """With the collector off: what a young collection would be due for (more new container objects than
    its threshold) goes to the oldest generation unvisited, or, where the process froze objects of its own,
    is collected (see the module's docstring). Nothing when none is due."""
    if gc.get_count()[0] <= gc.get_threshold()[0]:
        return
    if _keep_frozen:
        gc.freeze()
    elif gc.get_freeze_count() == 0:
        gc.freeze()
        gc.unfreeze()
    else:
        gc.collect(0)
