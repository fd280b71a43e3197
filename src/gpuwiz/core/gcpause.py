"""The cyclic garbage collector held off while the engine computes one answer.

CPython's cyclic collector runs every 700 net allocations of container objects and, every 10th and
100th time, walks the older generations too: the catalog's objects and the memo tables. An answer
allocates tens of thousands of short-lived tuples, dicts and dataclass instances that reference
counting frees at once, so almost none of those collections finds anything, yet they cost a large
share of a cold answer (measured with gc.callbacks on this project's 2-core machine, 2026-12-06: 70B
pretrain 7.9 ms of 21.6 ms in 13 collections; small-team-lora-7b 3.5 ms in 5.5 collections).

``paused()`` turns the collector off for the answer and, as it ends, runs one collection of the
youngest generation: what the answer left behind (its memo entries, the answer itself) is looked at
once, inside the answer's own time, and reference cycles, if any, are freed as they would have been.
Nested and concurrent uses (the TUI's engine thread beside the UI thread) share one hold: the
collector comes back when the last one ends, and only if it was on before the first began.
``paused(collect=False)`` leaves out that collection, for work whose new objects all live on (the
catalog restored from its cache: ~15k of them, none garbage); the collector then runs when next due.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0
_was_enabled = False


@contextmanager
def paused(collect: bool = True) -> Iterator[None]:
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
                # the young collection the paused allocations would have triggered, made while the collector
                # is still off (once it is on, the next allocation would start one of its own first)
                if collect and gc.get_count()[0] > gc.get_threshold()[0]:
                    gc.collect(0)
                gc.enable()
