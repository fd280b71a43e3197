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
import json
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from hashlib import blake2b
from typing import TYPE_CHECKING, Any

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
_plans: OrderedDict[tuple[int, str], tuple[Catalog, Candidates, Caches]] = OrderedDict()
_lock = threading.Lock()  # the TUI runs the engine in a worker thread


def _exclude() -> dict[str, Any]:
    return {k: (True if v is None else dict.fromkeys(v, True)) for k, v in PRICE_ONLY.items()}


def plan_key(req: Requirements) -> str:
    """Digest of every requirement the per-candidate plan may read (all fields but PRICE_ONLY)."""
    doc = req.model_dump(mode="json", exclude=_exclude())
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"), allow_nan=True)
    return blake2b(text.encode("utf-8"), digest_size=20).hexdigest()


def candidates(req: Requirements, cat: Catalog, ctx: Context | None = None) -> Candidates | None:
    """The memo of per-candidate quick() results for this plan key and catalog (empty at first), or
    None when memoisation is off. The caller stores into it what it computes.

    With ``ctx`` (prepared from ``req``), the context's own lookup tables (the ``_*`` dict fields of
    ``estimate.Context``: layouts, memory tables, GPU factors, host limits, stack choices -- all keyed
    on plan inputs) are replaced by the ones earlier contexts of this plan key filled, so the full
    estimates of the finalists do not rebuild them either."""
    if not enabled:
        return None
    key = (id(cat), plan_key(req))  # the entry holds the catalog, so its id is not reused meanwhile
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
            _share_tables(ctx, hit[2])
        return hit[1]


def _share_tables(ctx: Context, shared: Caches) -> None:
    for f in dataclasses.fields(ctx):
        if f.name.startswith("_") and isinstance(table := getattr(ctx, f.name), dict):
            setattr(ctx, f.name, shared.setdefault(f.name, table))


def clear() -> None:
    with _lock:
        _plans.clear()


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
