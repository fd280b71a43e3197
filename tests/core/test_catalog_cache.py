"""The on-disk validated-catalog cache: a hit, a miss, a stale or corrupt entry, an unwritable folder and
concurrent writers all give the same Catalog as validating the YAML from scratch."""

from __future__ import annotations

import hashlib
import marshal
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import get_args

import pytest
from pydantic import BaseModel

from gpuwiz.core import cache
from gpuwiz.core import catalog as catmod
from gpuwiz.core.catalog import Catalog, load_catalog

OVERLAY = "gpus:\n- id: h100-sxm\n  price_new_usd: {price}\n  price_new_observed: '2026-11'\n"


def _fresh(overlay: Path | None = None) -> Catalog:
    """Validated from the YAML, bypassing every cache."""
    if overlay is None:
        return catmod._validated(None, None)
    return catmod._validated(str(overlay), overlay.read_text(encoding="utf-8"))


def _forget() -> None:
    """Drop the in-process caches, as a new process would start."""
    catmod._load_cached.cache_clear()
    catmod._builtin_raw.cache_clear()


def _parsed_yaml() -> bool:
    return catmod._builtin_raw.cache_info().currsize > 0


def _entries(folder: Path) -> list[Path]:
    return sorted(folder.glob("catalog-*.cache"))


def _key(entry: Path) -> str:
    return entry.name.removeprefix("catalog-").removesuffix(".cache")


def _same(a: Catalog, b: Catalog) -> None:
    assert a == b
    assert a.model_dump_json() == b.model_dump_json()  # same values and the same types (80 vs 80.0)


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    folder = tmp_path / "cache"
    monkeypatch.setenv(cache.ENV_CACHE_DIR, str(folder))
    _forget()
    yield folder
    _forget()


def test_miss_writes_then_hit_skips_the_yaml(cache_dir: Path) -> None:
    first = load_catalog()
    assert _parsed_yaml()  # a miss parses and validates the YAML
    assert len(_entries(cache_dir)) == 1
    _forget()
    second = load_catalog()
    assert not _parsed_yaml()  # served from the cache file
    _same(second, first)
    _same(second, _fresh())
    assert second.gpu("h100-sxm") == first.gpu("h100-sxm") and second.fac("pue") == first.fac("pue")


def test_overlay_edit_is_never_served_stale(cache_dir: Path, tmp_path: Path) -> None:
    over = tmp_path / "prices.yaml"
    over.write_text(OVERLAY.format(price=21000), encoding="utf-8")
    assert load_catalog(over).gpu("h100-sxm").price_new_usd == 21000
    _forget()
    assert load_catalog(over).gpu("h100-sxm").price_new_usd == 21000
    assert not _parsed_yaml()
    # same size, and the in-process cache still holds the old one: the content key tells them apart
    over.write_text(OVERLAY.format(price=23000), encoding="utf-8")
    edited = load_catalog(over)
    assert edited.gpu("h100-sxm").price_new_usd == 23000
    _same(edited, _fresh(over))
    _forget()
    _same(load_catalog(over), _fresh(over))
    # the built-in catalog and each overlay version have their own entry
    assert len(_entries(cache_dir)) == 2


@pytest.mark.parametrize("damage", ["garbage", "truncated", "flipped", "other-key", "empty", "not-marshal",
                                    "not-a-catalog"])
def test_corrupt_entry_is_rebuilt(cache_dir: Path, damage: str) -> None:
    good = load_catalog()
    (entry,) = _entries(cache_dir)
    raw = entry.read_bytes()
    header, _, payload = raw.partition(b"\n")
    if damage == "garbage":
        entry.write_bytes(b"\x00\xff not a cache file")
    elif damage == "truncated":
        entry.write_bytes(raw[: len(raw) // 2])
    elif damage == "flipped":  # one bit of one byte changed in the payload: the digest catches it
        at = len(header) + 1 + len(payload) // 2
        entry.write_bytes(raw[:at] + bytes([raw[at] ^ 0x01]) + raw[at + 1:])
        assert entry.read_bytes() != raw and len(entry.read_bytes()) == len(raw)
    elif damage == "other-key":  # a whole, valid entry filed under the wrong key
        cache.write_bytes("catalog", "0000", payload)
        entry.write_bytes((cache_dir / "catalog-0000.cache").read_bytes())
    elif damage == "empty":
        entry.write_bytes(b"")
    elif damage == "not-marshal":  # header and digest right, payload not marshal data
        cache.write_bytes("catalog", _key(entry), b"\xff\x00 not marshal")
        assert header != entry.read_bytes().partition(b"\n")[0]
    else:  # header and digest right, payload marshal data but not a catalog
        cache.write_bytes("catalog", _key(entry), marshal.dumps({"gpus": "nope"}))
    _forget()
    again = load_catalog()
    assert _parsed_yaml()  # the damaged entry was not served
    _same(again, good)
    _forget()
    load_catalog()
    assert not _parsed_yaml()  # and it was rewritten whole
    assert entry.read_bytes() == raw


def test_unwritable_cache_dir_falls_back_silently(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder", encoding="utf-8")
    monkeypatch.setenv(cache.ENV_CACHE_DIR, str(blocker / "cache"))  # cannot be created, even as root
    _forget()
    try:
        _same(load_catalog(), _fresh())
        assert cache.write_bytes("catalog", "k", b"{}") is False
        assert cache.read_bytes("catalog", "k") is None
    finally:
        _forget()


def test_old_entries_are_pruned(cache_dir: Path) -> None:
    cache_dir.mkdir(parents=True)
    (cache_dir / "catalog-old.json").write_text("{}", encoding="utf-8")  # a format-1 entry
    for i in range(cache.MAX_ENTRIES + 5):
        assert cache.write_bytes("catalog", f"k{i:02d}", b"{}")
    assert len(_entries(cache_dir)) == cache.MAX_ENTRIES
    assert cache.read_bytes("catalog", f"k{cache.MAX_ENTRIES + 4:02d}") == b"{}"
    assert not (cache_dir / "catalog-old.json").exists()


PROBE = """
import hashlib, sys
from gpuwiz.core.catalog import load_catalog
print(hashlib.sha256(load_catalog(sys.argv[1] if len(sys.argv) > 1 else None).model_dump_json().encode()).hexdigest())
"""


def test_concurrent_writers_leave_one_good_entry(cache_dir: Path, tmp_path: Path) -> None:
    over = tmp_path / "prices.yaml"
    over.write_text(OVERLAY.format(price=19999), encoding="utf-8")
    env = {**os.environ, cache.ENV_CACHE_DIR: str(cache_dir)}
    procs = [subprocess.Popen([sys.executable, "-c", PROBE, *([str(over)] if i % 2 else [])], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(6)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err for _, err in outs]
    want = {hashlib.sha256(_fresh().model_dump_json().encode()).hexdigest(),
            hashlib.sha256(_fresh(over).model_dump_json().encode()).hexdigest()}
    assert {out.strip() for out, _ in outs} == want
    assert len(_entries(cache_dir)) == 2
    assert not list(cache_dir.glob(".*.tmp"))  # no temporary files left behind
    fresh, fresh_over = _fresh(), _fresh(over)
    _forget()
    served, served_over = load_catalog(), load_catalog(over)
    assert not _parsed_yaml()  # both entries the writers left are whole and served
    _same(served, fresh)
    _same(served_over, fresh_over)


def test_a_cache_hit_keeps_the_usd_rate_of_offers_priced_in_another_currency(cache_dir: Path) -> None:
    # The USD rate of a CNY/EUR offer is a private attribute set at validation; a catalog served from
    # the cache file must get it too, or yuan are read as dollars.
    first = load_catalog()
    _forget()
    second = load_catalog()
    assert not _parsed_yaml()
    foreign = [i for i in second.cloud_instances if i.currency != "USD"]
    assert foreign  # the built-in catalog has CNY offers
    for inst in foreign:
        rate = second.fx[inst.currency].usd_per_unit
        assert inst.usd_rate == rate != 1.0
        assert inst.price_usd_per_hour == pytest.approx(inst.price_per_hour * rate)
    assert [i.price_usd_per_hour for i in second.cloud_instances] == [
        i.price_usd_per_hour for i in first.cloud_instances]


# ---- the fast path: a cache hit builds the models without validating them (catalog._from_cache) ----


def _same_deep(a: object, b: object, where: str = "catalog") -> None:
    """Same values, same types and the same model_fields_set at every level (the engine reads which
    fields an entry set: hardware._merge overrides only those)."""
    from pydantic import BaseModel

    assert type(a) is type(b), where
    if isinstance(a, BaseModel):
        assert isinstance(b, BaseModel)
        assert a.model_fields_set == b.model_fields_set, (where, a.model_fields_set ^ b.model_fields_set)
        for name in type(a).model_fields:
            _same_deep(getattr(a, name), getattr(b, name), f"{where}.{name}")
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _same_deep(x, y, f"{where}[{i}]")
    elif isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), where
        for k in a:
            _same_deep(a[k], b[k], f"{where}[{k}]")
    else:
        assert a == b, (where, a, b)


def test_hit_equals_validation_down_to_the_fields_each_entry_set(cache_dir: Path) -> None:
    load_catalog()
    _forget()
    served = load_catalog()
    assert not _parsed_yaml()
    _same_deep(served, _fresh())


def test_hit_gives_the_same_answers_as_a_validated_catalog(cache_dir: Path) -> None:
    """The regression the fields-set check guards: a cache that dropped model_fields_set changed
    perf overrides (unset fields overrode the architecture's values) and so the recommendation."""
    from gpuwiz.core.config_io import load_config
    from gpuwiz.core.recommend import recommend

    load_catalog()
    _forget()
    served = load_catalog()
    assert not _parsed_yaml()
    fresh = _fresh()
    for path in sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.yaml")):
        req = load_config(path)
        assert recommend(req, served).model_dump_json() == recommend(req, fresh).model_dump_json(), path.name


def test_hit_restores_the_usd_rate_of_a_non_usd_offer(cache_dir: Path, tmp_path: Path) -> None:
    over = tmp_path / "cny.yaml"
    over.write_text(
        "cloud_instances:\n"
        "- {id: x-cny, provider: P, instance_type: t, gpu: h100-sxm, gpu_count: 1, country: CN,\n"
        "   tier: hyperscaler, currency: CNY, price_per_hour: 100, source: s,\n"
        "   observed: '2026-11', retrieved: '2026-11'}\n", encoding="utf-8")
    first = next(i for i in load_catalog(over).cloud_instances if i.id == "x-cny")
    _forget()
    cat = load_catalog(over)
    assert not _parsed_yaml()
    served = next(i for i in cat.cloud_instances if i.id == "x-cny")
    assert served.usd_rate == first.usd_rate == cat.fx["CNY"].usd_per_unit != 1.0
    assert served.price_usd_per_hour == first.price_usd_per_hour


def _bad_payloads(payload: bytes) -> dict[str, bytes]:
    """Payloads with the right header and checksum that are not this schema's catalog."""
    fmt, names, tree = marshal.loads(payload)
    renamed = [(m, q + "X" if q == "GPU" else q, f, n) for m, q, f, n in names]
    fewer_fields = [(m, q, f[:-1] if q == "GPU" else f, n) for m, q, f, n in names]

    def first_gpu(change: object) -> object:  # the catalog with its first GPU object changed
        values = dict(tree[1])
        gpus = list(values["gpus"])
        gpus[0] = change(gpus[0])  # type: ignore[operator]
        values["gpus"] = gpus
        return (tree[0], values, tree[2], tree[3])

    def drop_value(g: tuple[object, ...]) -> object:
        state = dict(g[1])  # type: ignore[call-overload]
        state.popitem()
        return (g[0], state, *g[2:])

    return {
        "a mapping": marshal.dumps({"gpus": "nope"}), "a list": marshal.dumps([]),
        "another format": marshal.dumps(("gpuwiz-catalog-marshal 1", names, tree)),
        "a class of another name": marshal.dumps((fmt, renamed, tree)),
        "other field names": marshal.dumps((fmt, fewer_fields, tree)),
        "an object with a value missing": marshal.dumps((fmt, names, first_gpu(drop_value))),
        "an object without its fields set": marshal.dumps((fmt, names, first_gpu(lambda g: (*g[:2],)))),
        "fields set not a set": marshal.dumps((fmt, names, first_gpu(lambda g: (*g[:2], tuple(g[2]), g[3])))),
        "values not a mapping": marshal.dumps((fmt, names, first_gpu(lambda g: (g[0], tuple(g[1].values()), *g[2:])))),
        "private values not a mapping": marshal.dumps((fmt, names, first_gpu(lambda g: (*g[:3], [1.0])))),
        "not a catalog at the top": marshal.dumps((fmt, names, tree[1]["gpus"][0])),
        "no such module": marshal.dumps((fmt, [("gpuwiz.core.nope", *n[1:]) for n in names], tree)),
    }


def test_a_payload_without_the_catalog_shape_is_not_served(cache_dir: Path) -> None:
    good = load_catalog()
    (entry,) = _entries(cache_dir)
    bad = _bad_payloads(entry.read_bytes().partition(b"\n")[2])
    for what, payload in bad.items():
        assert cache.write_bytes("catalog", _key(entry), payload)
        _forget()
        _same(load_catalog(), good)
        assert _parsed_yaml(), what  # rebuilt from the YAML


def _schema_classes(root: type[BaseModel]) -> list[type[BaseModel]]:
    """``root`` and every model class reachable through its field annotations."""
    out: list[type[BaseModel]] = []
    todo = [root]
    while todo:
        cls = todo.pop()
        if cls in out:
            continue
        out.append(cls)
        for f in cls.model_fields.values():
            stack = [f.annotation]
            while stack:
                t = stack.pop()
                if isinstance(t, type) and issubclass(t, BaseModel):
                    todo.append(t)
                stack.extend(get_args(t))
    return out


def test_the_schema_module_list_is_the_walk() -> None:
    walked = {c.__module__ for c in _schema_classes(Catalog)}
    assert walked == set(catmod.SCHEMA_MODULES)


def test_cache_key_covers_every_module_of_the_schema() -> None:
    from gpuwiz.core import hardware, stacks

    files = {sys.modules[c.__module__].__file__ for c in _schema_classes(Catalog)}
    assert {catmod.__file__, hardware.__file__, stacks.__file__} <= files


# ---- the built-in catalog keyed by its files' stamp, not their contents (catalog.file_stamp) ------------

@pytest.fixture
def own_catalog(cache_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A copy of catalog.yaml the test may edit, standing in for the built-in one."""
    path = tmp_path / "catalog.yaml"
    path.write_bytes(catmod._builtin_path().read_bytes())
    monkeypatch.setattr(catmod, "_builtin_path", lambda: path)
    _forget_all()
    yield path
    _forget_all()


def _forget_all() -> None:
    """As a new process: also the built-in catalog's key and text."""
    _forget()
    catmod._builtin_digest.cache_clear()
    catmod._builtin_bytes.cache_clear()


def test_a_file_changed_just_now_has_no_stamp(tmp_path: Path) -> None:
    f = tmp_path / "x.yaml"
    f.write_text("a: 1\n", encoding="utf-8")
    assert catmod.file_stamp([str(f)]) is None  # within the kernel clock's tick: hash the contents
    st = f.stat()
    old = st.st_mtime_ns - 10 * catmod.STAMP_SETTLE_NS
    os.utime(f, ns=(old, old))  # an old mtime does not help: the change time is now
    assert catmod.file_stamp([str(f)]) is None


def test_a_settled_catalog_is_served_by_its_stamp(own_catalog: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(catmod, "STAMP_SETTLE_NS", -(10 ** 18))  # every file counts as settled
    first = load_catalog()
    assert _parsed_yaml()
    _forget_all()
    _same(load_catalog(), first)
    assert not _parsed_yaml()  # served from the entry filed under the stamp


@pytest.mark.parametrize("settled", [True, False])
def test_an_edit_that_keeps_size_and_mtime_is_never_served_stale(
        own_catalog: Path, monkeypatch: pytest.MonkeyPatch, settled: bool) -> None:
    if settled:
        monkeypatch.setattr(catmod, "STAMP_SETTLE_NS", -(10 ** 18))
    before = load_catalog().gpu("h100-sxm").price_new_usd
    text = own_catalog.read_text(encoding="utf-8")
    at = text.index("id: h100-sxm")
    at = text.index("price_new_usd: ", at) + len("price_new_usd: ")
    digit = text[at]
    edited = text[:at] + ("2" if digit != "2" else "3") + text[at + 1:]
    assert len(edited) == len(text)
    st = own_catalog.stat()
    deadline = time.monotonic() + 30
    while own_catalog.stat().st_ctime_ns == st.st_ctime_ns:  # wait for the next tick of the file clock
        assert time.monotonic() < deadline
        own_catalog.write_text(edited, encoding="utf-8")
    os.utime(own_catalog, ns=(st.st_atime_ns, st.st_mtime_ns))  # same size, same mtime as before the edit
    assert own_catalog.stat().st_size == st.st_size and own_catalog.stat().st_mtime_ns == st.st_mtime_ns
    _forget_all()
    after = load_catalog().gpu("h100-sxm").price_new_usd
    assert _parsed_yaml() and after != before
    _same(load_catalog(), catmod._validated(None, None))


# ---- entries that set the same fields share one fields set (catalog._to_cache) ---------------------------


def _served(cache_dir: Path) -> Catalog:
    load_catalog()
    _forget()
    served = load_catalog()
    assert not _parsed_yaml()
    return served


def test_a_shared_fields_set_never_changes_with_a_copy_or_an_assignment(cache_dir: Path) -> None:
    served = _served(cache_dir)
    by_set: dict[frozenset[str], list[catmod.GPU]] = {}
    for g in served.gpus:
        by_set.setdefault(frozenset(g.model_fields_set), []).append(g)
    a, b = next(gs for gs in by_set.values() if len(gs) > 1)[:2]
    assert a.model_fields_set is b.model_fields_set  # one set object: the mechanism under test
    before = set(b.model_fields_set)
    unset = next(n for n in type(a).model_fields if n not in a.model_fields_set)
    copied = a.model_copy(update={unset: getattr(a, unset)})
    assert unset in copied.model_fields_set
    with pytest.raises(ValueError, match="frozen"):
        a.name = "renamed"  # type: ignore[misc]
    assert a.model_fields_set == b.model_fields_set == before  # neither the copy nor the refusal leaked
    assert copied.model_fields_set is not a.model_fields_set


def test_an_entry_of_a_class_that_is_not_frozen_gets_its_own_fields_set(
        cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    load_catalog()
    (entry,) = _entries(cache_dir)
    payload = entry.read_bytes().partition(b"\n")[2]
    shared = catmod._from_cache(payload)
    assert len({id(g.model_fields_set) for g in shared.gpus}) < len(shared.gpus)
    monkeypatch.setitem(catmod.GPU.model_config, "frozen", False)  # an assignment would add to the set
    own = catmod._from_cache(payload)
    assert len({id(g.model_fields_set) for g in own.gpus}) == len(own.gpus)
    _same_deep(own, shared)


def test_digest_is_blake2b_for_small_inputs_and_sha256_for_large_ones() -> None:
    def framed(*parts: bytes) -> bytes:
        return b"".join(len(p).to_bytes(8, "little") + p for p in parts)

    small = (b"gpuwiz-catalog-stamp", b"0.1", b"x" * 100)
    assert cache.digest(*small) == hashlib.blake2b(framed(*small), digest_size=32).hexdigest()
    large = (b"gpuwiz-catalog", b"y" * cache.SMALL_DIGEST_BYTES)
    assert cache.digest(*large) == hashlib.sha256(framed(*large)).hexdigest()
    assert len(cache.digest(*small)) == len(cache.digest(*large)) == 64
    assert cache.digest(b"ab", b"c") != cache.digest(b"a", b"bc")  # length-prefixed, in both regimes
    assert cache.digest(b"ab" * 40000, b"c") != cache.digest(b"ab" * 40000 + b"c")
