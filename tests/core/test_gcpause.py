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


def test_what_a_pause_leaves_goes_to_the_oldest_generation_unvisited(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    monkeypatch.setattr(gc, "collect", lambda generation=2: calls.append(generation) or 0)
    with gcpause.paused():
        kept = [[i] for i in range(5000)]  # past the youngest generation's threshold
    assert gc.isenabled() and calls == []  # no young collection walked them
    assert gc.get_count()[0] < gc.get_threshold()[0]  # ... and none is due for them
    oldest = {id(o) for o in gc.get_objects(generation=2)}
    assert all(id(x) in oldest for x in kept[::97]) and id(kept) in oldest
    assert gc.get_freeze_count() == 0  # moved through the permanent generation, not left in it


def test_nothing_due_nothing_moved(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    monkeypatch.setattr(gc, "collect", lambda generation=2: calls.append("collect") or 0)
    monkeypatch.setattr(gc, "freeze", lambda: calls.append("freeze"))
    gc.enable()
    with gcpause.paused():
        pass
    assert calls == []


def test_objects_the_process_froze_stay_frozen(monkeypatch: pytest.MonkeyPatch) -> None:
    """A process that froze objects of its own (gc.freeze before a fork): an unfreeze would thaw them, so the
    pause makes the young collection instead."""
    real_collect = gc.collect
    calls: list[int] = []

    def spy(generation: int = 2) -> int:
        calls.append(generation)
        return real_collect(generation)

    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        assert frozen > 0
        monkeypatch.setattr(gc, "collect", spy)
        with gcpause.paused():
            kept = [[i] for i in range(5000)]
        assert calls == [0] and gc.get_freeze_count() == frozen and len(kept) == 5000
    finally:
        gc.unfreeze()


def test_answers_leave_no_reference_cycles(cat: Catalog) -> None:
    """What a pause leaves is not walked by a young collection (above): an answer must leave no cycle, or its
    garbage would wait for a full collection. Every example, recommended and estimated."""
    from gpuwiz.core.config_io import load_config

    examples = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.yaml"))
    assert len(examples) >= 4
    recommend(load_config(examples[0]), cat)  # the engine's modules imported (a slots dataclass leaves its first class)
    for path in examples:
        req = load_config(path)
        memo.clear()
        gc.collect()
        rec = recommend(req, cat)
        if rec.found:
            estimate(req, cat, rec.build.gpu)
        assert gc.collect() == 0, path.name


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
        before = sum(type(o) is Node for o in gc.get_objects())
    gc.collect()
    after = sum(type(o) is Node for o in gc.get_objects())
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


def test_a_process_that_keeps_its_heap_frozen_freezes_what_a_pause_leaves(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real_collect = gc.collect
    monkeypatch.setattr(gc, "collect", lambda generation=2: calls.append(generation) or real_collect(generation))
    gc.freeze()  # the process's own long-lived objects
    frozen = gc.get_freeze_count()
    gcpause.keep_frozen()
    try:
        with gcpause.paused():
            kept = [[i] for i in range(5000)]
        assert calls == [] and gc.get_freeze_count() >= frozen + len(kept)  # joined the frozen ones, unvisited
    finally:
        gcpause.keep_frozen(False)
        gc.unfreeze()


def test_sweep_frees_a_cycle_among_frozen_objects() -> None:
    class Node:
        pass

    gcpause.keep_frozen()
    try:
        with gcpause.paused():
            for _ in range(1000):  # past the youngest generation's threshold: the pause freezes them
                a, b = Node(), Node()
                a.other, b.other = b, a  # type: ignore[attr-defined]
            del a, b
        assert sum(type(o) is Node for o in gc.get_objects()) == 0  # frozen: out of the collector's sight
        assert gc.get_freeze_count() >= 2000
        assert gcpause.sweep() >= 2000 and gc.get_freeze_count() > 0  # freed, and the rest frozen again
    finally:
        gcpause.keep_frozen(False)
        gc.unfreeze()
    gc.collect()
    assert sum(type(o) is Node for o in gc.get_objects()) == 0


def test_a_headless_command_keeps_its_heap_frozen_in_its_own_process(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """``gpuwiz recommend`` in its own process: after its inputs are loaded, an answer's objects join the frozen
    ones (gcpause.keep_frozen); called in-process (argv given, as here), the caller's collector is left as it was."""
    import json
    import subprocess
    import sys

    from gpuwiz import cli

    example = Path(__file__).resolve().parents[2] / "examples" / "small-team-lora-7b.yaml"
    code = ("import sys, gc\nsys.argv = ['gpuwiz', 'recommend', sys.argv[1], '--format', 'json', '-o', sys.argv[2]]\n"
            "from gpuwiz import cli\nfrom gpuwiz.core import gcpause\nrc = cli._main()\n"
            "print(rc, gcpause._keep_frozen, gc.get_freeze_count() > 0)\n")
    out_json = tmp_path / "rec.json"
    proc = subprocess.run([sys.executable, "-c", code, str(example), str(out_json)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split()[-3:] == ["0", "True", "True"]
    assert json.loads(out_json.read_text(encoding="utf-8"))["found"] is True
    assert cli._main(["recommend", str(example), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["found"] is True and not gcpause._keep_frozen
