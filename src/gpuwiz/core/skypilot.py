"""Read the public SkyPilot catalog format (one ``vms.csv`` per cloud) into catalog cloud offers.

Pure: text in, typed result out (the CLI reads the file and writes the overlay). Columns are found
by name (the clouds order them differently): InstanceType, AcceleratorName, AcceleratorCount,
vCPUs, MemoryGiB, Price, SpotPrice, Region, AvailabilityZone. One offer per (instance type,
region): the on-demand price of the region, the lowest spot price over its zones. Rows without an
accelerator are skipped (CPU instances); rows whose accelerator the catalog has no GPU for are
counted and reported; a row that cannot be read (a missing or non-numeric price, an unknown
region) is one line ``FILE:LINE: column: what is wrong`` and the rest still import. GCP's split
format (host VMs without accelerators, accelerator rows with an empty InstanceType) is joined
through the ``bundles`` patterns of the map.

The map (``gpuwiz/data/skypilot_map.yaml``) is data: accelerator names, tiers, region countries,
instance facts.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any

from gpuwiz.core.errors import GpuwizError
from gpuwiz.core.yamlio import parse

REQUIRED = ("InstanceType", "AcceleratorName", "AcceleratorCount", "Price", "Region")
MAX_PROBLEMS_LISTED = 50
MAX_CSV_BYTES = 256_000_000  # a whole cloud's vms.csv (AWS: ~2.5 MB) with room to spare


@lru_cache(maxsize=1)
def builtin_map() -> dict[str, Any]:
    text = resources.files("gpuwiz").joinpath("data/skypilot_map.yaml").read_text(encoding="utf-8")
    data, _ = parse(text, "skypilot_map.yaml")
    if not isinstance(data, dict):
        raise GpuwizError("skypilot_map.yaml: not a mapping")
    return data


@dataclass
class ImportResult:
    cloud: str
    offers: list[dict[str, Any]] = field(default_factory=list)  # overlay cloud_instances entries
    rows: int = 0
    skipped_no_accelerator: int = 0
    unmapped: dict[str, int] = field(default_factory=dict)  # accelerator name -> rows
    problems: list[str] = field(default_factory=list)  # "FILE:LINE: column: what"


def _slug(text: str) -> str:
    s = re.sub(r"[^a-z0-9.]+", "-", text.lower()).strip("-.")
    return s or "x"


def _num(raw: str) -> float | None:
    if not raw:
        return None
    v = float(raw)  # ValueError -> the caller reports the row; float() ignores surrounding blanks
    if not math.isfinite(v):
        raise ValueError("not a finite number")
    return v


@dataclass
class _Cloud:
    name: str
    provider: str
    tier: str
    accel: dict[str, str]
    regions: dict[str, str]
    instances: list[tuple[re.Pattern[str], dict[str, Any]]]
    bundles: list[tuple[re.Pattern[str], str]]
    community: re.Pattern[str] | None
    region_is_country: bool
    country_field: int | None
    _facts: dict[str, dict[str, Any]] = field(default_factory=dict)

    def facts(self, itype: str) -> dict[str, Any]:
        got = self._facts.get(itype)
        if got is None:
            got = next((facts for pat, facts in self.instances if pat.search(itype)), {})
            self._facts[itype] = got
        return got

    def country(self, region: str) -> str | None:
        if self.country_field is not None:
            parts = [p.strip() for p in region.split(",")]
            code = parts[self.country_field] if len(parts) > self.country_field else ""
            return code.upper() if re.fullmatch(r"[A-Za-z]{2}", code) else None
        if self.region_is_country:
            return region.upper() if re.fullmatch(r"[A-Za-z]{2}", region) else None
        return self.regions.get(region)

    def region_id(self, region: str) -> str:
        if self.country_field is not None:  # "Florida, US, NA" -> "Florida"
            return region.split(",")[0].strip()
        return region


def _cloud(cloud: str, mapping: dict[str, Any]) -> _Cloud:
    clouds = mapping.get("clouds", {})
    if cloud not in clouds:
        raise GpuwizError(f"unknown cloud {cloud!r} for the SkyPilot import (known: {', '.join(sorted(clouds))})")
    c = clouds[cloud]
    accel = dict(mapping.get("accelerators", {}))
    accel.update(c.get("accelerators", {}) or {})
    instances = []
    for item in c.get("instances", []) or []:
        facts = {k: v for k, v in item.items() if k != "match"}
        instances.append((re.compile(item["match"]), facts))
    bundles = [(re.compile(b["match"]), str(b["accelerator"])) for b in c.get("bundles", []) or []]
    comm = c.get("community_match")
    return _Cloud(name=cloud, provider=str(c["provider"]), tier=str(c["tier"]), accel=accel,
                  regions={str(k): str(v) for k, v in (c.get("regions") or {}).items()},
                  instances=instances, bundles=bundles, community=re.compile(comm) if comm else None,
                  region_is_country=bool(c.get("region_is_country")),
                  country_field=c.get("region_country_field"))


def _rows(reader: Any, name: str) -> Iterator[list[str]]:
    """The CSV's rows; the csv module's own failures (a field over its 128 KiB limit, a NUL in
    strict mode) become one line naming the file and line, not a traceback."""
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise GpuwizError(f"{name}:{reader.line_num}: not a readable CSV row ({exc})") from None
        yield row


def read_csv(text: str, cloud: str, name: str = "vms.csv", *, observed: str, retrieved: str,
             source: str | None = None, mapping: dict[str, Any] | None = None,
             gpu_ids: set[str] | None = None) -> ImportResult:
    """Parse one SkyPilot ``vms.csv`` into overlay offers (see the module doc)."""
    m = mapping if mapping is not None else builtin_map()
    c = _cloud(cloud, m)
    res = ImportResult(cloud=cloud)
    reader = csv.reader(io.StringIO(text))
    rows = _rows(reader, name)
    try:
        header = next(rows)
    except StopIteration:
        raise GpuwizError(f"{name}: empty file (expected a SkyPilot vms.csv header)") from None
    col = {h.strip(): i for i, h in enumerate(header)}
    missing = [h for h in REQUIRED if h not in col]
    if missing:
        raise GpuwizError(f"{name}:1: header: missing column(s) {', '.join(missing)} "
                          f"(is this a SkyPilot vms.csv? it has {', '.join(header[:6])}...)")
    i_type, i_acc, i_cnt, i_price, i_region = (col[h] for h in REQUIRED)
    i_spot = col.get("SpotPrice")
    i_cpu = col.get("vCPUs")
    i_mem = col.get("MemoryGiB")
    width = len(header)
    src = source or f"SkyPilot catalog {cloud}/vms.csv"
    offers: dict[tuple[str, str], dict[str, Any]] = {}
    spots: dict[tuple[str, str], float] = {}
    accel_rows: dict[tuple[str, str], tuple[float, float | None]] = {}  # GCP (name, region) -> per-GPU price
    hosts: list[tuple[int, str, str, str, float, float | None, float | None, float | None]] = []

    def bad(line: int, column: str, what: str) -> None:
        res.problems.append(f"{name}:{line}: {column}: {what}")

    for row in rows:
        line = reader.line_num
        if not row or (len(row) == 1 and not row[0].strip()):
            continue
        res.rows += 1
        if len(row) < width:
            bad(line, "row", f"{len(row)} fields, the header has {width}")
            continue
        itype = row[i_type].strip()
        acc = row[i_acc].strip()
        region = row[i_region].strip()
        if not acc:
            if c.bundles and itype and any(p.search(itype) for p, _ in c.bundles):
                try:
                    price = _num(row[i_price])
                    spot = _num(row[i_spot]) if i_spot is not None else None
                    cpu = _num(row[i_cpu]) if i_cpu is not None else None
                    mem = _num(row[i_mem]) if i_mem is not None else None
                except ValueError as exc:
                    bad(line, "Price", f"not a number ({exc})")
                    continue
                if price is None:
                    bad(line, "Price", "empty")
                    continue
                hosts.append((line, itype, region, "", price, spot, cpu, mem))
            else:
                res.skipped_no_accelerator += 1
            continue
        key = (itype, region)
        seen = offers.get(key)
        if seen is not None:  # another zone of a known offer: only its price and spot matter
            try:
                price = _num(row[i_price])
                spot = _num(row[i_spot]) if i_spot is not None else None
            except ValueError as exc:
                bad(line, "Price", f"not a number ({exc})")
                continue
            if price is None or price <= 0:
                why = "empty (no on-demand price for this row)" if price is None else f"must be > 0 (got {price:g})"
                bad(line, "Price", why)
            elif spot is not None and spot > 0 and spot < spots.get(key, math.inf):
                spots[key] = spot
            continue
        try:
            count_f = _num(row[i_cnt])
            price = _num(row[i_price])
            spot = _num(row[i_spot]) if i_spot is not None else None
            cpu = _num(row[i_cpu]) if i_cpu is not None else None
            mem = _num(row[i_mem]) if i_mem is not None else None
        except ValueError as exc:
            bad(line, "Price/AcceleratorCount", f"not a number ({exc})")
            continue
        if not itype:  # GCP accelerator row: price per accelerator in a region
            if price is not None and price > 0 and count_f:
                akey = (acc, region)
                per = price / count_f
                sp = spot / count_f if spot else None
                old = accel_rows.get(akey)
                if old is None or per < old[0]:
                    accel_rows[akey] = (per, sp)
            if acc not in c.accel:
                res.unmapped[acc] = res.unmapped.get(acc, 0) + 1
            continue
        fact = c.facts(itype)
        gpu = fact.get("gpu") or c.accel.get(acc)
        if gpu is None or (gpu_ids is not None and gpu not in gpu_ids):
            res.unmapped[acc] = res.unmapped.get(acc, 0) + 1
            continue
        if price is None:
            bad(line, "Price", "empty (no on-demand price for this row)")
            continue
        if price <= 0:
            bad(line, "Price", f"must be > 0 (got {price:g})")
            continue
        if not count_f or count_f < 1 or not float(count_f).is_integer():
            bad(line, "AcceleratorCount", f"must be a whole number >= 1 (got {row[i_cnt]!r})")
            continue
        country = c.country(region)
        if country is None:
            bad(line, "Region", f"{region!r}: country unknown (add it to skypilot_map.yaml regions)")
            continue
        if spot is not None and spot > 0:
            spots[key] = spot
        offers[key] = _offer(c, itype, region, country, gpu, int(count_f), price, cpu, mem, fact,
                             src, observed, retrieved, line)

    for line, itype, region, _, host_price, host_spot, cpu, mem in hosts:
        bacc, n = _bundle(c, itype)
        if bacc is None:
            continue
        host_gpu = c.accel.get(bacc)
        if host_gpu is None or (gpu_ids is not None and host_gpu not in gpu_ids):
            res.unmapped[bacc] = res.unmapped.get(bacc, 0) + 1
            continue
        got = accel_rows.get((bacc, region))
        if got is None:
            bad(line, "AcceleratorName", f"{itype} in {region}: no {bacc} accelerator price row for the region")
            continue
        country = c.country(region)
        if country is None:
            bad(line, "Region", f"{region!r}: country unknown (add it to skypilot_map.yaml regions)")
            continue
        key = (itype, region)
        if key in offers:
            continue
        per, per_spot = got
        offers[key] = _offer(c, itype, region, country, host_gpu, n, host_price + per * n, cpu, mem, c.facts(itype),
                             src, observed, retrieved, line)
        if host_spot and per_spot:
            spots[key] = host_spot + per_spot * n
    for key, o in offers.items():
        if key in spots and spots[key] < o["price_per_hour"]:
            o["spot_per_hour"] = round(spots[key], 6)
        res.offers.append(o)
    return res


def _bundle(c: _Cloud, itype: str) -> tuple[str | None, int]:
    for pat, acc in c.bundles:
        mt = pat.search(itype)
        if mt:
            n = int(mt.group(1)) if mt.groups() and mt.group(1) else 1
            return acc, n
    return None, 0


def _offer(c: _Cloud, itype: str, region: str, country: str, gpu: str, count: int, price: float,
           cpu: float | None, mem: float | None, fact: dict[str, Any], src: str, observed: str,
           retrieved: str, line: int) -> dict[str, Any]:
    tier = c.tier
    if c.community is not None and c.community.search(itype):
        tier = "marketplace-community"
    rid = c.region_id(region)
    o: dict[str, Any] = {
        "id": f"{c.name}-{_slug(itype)}-{_slug(rid or country)}",
        "provider": c.provider, "instance_type": itype, "gpu": gpu, "gpu_count": count,
        "region": rid, "country": country, "tier": tier, "currency": "USD",
        "price_per_hour": round(price, 6),
        "source": f"{src} (line {line})", "observed": observed, "retrieved": retrieved,
    }
    if cpu:
        o["vcpus"] = max(1, round(cpu))
    if mem:
        o["ram_gb"] = round(mem * 1.073741824, 1)  # SkyPilot MemoryGiB -> GB
    for k in ("interconnect", "network_gbps", "rdma", "frontend_gbps", "local_nvme_tb"):
        if k in fact:
            o[k] = fact[k]
    if "interconnect" not in o:
        o["interconnect"] = "none" if count == 1 else "pcie"
    return o


def _scalar(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v) if isinstance(v, float) else str(v)
    s = str(v)
    return "'" + s.replace("'", "''") + "'"


def overlay_text(res: ImportResult, header: str = "") -> str:
    """The offers as a catalog overlay: ``#`` header lines, then a JSON object (JSON is YAML, so
    it is an ordinary overlay) with ``cloud_instances`` as one offer per line. JSON because the
    catalog reads a JSON document with the json module (yamlio.parse), ~50x faster than YAML for
    a full cloud's offers; the lines stay short enough to read and edit."""
    out = [f"# {line}" for line in header.splitlines()] if header else []
    out.append('{"cloud_instances": [')
    rows = [json.dumps(o, ensure_ascii=False, allow_nan=False, separators=(",", ":")) for o in res.offers]
    out.append(",\n".join(rows))
    out.append("]}")
    return "\n".join(out) + "\n"
