"""Memo of per-candidate plans across recommend() calls: a keystroke that changes only what a run
costs re-prices the candidates without re-planning them.

What the estimator's fast path (``estimate.quick``) computes for one GPU x count -- the parallel
plan, memory per GPU, step time, throughput -- depends on the model, the training setup, the
hardware / calibration sections and ``deployment.headroom``, never on how much data there is, on
the schedule or on money. The data size enters the answer only through the run time, which
``estimate.requote`` recomputes from the memoised throughput with the same formula (so the numbers
are bit-identical to a fresh run; tests/core/test_memo.py runs both engines on every example and
scenario and compares the JSON).

The key is derived from the requirements themselves: every field, minus ``PRICE_ONLY`` (the fields
the plan does not read). A new field anywhere is in the key until someone proves it price-only;
the test changes each ``PRICE_ONLY`` field and checks that the plans are unchanged, and changes
every other field and checks that the key changes. The memo is bounded (``MAX_PLANS`` keys, least
recently used dropped first) and tied to one catalog object (a catalog is immutable; a new one --
an edited overlay -- starts a new entry).
"""

from __future__ import annotations

import dataclasses
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from hashlib import blake2b
from typing import TYPE_CHECKING, Any, TypeVar

from gpuwiz.i18n import current_language

T = TypeVar("T")

if TYPE_CHECKING:
    from gpuwiz.core.catalog import Catalog
    from gpuwiz.core.estimate import Context, QuickResult
    from gpuwiz.core.models import Requirements

# Fields of Requirements the per-candidate plan never reads (None: the whole section).
PRICE_ONLY: dict[str, set[str] | None] = {
    "data": None,  # only the run time depends on it: requoted, not re-planned
    "schedule": None,
    "have": None,  # owned hardware is priced by core.owned, outside the search
    "deployment": {
        "mode", "objective", "budget_usd", "horizon_years", "electricity_usd_per_kwh", "country",
        "data_sensitivity", "regions", "currency", "site", "pue", "colo_usd_per_kw_month",
        "staff_usd_per_year", "utilization", "used_hardware", "require_cuda",
    },  # everything but headroom: which candidates are allowed is decided in recommend, not in the plan
}
MAX_PLANS = 16  # distinct plan keys kept (a wizard session edits one config; suggestions try a few more)
MAX_CANDIDATES = 20_000  # per plan key; a search visits ~100-1,500

enabled = True  # the differential test turns it off to run the engine exactly as without a memo

Candidates = dict[tuple[str, int, int], "QuickResult"]
Caches = dict[str, dict[Any, Any]]
_plans: OrderedDict[tuple[int, str, str], tuple[Catalog, Candidates, Caches]] = OrderedDict()
_lock = threading.Lock()  # the TUI runs the engine in a worker thread


def _exclude() -> dict[str, Any]:
    return {k: (True if v is None else dict.fromkeys(v, True)) for k, v in PRICE_ONLY.items()}


def plan_key(req: Requirements) -> str:
    """Digest of every requirement the per-candidate plan may read (all fields but PRICE_ONLY): of their JSON as
    pydantic writes it, fields in the models' order (no requirement field is a dict or a set, whose order could
    vary; every float is finite, so none is written as null)."""
    return blake2b(req.model_dump_json(exclude=_exclude()).encode("utf-8"), digest_size=20).hexdigest()


def candidates(req: Requirements, cat: Catalog, ctx: Context | None = None) -> Candidates | None:
    """The memo of per-candidate quick() results for this plan key and catalog (empty at first), or
    None when memoisation is off. The caller stores into it what it computes.

    With ``ctx`` (prepared from ``req``), the context's own lookup tables (the ``_*`` dict fields of
    ``estimate.Context``: layouts, memory tables, GPU factors, host limits, stack choices -- all keyed
    on plan inputs) are replaced by the ones earlier contexts of this plan key filled, so the full
    estimates of the finalists do not rebuild them either."""
    hit = entry(req, cat, ctx)
    return hit[0] if hit is not None else None


def entry(req: Requirements, cat: Catalog, ctx: Context | None = None) -> tuple[Candidates, Caches] | None:
    """``candidates`` and the plan key's other tables (``Caches``: the context's lookup tables, and
    the caller's own per-candidate tables under names of its choosing), or None when off."""
    if not enabled:
        return None
    # The entry holds the catalog, so its id is not reused meanwhile. The language is in the key:
    # cached results may carry sentences (a plan's reasons, a BOM's notes) in the language of the
    # call that made them.
    key = (id(cat), plan_key(req), current_language())
    with _lock:
        hit = _plans.get(key)
        if hit is not None and hit[0] is cat:
            _plans.move_to_end(key)
            if len(hit[1]) > MAX_CANDIDATES:
                hit[1].clear()
                hit[2].clear()
        else:
            hit = (cat, {}, {})
            _plans[key] = hit
            while len(_plans) > MAX_PLANS:
                _plans.popitem(last=False)
        if ctx is not None:
            share_tables(ctx, hit[2])
        return hit[1], hit[2]


def share_tables(ctx: Context, shared: Caches) -> None:
    """Give ``ctx`` the lookup tables (its ``_*`` dict fields) earlier contexts of its plan key filled
    (``shared``, the plan key's ``Caches``), and keep its own where none was filled yet."""
    for f in dataclasses.fields(ctx):
        if f.name.startswith("_") and isinstance(table := getattr(ctx, f.name), dict):
            setattr(ctx, f.name, shared.setdefault(f.name, table))


def clear() -> None:
    """Forget every request-dependent result now: the plan keys' entries and the per-catalog tables
    (``table``; not the ``catalog_only`` ones). The entries are freed here, not by the next answer."""
    with _lock:
        _plans.clear()
        tables = list(_tables)
    for t in tables:
        if not t.catalog_only:
            with t.lock:
                t.data.clear()


# ---- bounded per-catalog tables of pure functions' results ------------------------------------
# The pricing and sizing steps (cost.cheapest_rate, system.size_system, ...) are pure functions of
# the catalog and a few requirement fields; their tables live on the catalog (``Catalog.derived``:
# a new catalog starts empty ones), each bounded (oldest dropped first), emptied by
# ``clear``, and bypassed while the memo is ``disabled`` (the differential test). A caller's key is
# every argument the function reads.

MISS: Any = object()  # what ``Lru.get`` returns for a key it does not hold
_tables: weakref.WeakSet[Lru] = weakref.WeakSet()  # every table made (``clear`` empties them; a catalog's go with it)


class Lru:
    """A bounded mapping: past ``maxsize`` entries the oldest one is dropped. Reads and stores take no lock
    (a dict read or store is atomic); dropping the oldest does (the TUI may run the engine in a worker
    thread: two threads must not both read the same oldest key and delete it twice)."""

    __slots__ = ("__weakref__", "catalog_only", "data", "find", "lock", "maxsize")

    def __init__(self, maxsize: int, catalog_only: bool = False) -> None:
        self.data: dict[Any, Any] = {}
        # ``find(key, MISS)``: ``get`` as the dict's own method (no Python frame: the pricing asks a few hundred
        # times an answer)
        self.find: Callable[[Any, Any], Any] = self.data.get
        self.maxsize = maxsize
        self.catalog_only = catalog_only
        self.lock = threading.Lock()
        _tables.add(self)

    def get(self, key: Any) -> Any:
        return self.data.get(key, MISS)

    def put(self, key: Any, value: Any) -> None:
        data = self.data
        data[key] = value  # (one dict store: atomic; the lock guards the eviction's read-then-delete)
        if len(data) > self.maxsize:
            with self.lock:
                while len(data) > self.maxsize:
                    data.pop(next(iter(data)), None)


def table(cat: Catalog, name: str, maxsize: int = 4096, catalog_only: bool = False) -> Lru | None:
    """The bounded table ``name`` of this catalog, or None while the memo is off. ``catalog_only``:
    its keys hold no requirement field (a GPU's chassis options, an export rule), so ``clear``
    leaves it (like the catalog's other derived tables)."""
    if not enabled:
        return None
    d = cat.derived
    name_key = ("memo", name, current_language())  # a cached value may hold translated text
    t = d.get(name_key)
    if t is None:
        t = d.setdefault(name_key, Lru(maxsize, catalog_only))
    return t  # type: ignore[no-any-return]


def cached(cat: Catalog, name: str, key: Any, compute: Callable[[], T], *, maxsize: int = 4096,
           catalog_only: bool = False) -> T:
    """``compute()`` through the table ``name`` (see ``table``): the stored value for ``key``, else
    computed and stored; computed every time while the memo is off."""
    tbl = table(cat, name, maxsize, catalog_only)
    hit = tbl.find(key, MISS) if tbl is not None else MISS
    if hit is MISS:
        hit = compute()
        if tbl is not None:
            tbl.put(key, hit)
    return hit  # type: ignore[no-any-return]


@contextmanager
def disabled() -> Iterator[None]:
    """Run the engine without the memo (and leave the memo as it was)."""
    global enabled
    saved = enabled
    enabled = False
    try:
        yield
    finally:
        enabled = saved
