"""Result types are plain typed classes (issue 16) that dump to the JSON pydantic gave (core/models.Result)."""

from __future__ import annotations

import json
import math

import pytest
from pydantic import BaseModel

from gpuwiz.core import models
from gpuwiz.core.models import BomLine, Memory, MemoryBreakdown, Range, Recommendation, Result


def _results() -> list[type]:
    return [c for c in vars(models).values() if isinstance(c, type) and issubclass(c, Result) and c is not Result]


def test_results_build_no_pydantic_schema():
    found = _results()
    assert {"Estimate", "Recommendation", "Build", "CostAnalysis", "Plan"} <= {c.__name__ for c in found}
    assert not any(issubclass(c, BaseModel) for c in found)
    assert issubclass(models.Requirements, BaseModel)  # inputs stay validated


def test_json_dump_gives_the_types_the_annotations_name():
    b = BomLine(item="x", qty=2.0, unit_usd=3, total_usd=None)  # a whole float for an int, an int for a float
    d = b.model_dump(mode="json")
    assert d == {"item": "x", "qty": 2, "unit_usd": 3.0, "total_usd": None, "note": ""}
    assert type(d["qty"]) is int and type(d["unit_usd"]) is float
    assert json.dumps(d) == '{"item": "x", "qty": 2, "unit_usd": 3.0, "total_usd": null, "note": ""}'
    r = Range(low=math.inf, high=math.nan)
    assert r.model_dump(mode="json") == {"low": None, "high": None}  # as pydantic: non-finite -> null
    assert math.isinf(r.model_dump()["low"])


def test_nested_results_dump_as_dicts_and_defaults_are_fresh():
    mem = Memory(per_gpu_gib=1, capacity_gib=80.0, usable_gib=72.0, breakdown=MemoryBreakdown(weights=1),
                 fits=True, headroom_frac=0.5, per_gpu_gib_range=Range(low=1, high=2))
    d = mem.model_dump(mode="json")
    assert d["breakdown"] == {"weights": 1.0, "gradients": 0.0, "optimizer": 0.0, "activations": 0.0, "overhead": 0.0}
    assert d["per_gpu_gib_range"] == {"low": 1.0, "high": 2.0} and d["per_gpu_gib"] == 1.0
    assert list(d) == list(Memory._names)  # field order = declaration order (the JSON's key order)
    a, b = Recommendation(objective="cheapest", found=False), Recommendation(objective="cheapest", found=False)
    assert a.pitfalls == [] and a.pitfalls is not b.pitfalls
    assert json.loads(a.model_dump_json())["dropped"] == {}


def test_frozen_compared_by_value_and_copied_like_pydantic():
    r = Range(low=1.0, high=2.0)
    with pytest.raises(AttributeError):
        r.low = 3.0  # type: ignore[misc]
    assert r == Range(low=1.0, high=2.0) and hash(r) == hash(Range(low=1.0, high=2.0))
    assert r != Range(low=1.0, high=2.5)
    c = r.model_copy(update={"high": 4.0})
    assert (c.low, c.high, r.high) == (1.0, 4.0, 2.0)
    assert repr(c) == "Range(low=1.0, high=4.0)"
    with pytest.raises(TypeError):
        r.model_copy(update={"middle": 1.5})
    with pytest.raises(TypeError):
        Range(low=1.0)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Range(low=1.0, high=2.0, middle=1.5)  # type: ignore[call-arg]


def test_dump_plans_read_the_annotations_typing_reads() -> None:
    """The dump plan's cheap annotation reader (models._own_hints) gives what typing.get_type_hints gives,
    for every result class the engine defines."""
    import typing

    import gpuwiz.core.estimate
    import gpuwiz.core.recommend  # noqa: F401 - their result classes
    from gpuwiz.core import models

    todo, seen = [models.Result], []
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        seen.append(cls)
    assert len(seen) > 20
    for cls in seen[1:]:
        want = typing.get_type_hints(cls)
        assert models._own_hints(cls) == {n: want[n] for n in cls._names}, cls.__name__
