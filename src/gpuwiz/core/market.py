"""Markets: which cloud offers a user may rent, which export rule applies, and local economics.

Pure and deterministic. The facts are catalog data (``cloud_instances`` country/region/tier,
``export_rules``, ``economics``, ``fx``); this module holds the mechanisms:

- **Residency** (``deployment.data_sensitivity``): ``regulated`` data stays in the user's
  jurisdiction -- the EU/EEA is one (GDPR applies across it), Great Britain is its own (UK GDPR),
  mainland China excludes Hong Kong and Macau (PIPL/DSL cross-border rules apply to HK/MO as to any
  other place outside the mainland), every other country is its own. ``confidential`` data never
  goes to a community marketplace host (a stranger's machine). ``internal`` / ``public`` may go
  anywhere; the trade-off is stated (:func:`tradeoff`).
- **Regions** (``deployment.regions``): ISO country codes or provider region ids; an offer must
  match one of them.
- **Export control**: rules on *buying* hardware and on *remote (cloud) access* are separate
  facts; :func:`purchase_rule` and :func:`remote_rule` say which one applies to a user and a GPU.
- **Local economics**: :func:`economics` gives electricity, PUE, colocation, staff, VAT and duty
  for ``deployment.country`` in USD, falling back to the facility defaults (and saying so).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from gpuwiz.core import memo
from gpuwiz.core.catalog import (
    GPU,
    Catalog,
    CloudInstance,
    CountryEconomics,
    ExportRule,
)
from gpuwiz.core.models import CurrencyInfo, ExportFact, MarketStatus, Requirements
from gpuwiz.i18n import N_, _

# EU member states + EEA (Iceland, Liechtenstein, Norway): one area for GDPR transfers.
EU_EEA = frozenset({
    "AT", "BE", "BG", "HR", "CY", "CZ", "DK", "EE", "FI", "FR", "DE", "GR", "HU", "IE", "IT", "LV",
    "LT", "LU", "MT", "NL", "PL", "PT", "RO", "SK", "SI", "ES", "SE", "IS", "LI", "NO",
})

Rule = Literal["ok", "out-of-jurisdiction", "community-host", "not-in-regions"]


def jurisdiction(country: str) -> str:
    """The data-protection area a country belongs to: ``EU`` for the EU/EEA, else the country
    itself (so GB, CN, HK and MO are each their own)."""
    c = country.upper()
    return "EU" if c in EU_EEA else c


_JURISDICTION_NAMES = {"EU": N_("the EU/EEA"), "CN": N_("mainland China"), "GB": N_("the UK"), "US": N_("the US")}


def jurisdiction_name(country: str, exact: bool = False) -> str:
    """The data-protection area of a country (or of an area code, ``EU``) as a sentence names it; ``exact``: where
    the short name leaves a doubt, the long one (mainland China: not Hong Kong or Macao, each its own area)."""
    j = jurisdiction(country)
    if exact and j == "CN":
        return _("mainland China (not HK/MO)")
    name = _JURISDICTION_NAMES.get(j)
    return _(name) if name else j


@dataclass(frozen=True)
class OfferCheck:
    ok: bool
    rule: Rule


def check_offer(req: Requirements, inst: CloudInstance) -> OfferCheck:
    """May this user put this workload's data on this offer?"""
    d = req.deployment
    if d.regions:
        wanted = {r.upper() for r in d.regions}
        if inst.country.upper() not in wanted and inst.region.upper() not in wanted:
            return OfferCheck(False, "not-in-regions")
    if d.data_sensitivity == "regulated" and jurisdiction(inst.country) != jurisdiction(d.country):
        return OfferCheck(False, "out-of-jurisdiction")
    if d.data_sensitivity in ("regulated", "confidential") and inst.tier == "marketplace-community":
        return OfferCheck(False, "community-host")
    return OfferCheck(True, "ok")


def policy_key(req: Requirements) -> tuple[object, ...]:
    """Every requirement field ``check_offer`` reads (a memo key for per-offer results)."""
    d = req.deployment
    return (tuple(d.regions) if d.regions else None, d.data_sensitivity, d.country)


def refuses_none(req: Requirements) -> bool:
    """``check_offer`` allows every offer for ``req``: no regions asked, public or internal data."""
    d = req.deployment
    return not d.regions and d.data_sensitivity not in ("regulated", "confidential")


def eligible(req: Requirements, inst: CloudInstance) -> bool:
    if refuses_none(req):
        return True  # (the pricing asks this of every offer of every GPU)
    return check_offer(req, inst).ok


def tradeoff(req: Requirements, inst: CloudInstance) -> str | None:
    """What the user accepts by renting this offer with internal/public data (None: nothing to say)."""
    d = req.deployment
    if d.data_sensitivity not in ("internal", "public"):
        return None
    if inst.tier == "marketplace-community":
        return _("community marketplace host: the machine's owner can read the disk and memory")
    if jurisdiction(inst.country) != jurisdiction(d.country):
        return _("data leaves {where} (offer in {country})").format(where=jurisdiction_name(d.country),
                                                                  country=inst.country)
    return None


# ---- export control ------------------------------------------------------------------------------


def _applies(rule: ExportRule, country: str, gpu: GPU) -> bool:
    if country.upper() not in {c.upper() for c in rule.destinations}:
        return False
    return rule.applies_to == "all-gpus" or gpu.export_restricted


def purchase_rule(cat: Catalog, country: str, gpu: GPU) -> ExportRule | None:
    """The rule on shipping / buying this GPU for a site in ``country`` (None: no rule applies)."""
    return memo.cached(cat, "purchase_rule", (gpu.id, country), lambda: _purchase_rule(cat, country, gpu),
                       catalog_only=True)


def _purchase_rule(cat: Catalog, country: str, gpu: GPU) -> ExportRule | None:
    for r in cat.export_rules:
        if r.kind == "hardware-purchase" and _applies(r, country, gpu):
            return r
    if not cat.export_rules and gpu.export_restricted and country.upper() in {
            c.upper() for c in cat.export_controlled_countries}:
        return ExportRule(id="export-controlled-countries", kind="hardware-purchase", authority="catalog",
                          destinations=list(cat.export_controlled_countries), applies_to="export-restricted-gpus",
                          effect="license-required",
                          summary="export_controlled_countries (no export_rules in the catalog)",
                          source="catalog export_controlled_countries", observed=cat.as_of)
    return None


def purchase_blocked(cat: Catalog, country: str, gpu: GPU) -> bool:
    r = purchase_rule(cat, country, gpu)
    return r is not None and r.effect in ("prohibited", "license-required")


def can_buy(cat: Catalog, country: str, gpu: GPU) -> bool:
    """Whether a site in ``country`` can buy this GPU new: no purchase rule blocks it and it is sold
    there (China-market parts such as the RTX 4090 D or L20 list ``markets: [CN]``)."""
    if purchase_blocked(cat, country, gpu):
        return False
    return gpu.markets is None or country.upper() in {m.upper() for m in gpu.markets}


def remote_rule(cat: Catalog, country: str, gpu: GPU) -> ExportRule | None:
    """The rule on using this GPU remotely (a cloud instance abroad) from ``country``."""
    return memo.cached(cat, "remote_rule", (gpu.id, country), lambda: _remote_rule(cat, country, gpu),
                       catalog_only=True)


def _remote_rule(cat: Catalog, country: str, gpu: GPU) -> ExportRule | None:
    for r in cat.export_rules:
        if r.kind == "remote-access" and _applies(r, country, gpu):
            return r
    return None


def remote_blocked(cat: Catalog, country: str, gpu: GPU) -> bool:
    r = remote_rule(cat, country, gpu)
    return r is not None and r.effect in ("prohibited", "license-required")


def purchase_restricted_country(cat: Catalog, country: str) -> bool:
    """Whether any hardware-purchase rule names this country (some GPUs cannot be bought there)."""
    c = country.upper()
    rules = [r for r in cat.export_rules if r.kind == "hardware-purchase"]
    if rules:
        return any(c in {x.upper() for x in r.destinations} and r.effect != "not-controlled" for r in rules)
    return c in {x.upper() for x in cat.export_controlled_countries}


# ---- local economics ----------------------------------------------------------------------------


@dataclass(frozen=True)
class LocalEconomics:
    """What owning hardware costs in one country, in USD (converted from the catalog's local
    figures at the catalog's FX rate). ``known`` is False when the catalog has no row for the
    country and the facility defaults (US figures) stand in."""

    country: str
    currency: str
    electricity_usd_per_kwh: float
    pue: float
    colo_usd_per_kw_month: float
    staff_usd_per_year: float
    vat_rate: float
    gpu_import_duty: float
    known: bool
    source: str
    observed: str


def usd_rate(cat: Catalog, currency: str) -> float | None:
    """USD per unit of ``currency`` from the catalog's ``fx`` table (USD itself is 1)."""
    code = currency.upper()
    if code == "USD":
        return 1.0
    fx = cat.fx.get(code)
    return fx.usd_per_unit if fx is not None else None


def _fac(cat: Catalog, key: str, default: float) -> float:
    f = cat.facility.get(key)
    return f.value if f is not None else default


def economics(cat: Catalog, country: str) -> LocalEconomics:
    """Local economics for ``country`` (ISO alpha-2), in USD."""
    return memo.cached(cat, "economics", country, lambda: _economics(cat, country), catalog_only=True)


def _economics(cat: Catalog, country: str) -> LocalEconomics:
    c = country.upper()
    row: CountryEconomics | None = cat.economics.get(c)
    if row is None:
        return LocalEconomics(
            country=c, currency="USD", electricity_usd_per_kwh=_fac(cat, "electricity_usd_per_kwh", 0.13),
            pue=_fac(cat, "pue", 1.58), colo_usd_per_kw_month=_fac(cat, "colo_usd_per_kw_month", 184.0),
            staff_usd_per_year=_fac(cat, "staff_usd_per_year", 150_000.0), vat_rate=0.0, gpu_import_duty=0.0,
            known=False, source="facility defaults (US figures)", observed=cat.as_of)
    rate = usd_rate(cat, row.currency) or 1.0  # the catalog loader checks every currency has a rate
    return LocalEconomics(
        country=c, currency=row.currency,
        electricity_usd_per_kwh=row.electricity_per_kwh * rate,
        pue=row.pue if row.pue is not None else _fac(cat, "pue", 1.58),
        colo_usd_per_kw_month=(row.colo_per_kw_month * rate if row.colo_per_kw_month is not None
                               else _fac(cat, "colo_usd_per_kw_month", 184.0)),
        staff_usd_per_year=row.staff_per_year * rate,
        vat_rate=row.vat_rate, gpu_import_duty=row.gpu_import_duty,
        known=True, source=row.source, observed=row.observed)


def default_currency(cat: Catalog, country: str) -> str:
    row = cat.economics.get(country.upper())
    if row is not None:
        return row.currency
    return "EUR" if jurisdiction(country) == "EU" else "USD"


def month_index(date: str) -> int:
    """Months since year 0 of an ISO date / month / year (a bare year counts as its January)."""
    parts = date.split("-")
    year = int(parts[0])
    month = int(parts[1]) if len(parts) > 1 else 1
    return year * 12 + month - 1


def age_months(observed: str, today: str) -> int:
    """Whole months from ``observed`` to ``today`` (never negative)."""
    return max(0, month_index(today) - month_index(observed))


# ---- the answer ---------------------------------------------------------------------------------


def _holds(inst: CloudInstance, gpus: int, gpn: int) -> bool:
    """Whether this offer can run the job (one instance, or whole RDMA instances of >= a node)."""
    return inst.gpu_count >= gpus or (inst.gpu_count >= gpn and inst.rdma)


def _label(inst: CloudInstance) -> str:
    where = f"{inst.region}, {inst.country}" if inst.region else inst.country
    return f"{inst.gpu_count}x {inst.gpu} on {inst.provider} {inst.instance_type} ({where}, {inst.tier})"


def assess(req: Requirements, cat: Catalog, gpu: GPU | None = None, gpus: int = 0, gpn: int = 0) -> MarketStatus:
    """What the data policy allows for this GPU class, and which export rules apply.

    ``no_compliant_offer`` is True when the catalog has offers for the GPU that hold the job but the
    policy excludes all of them; ``closest_compliant`` is then the allowed offer with the nearest
    total GPU memory (any GPU type), or empty when the policy allows no offer at all. Memoised
    (core.memo) on the shape and what it reads of ``req``: the policy fields (``policy_key``: the
    regions, the data sensitivity, the country)."""
    key = (gpu.id if gpu is not None else None, gpus, gpn, policy_key(req))
    return memo.cached(cat, "market_assess", key, lambda: _assess(req, cat, gpu, gpus, gpn), maxsize=256)


def _assess(req: Requirements, cat: Catalog, gpu: GPU | None, gpus: int, gpn: int) -> MarketStatus:
    d = req.deployment
    excluded: dict[str, int] = {}
    total = ok = 0
    for inst in cat.cloud_instances:  # without a GPU (nothing was found): every offer counts
        if gpu is not None and (inst.gpu != gpu.id or not _holds(inst, gpus, gpn or gpus)):
            continue
        total += 1
        chk = check_offer(req, inst)
        if chk.ok:
            ok += 1
        else:
            excluded[chk.rule] = excluded.get(chk.rule, 0) + 1
    closest = None
    if total > 0 and ok == 0:
        gmap = cat.gpu_map()
        need = gpu.memory_gib * max(gpus, 1) if gpu is not None else float("inf")
        allowed = [i for i in cat.cloud_instances if eligible(req, i) and i.gpu in gmap]
        if allowed:
            def gap(i: CloudInstance) -> float:
                have = gmap[i.gpu].memory_gib * i.gpu_count
                return -have if need == float("inf") else abs(have - need)  # no target: the biggest
            closest = min(allowed, key=lambda i: (gap(i), i.price_usd_per_hour, i.id))
    facts: list[ExportFact] = []
    if gpu is not None:
        for rule in (purchase_rule(cat, d.country, gpu), remote_rule(cat, d.country, gpu)):
            if rule is not None:
                facts.append(ExportFact(rule=rule.id, kind=rule.kind, effect=rule.effect, summary=rule.summary,
                                        source=rule.source, observed=rule.observed))
    return MarketStatus(
        data_sensitivity=d.data_sensitivity, jurisdiction=jurisdiction(d.country),
        regions=list(getattr(d, "regions", None) or []), gpu=gpu.id if gpu else "", gpus=gpus,
        offers_for_gpu=total, compliant_for_gpu=ok, excluded=excluded,
        no_compliant_offer=total > 0 and ok == 0,
        closest_compliant=_label(closest) if closest else "", closest_compliant_id=closest.id if closest else "",
        export=facts)


def currency_info(cat: Catalog, req: Requirements) -> CurrencyInfo:
    """The user's currency (``deployment.currency``, else the country's) at the catalog's rate;
    USD when the catalog has no rate for it."""
    d = req.deployment
    code = (d.currency or default_currency(cat, d.country)).upper()
    fx = cat.fx.get(code)
    if code == "USD" or fx is None:
        return CurrencyInfo(code="USD", usd_rate=1.0, observed=cat.as_of, source="")
    return CurrencyInfo(code=code, usd_rate=fx.usd_per_unit, observed=fx.observed, source=fx.source)


def usd_cash(usd: float | None, decimals: int = 0) -> str:
    """A USD amount as the engine's sentences write it: ``$1,234`` (``decimals`` after the point)."""
    from gpuwiz.core.money import format_money

    return format_money(usd, "USD", decimals)


def cash(cat: Catalog, req: Requirements) -> Callable[..., str]:
    """How the engine's sentences (verdict reasons, pitfalls, suggestions) write a USD amount: in
    the user's currency (``currency_info``) -- ``¥46,260`` for a CNY user, ``$6,426`` for USD."""
    from gpuwiz.core.money import format_money

    cur = currency_info(cat, req)
    if cur.code == "USD":
        return usd_cash

    def fmt(usd: float | None, decimals: int = 0) -> str:
        return format_money(None if usd is None else usd / cur.usd_rate, cur.code, decimals)

    return fmt


STALE_MONTHS = 12  # a price older than this is flagged


def offer_age_months(cat: Catalog, observed: str) -> int:
    """Age of a price relative to the catalog's own date (``as_of``): deterministic, and the CLI
    can say how old the catalog itself is."""
    return age_months(observed, cat.as_of)
