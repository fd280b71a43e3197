"""Bounded fuzzing (hypothesis) of every loader and of recommend() (issue 10).

Four targets: the config loader (text and structured YAML), the catalog overlay loader (followed by
a recommendation on the merged catalog), the Hugging Face config.json reader (followed by a
recommendation on that model), and ``recommend()`` on generated valid configs, extremes included.
Any exception other than GpuwizError fails, so does an example that takes over 2 s (hypothesis
deadline; a SIGALRM watchdog turns a real hang into a failure too), and so does a NaN / Infinity
anywhere in the JSON output.

Budgets: ``budget(ci=..., long=...)`` examples per target: the CI numbers in the test suite, the long
ones from ``bench/fuzz_long.py`` (GPUWIZ_FUZZ=long, GPUWIZ_FUZZ_SCALE to scale them).
Inputs that found bugs are kept as ``@example`` regression cases.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import string
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, event, example, given, note, settings
from hypothesis import strategies as st

from gpuwiz.core.catalog import load_catalog
from gpuwiz.core.config_io import loads_config
from gpuwiz.core.errors import GpuwizError
from gpuwiz.core.hf import read_hf_config
from gpuwiz.core.models import Requirements
from gpuwiz.core.recommend import recommend
from gpuwiz.core.report import render_recommendation

_COMMON = dict(deadline=timedelta(milliseconds=int(os.environ.get("GPUWIZ_FUZZ_DEADLINE_MS", "2000"))),
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                      HealthCheck.filter_too_much, HealthCheck.function_scoped_fixture],
               derandomize=True, print_blob=True)
LONG = os.environ.get("GPUWIZ_FUZZ") == "long"
if LONG:  # bench/fuzz_long.py: random (not derandomized) and many more examples
    _COMMON["derandomize"] = False


def budget(ci: int, long: int) -> settings:
    """Examples per target: ``ci`` in the test suite, ``long`` from bench/fuzz_long.py."""
    return settings(max_examples=int(long * float(os.environ.get("GPUWIZ_FUZZ_SCALE", "1"))) if LONG else ci,
                    **_COMMON)  # type: ignore[arg-type]


HANG_S = 30  # watchdog: a real hang (the deadline only fires after a call returns)


class Hang(Exception):
    pass


@contextmanager
def watchdog(seconds: int = HANG_S) -> Iterator[None]:
    def fire(signum: int, frame: Any) -> None:
        raise Hang(f"no answer after {seconds} s")

    old = signal.signal(signal.SIGALRM, fire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


CAT = load_catalog()
GOOD = Requirements.model_validate({"model": {"preset": "llama-2-7b"}, "data": {"tokens": 1e9}})


def strict_json(text: str) -> Any:
    def refuse(name: str) -> Any:
        raise AssertionError(f"non-finite number {name} in the JSON output")

    return json.loads(text, parse_constant=refuse)


def check_recommendation(req: Requirements, catalog: Any = CAT) -> None:
    """recommend() answers or refuses with GpuwizError; every rendering works; JSON is finite."""
    try:
        rec = recommend(req, catalog)
    except GpuwizError as exc:
        assert str(exc).strip() and all(line.strip() for line in str(exc).splitlines())
        return
    strict_json(render_recommendation(rec, req, "json"))
    render_recommendation(rec, req, "text")
    render_recommendation(rec, req, "md")


def only_gpuwiz_errors(fn: Callable[[], Any]) -> Any:
    try:
        with watchdog():
            return fn()
    except GpuwizError as exc:
        text = str(exc)
        assert text and all(line.strip() and "\n" not in line for line in text.splitlines()), text
        assert "Traceback" not in text
        return None


# ---- values: everything YAML and JSON can say, extremes first ------------------------------------

HOSTILE_FLOATS = st.sampled_from([0.0, -0.0, 1e-300, 5e-324, -1.0, 1e300, 1.7976931348623157e308,
                                  float("nan"), float("inf"), float("-inf"), 0.5, 1e16, 1e17, 2.5])
HOSTILE_INTS = st.sampled_from([0, -1, 1, 2, 72, 73, 100_000, 100_001, 2**53 + 1, 2**63, 10**30, -(10**30)])
HOSTILE_STRINGS = st.sampled_from(["", " ", "2T", "1e999", "NaN", "inf", "-inf", "1,5", "0x10", "1_000", "~",
                                   "\x1b[2J", "[b]bold[/b]", "[@click=app.quit]x[/]", "\u202e", "é", "✓", "a" * 300,
                                   "yes", "no", "null", "2024-01-01", "!!python/name:os.system", "../../etc/passwd"])
scalars = st.one_of(st.none(), st.booleans(), HOSTILE_INTS, st.integers(), HOSTILE_FLOATS, st.floats(),
                    HOSTILE_STRINGS, st.text(max_size=20))


def _nested(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Lists and mappings of ``inner`` (a named function: hypothesis reads a multi-line lambda's source wrongly
    and warned that it did not use its argument)."""
    return st.lists(inner, max_size=3) | st.dictionaries(
        st.text(string.ascii_lowercase + "_", min_size=1, max_size=12), inner, max_size=3)


values = st.recursive(scalars, _nested, max_leaves=8)


def _section_keys() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for name, field in Requirements.model_fields.items():
        ann = field.annotation
        for cand in getattr(ann, "__args__", (ann,)):
            if isinstance(cand, type) and hasattr(cand, "model_fields"):
                out[name] = list(cand.model_fields)
    return out


SECTIONS = _section_keys()


@st.composite
def config_data(draw: st.DrawFn) -> dict[str, Any]:
    """A config dict with real section and key names and hostile values (some keys misspelt)."""
    data: dict[str, Any] = {"version": draw(st.sampled_from([1, 1, 1, "1", 2, None, True, 1.0]))}
    for section in draw(st.lists(st.sampled_from(sorted(SECTIONS)), max_size=4, unique=True)):
        keys = draw(st.lists(st.sampled_from(SECTIONS[section]), max_size=4, unique=True))
        data[section] = {k: draw(values) for k in keys}
    if draw(st.booleans()):
        data.setdefault("model", {})["preset"] = draw(st.sampled_from([m.id for m in CAT.models]))
    if draw(st.booleans()):
        data.setdefault("data", {})["tokens"] = draw(st.one_of(HOSTILE_FLOATS, HOSTILE_STRINGS, st.just(1e9)))
    return data


def _yaml(data: Any) -> str:
    return yaml.safe_dump(data, allow_unicode=True, sort_keys=False)


# ---- 1. the config loader -------------------------------------------------------------------------


@budget(ci=300, long=50_000)
@given(text=st.text(alphabet=st.characters(codec="utf-8"), max_size=300))
@example(text="version: 1\ntraining:\n  flash_attention: !!bool maybe\n")
@example(text="version: 1\nschedule:\n  deadline_days: !!timestamp yesterday\n")
@example(text="version: 1\ndata:\n  tokens: !!float\n")
@example(text="version: 1\ntraining:\n  global_batch: !!int " + "9" * 5000 + "\n")
@example(text="version: !!float one\n")
def test_fuzz_config_text(text):
    only_gpuwiz_errors(lambda: loads_config(text, "fuzz.yaml", catalog=CAT))


@budget(ci=200, long=20_000)
@given(data=config_data())
@example(data={"version": 1, "model": {"preset": "llama-2-7b"}, "data": {"tokens": 1e-300}})
@example(data={"version": 1, "model": {"params_b": 5e-324}, "data": {"tokens": 1e9}})
def test_fuzz_config_structured(data):
    note(repr(data))
    req = only_gpuwiz_errors(lambda: loads_config(_yaml(data), "fuzz.yaml", catalog=CAT))
    event("config accepted" if req is not None else "config refused (GpuwizError)")
    if req is not None:
        with watchdog():
            check_recommendation(req)


# ---- 2. the overlay loader (then a recommendation on the merged catalog) ---------------------------

_ENTRIES: list[tuple[str, ...]] = (
    [("gpus", g.id) for g in CAT.gpus[:: max(1, len(CAT.gpus) // 6)]]
    + [("models", m.id) for m in CAT.models[:3]]
    + [("cloud_instances", c.id) for c in CAT.cloud_instances[:: max(1, len(CAT.cloud_instances) // 4)]]
    + [("platforms", "chassis", c.id) for c in CAT.platforms.chassis[:3]]
    + [("platforms", "cpus", c.id) for c in CAT.platforms.cpus[:2]]
    + [("storage", CAT.storage[0].id), ("network", CAT.network[0].id)]
)


def _fields(where: tuple[str, ...]) -> list[str]:
    from gpuwiz.core import catalog as c

    cls = {"gpus": c.GPU, "models": c.ModelPreset, "cloud_instances": c.CloudInstance, "storage": c.StorageTier,
           "network": c.NetworkOption, "chassis": c.Chassis, "cpus": c.CPU}[where[-2]]
    return [f for f in cls.model_fields if f not in ("source", "as_of", "notes")]


def _current(where: tuple[str, ...], field: str) -> Any:
    node: Any = CAT.platforms if where[0] == "platforms" else CAT
    for entry in getattr(node, where[-2]):
        if entry.id == where[-1]:
            return getattr(entry, field)
    return None


def _plausible(where: tuple[str, ...], field: str) -> st.SearchStrategy[Any]:
    """The entry's own number scaled by 1e-3 .. 1e3 (valid often enough to reach recommend())."""
    cur = _current(where, field)
    if hasattr(cur, "model_dump"):  # a nested section (a vision model's layer list): as YAML writes it
        cur = cur.model_dump(mode="json")
    if isinstance(cur, bool) or not isinstance(cur, (int, float)):
        return st.just(cur)
    factor = st.sampled_from([1e-3, 0.1, 0.5, 0.9, 1.1, 2.0, 10.0, 1e3])
    return factor.map(lambda k: type(cur)(cur * k) if isinstance(cur, float) else max(1, int(cur * k)))


@st.composite
def overlays(draw: st.DrawFn) -> dict[str, Any]:
    over: dict[str, Any] = {}
    for _ in range(draw(st.integers(1, 3))):
        if draw(st.integers(0, 3)) == 0:  # a facility value
            key = draw(st.sampled_from(sorted(CAT.facility)))
            over.setdefault("facility", {})[key] = {"value": draw(st.one_of(HOSTILE_FLOATS, HOSTILE_INTS, scalars))}
            continue
        where = draw(st.sampled_from(_ENTRIES))
        fields = draw(st.lists(st.sampled_from(_fields(where)), min_size=1, max_size=3, unique=True))
        entry: dict[str, Any] = {"id": where[-1]}
        if draw(st.integers(0, 9)) == 0:
            entry["id"] = draw(st.one_of(scalars, st.lists(scalars, max_size=2)))
        for f in fields:
            plausible = _plausible(where, f)  # weighted 3:1 so that a good share reaches recommend()
            entry[f] = draw(st.one_of(plausible, plausible, plausible, HOSTILE_FLOATS, HOSTILE_INTS, scalars))
        if where[0] == "platforms":
            over.setdefault("platforms", {}).setdefault(where[1], []).append(entry)
        else:
            over.setdefault(where[0], []).append(entry)
    return over


_TMP = Path(tempfile.mkdtemp(prefix="gpuwiz-fuzz-"))
atexit.register(shutil.rmtree, _TMP, True)  # (each run left its inputs, ~2 MB a worker, in the temp folder)
_COUNTER = [0]


def _write(text: str | bytes, suffix: str) -> Path:
    _COUNTER[0] += 1
    p = _TMP / f"in-{os.getpid()}-{_COUNTER[0]}{suffix}"  # a new name each time: no stale cache entry
    p.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    return p


@budget(ci=100, long=5_000)
@given(over=overlays())
@example(over={"gpus": [{"id": ["h100-sxm", "a100"], "name": "x"}]})
@example(over={"facility": {"depreciation_years": {"value": 0}}})
@example(over={"facility": {"electricity_usd_per_kwh": {"value": -1}}})
@example(over={"gpus": [{"id": "h100-sxm", "tdp_w": 1e308}]})
@example(over={"gpus": [{"id": "h100-sxm", "nvlink_gbps": 1e-310}]})
@example(over={"facility": {"residual_value_frac": {"value": 7}}})
@example(over={"facility": {"cloud_setup_hours": {"value": -2}}})  # negative rent cost: no ranking floor
def test_fuzz_overlay(over):
    note(repr(over))
    path = _write(_yaml(over), ".yaml")
    cat = only_gpuwiz_errors(lambda: load_catalog(path))
    event("overlay accepted" if cat is not None else "overlay refused (GpuwizError)")
    if cat is not None:
        with watchdog():
            check_recommendation(GOOD, cat)


# ---- 3. the Hugging Face config.json reader (then a recommendation on that model) -----------------

HF_BASE = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "num_hidden_layers": 4,
           "hidden_size": 512, "num_attention_heads": 8, "num_key_value_heads": 8, "intermediate_size": 1024,
           "vocab_size": 32000, "max_position_embeddings": 2048, "rms_norm_eps": 1e-5}
HF_KEYS = sorted(set(HF_BASE) | {"n_layer", "n_embd", "n_head", "n_inner", "n_positions", "head_dim",
                                 "num_local_experts", "num_experts_per_tok", "moe_intermediate_size",
                                 "tie_word_embeddings", "hidden_act", "text_config", "_name_or_path",
                                 "type_vocab_size", "mlp_bias", "attention_bias"})
HF_INTS = st.one_of(HOSTILE_INTS, st.integers(-5, 200_000), st.sampled_from([10**18, 10**19]))


@st.composite
def hf_configs(draw: st.DrawFn) -> str:
    data: dict[str, Any] = dict(HF_BASE) if draw(st.integers(0, 3)) else {}
    for k in draw(st.lists(st.sampled_from(HF_KEYS), max_size=5, unique=True)):
        plausible = st.integers(1, 8192)  # weighted 3:1, as for overlays
        data[k] = draw(st.one_of(plausible, plausible, plausible, HF_INTS, values))
    text = json.dumps(data)
    if draw(st.integers(0, 7)) == 0:  # the JSON extensions Python accepts, and huge literals
        text = text.replace("4", draw(st.sampled_from(["NaN", "Infinity", "-Infinity", "1e999", "9" * 400])), 1)
    return text


@budget(ci=100, long=5_000)
@given(text=hf_configs())
@example(text='{"model_type": "llama", "num_hidden_layers": NaN}')
@example(text='{"architectures": 5}')
@example(text='{"architectures": "LlamaForCausalLM", "model_type": "llama"}')
@example(text='{"model_type": "llama", "hidden_size": ' + "9" * 400 + "}")
@example(text='{"x": ' + "[" * 50_000 + "]" * 50_000 + "}")
@example(text=json.dumps({**HF_BASE, "hidden_size": 10**18}))
def test_fuzz_hf_config(text):
    note(text[:500])
    path = _write(text, ".json")
    arch = only_gpuwiz_errors(lambda: read_hf_config(path))
    event("config.json accepted" if arch is not None else "config.json refused (GpuwizError)")
    if arch is not None:
        req = Requirements.model_validate({"model": {"hf_config": str(path)}, "data": {"tokens": 1e9}})
        with watchdog():
            check_recommendation(req)


# ---- 4. recommend() on valid configs, extremes included -------------------------------------------


def finite(lo: float, hi: float) -> st.SearchStrategy[float]:
    return st.floats(min_value=lo, max_value=hi, allow_nan=False, allow_infinity=False)


valid_configs = st.fixed_dictionaries({
    "model": st.one_of(
        st.fixed_dictionaries({"preset": st.sampled_from([m.id for m in CAT.models])}),
        st.fixed_dictionaries({"params_b": finite(1e-9, 100_000), "family": st.sampled_from(["decoder", "moe"])}).map(
            lambda d: {**d, **({"experts": 8, "top_k": 2} if d["family"] == "moe" else {})}),
    ),
    "data": st.one_of(st.fixed_dictionaries({"tokens": finite(1e-300, 1e16)}),
                      st.fixed_dictionaries({"samples": finite(1e-300, 1e13)})),
}, optional={
    "training": st.fixed_dictionaries({}, optional={
        "method": st.sampled_from(["pretrain", "full", "lora", "qlora"]),
        "precision": st.sampled_from(["fp32", "tf32", "fp16", "bf16", "fp8"]),
        "micro_batch": st.integers(1, 1_000_000), "global_batch": st.integers(1, 100_000_000)}),
    "schedule": st.fixed_dictionaries({}, optional={
        "runs_per_month": finite(1e-300, 10_000), "deadline_days": finite(1e-300, 3650)}),
    "deployment": st.fixed_dictionaries({}, optional={
        "mode": st.sampled_from(["rent", "buy", "either"]),
        "budget_usd": finite(1e-300, 1e11), "horizon_years": finite(1e-300, 15),
        "electricity_usd_per_kwh": finite(0, 10), "headroom": finite(0, 0.9)}),
    "hardware": st.fixed_dictionaries({"gpu": st.sampled_from([g.id for g in CAT.gpus])},
                                      optional={"count": st.integers(1, 100_000), "gpus_per_node": st.integers(1, 72)}),
    "calibration": st.fixed_dictionaries({}, optional={
        "tokens_per_s_per_gpu": finite(1e-300, 1e9), "mfu": finite(1e-300, 1.0),
        "peak_memory_gib": finite(1e-300, 10_000)}),
})


@budget(ci=100, long=5_000)
@given(data=valid_configs)
@example(data={"model": {"preset": "llama-2-7b"}, "data": {"tokens": 1e-300}})
@example(data={"model": {"params_b": 1e-9, "family": "decoder"}, "data": {"samples": 5e-324}})
@example(data={"model": {"preset": "llama-2-7b"}, "data": {"tokens": 1e16},
               "schedule": {"deadline_days": 1e-300}, "deployment": {"horizon_years": 1e-300}})
@example(data={"model": {"preset": "llama-2-7b"}, "data": {"tokens": 1e9}, "calibration": {"peak_memory_gib": 1e-300}})
def test_fuzz_recommend(data):
    note(repr(data))
    try:
        req = Requirements.model_validate(data)
    except ValueError:  # the strategy can combine values the schema refuses (pydantic ValidationError)
        return
    with watchdog():
        check_recommendation(req)

