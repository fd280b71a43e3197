"""core.gcpause: the collector is off while an answer computes and back as it was afterwards."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path

import pytest

from gpuwiz.core import catalog as catmod
from gpuwiz.core import gcpause, memo
from gpuwiz.core.catalog import Catalog, load_catalog
from gpuwiz.core.estimate import estimate
from gpuwiz.core.models import Requirements
from gpuwiz.core.recommend import recommend


@pytest.fixture(autouse=True)
def _collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_off_inside_back_on_after_even_on_error() -> None:
    with gcpause.paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(ZeroDivisionError), gcpause.paused():
        1 / 0  # noqa: B018
    assert gc.isenabled()


def test_nested_holds_until_the_outer_one_ends() -> None:
    with gcpause.paused():
        with gcpause.paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the inner end does not turn it back on under the outer one
    assert gc.isenabled()


def test_without_collect_no_young_collection_is_made(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    monkeypatch.setattr(gc, "collect", lambda generation=2: calls.append(generation) or 0)
    with gcpause.paused(collect=False):
        kept = [[i] for i in range(5000)]  # past the youngest generation's threshold
    assert gc.isenabled() and calls == []
    with gcpause.paused():
        more = [[i] for i in range(5000)]
    assert calls == [0] and len(kept) == len(more)


def test_a_catalog_restored_inside_an_answer_leaves_the_collector_off(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The catalog's cache hit holds the collector through the same mechanism: loaded while an answer
    computes (the TUI's engine thread), it does not turn the collector back on under that answer."""
    monkeypatch.setenv("GPUWIZ_CACHE_DIR", str(tmp_path))
    catmod._load_cached.cache_clear()
    load_catalog()  # writes the cache entry
    catmod._load_cached.cache_clear()
    with gcpause.paused():
        load_catalog()  # a cache hit
        assert not gc.isenabled()
    assert gc.isenabled()
    catmod._load_cached.cache_clear()


def test_a_collector_the_caller_turned_off_stays_off() -> None:
    gc.disable()
    with gcpause.paused():
        pass
    assert not gc.isenabled()


def test_overlapping_threads_share_one_hold() -> None:
    inside, release = threading.Event(), threading.Event()

    def other() -> None:
        with gcpause.paused():
            inside.set()
            release.wait(10)

    t = threading.Thread(target=other)
    with gcpause.paused():
        t.start()
        assert inside.wait(10)
    assert not gc.isenabled()  # the other thread's answer is still computing
    release.set()
    t.join(10)
    assert gc.isenabled()


def test_cycles_made_while_paused_are_freed_after() -> None:
    class Node:
        pass

    with gcpause.paused():
        for _ in range(2000):  # past the youngest generation's threshold (700 by default)
            a, b = Node(), Node()
            a.other, b.other = b, a  # type: ignore[attr-defined]
        del a, b
        before = sum(isinstance(o, Node) for o in gc.get_objects())
    gc.collect()
    after = sum(isinstance(o, Node) for o in gc.get_objects())
    assert before >= 4000 > after == 0


@pytest.fixture(scope="module")
def cat() -> Catalog:
    return load_catalog()


def test_engine_calls_pause_and_resume(cat: Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[bool] = []
    real = gcpause.paused

    def spy() -> AbstractContextManager[None]:
        seen.append(gc.isenabled())
        return real()

    monkeypatch.setattr(gcpause, "paused", spy)
    req = Requirements.model_validate({"model": {"preset": "llama-3-8b"}, "training": {"method": "qlora"},
                                       "data": {"tokens": 3e8}, "schedule": {"deadline_days": 30}})
    memo.clear()  # a new answer, not one an earlier test left in the answers table
    rec = recommend(req, cat)
    assert rec.found and gc.isenabled()
    estimate(req, cat, "a100-80gb-sxm")
    assert seen == [True, True] and gc.isenabled()
