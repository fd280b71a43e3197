"""A short title for each pitfall rule id, for the places that name a pitfall in a few words (the
what-if strip's "Worst pitfall"); the full message stays on the Pitfalls tab. Pure: no I/O."""

from __future__ import annotations

from gpuwiz.i18n import N_, _

TITLES: dict[str, str] = {
    "vram-headroom": N_("little GPU memory headroom"),
    "does-not-fit": N_("does not fit in GPU memory"),
    "legacy-gpu": N_("legacy GPU"),
    "underprovisioned": N_("too slow for the schedule"),
    "deadline-tight": N_("tight deadline"),
    "batch-rounded": N_("global batch rounded"),
    "batch-grown": N_("default batch grown too far"),
    "rent-cluster-capacity": N_("a rented cluster must be booked"),
    "overprovisioned": N_("more GPUs than needed"),
    "over-budget": N_("over the budget"),
    "short-horizon": N_("too short to pay back"),
    "reserved-vs-buy": N_("reserved capacity vs buying"),
    "ex-mining": N_("ex-mining cards"),
    "gddr6x-thermals": N_("GDDR6X memory heat"),
    "baseboard-gpu": N_("modules sold only on baseboards"),
    "consumer-no-p2p": N_("no GPU peer-to-peer"),
    "consumer-density": N_("many consumer GPUs in one box"),
    "geforce-eula": N_("GeForce licence"),
    "power-connector": N_("GPU power connector"),
    "pcie-lanes": N_("PCIe lanes"),
    "wall-circuit": N_("wall circuit overloaded"),
    "psu-undersized": N_("power supply too small"),
    "office-heat-noise": N_("office heat and noise"),
    "rack-density": N_("rack power density"),
    "cpu-dataloader": N_("CPU data loading"),
    "host-ram": N_("host memory"),
    "storage-io": N_("storage throughput"),
    "multinode-network": N_("multi-node network"),
    "checkpoint-storage": N_("checkpoint storage"),
    "cuda-arch": N_("CUDA architecture support"),
    "rocm-caveats": N_("ROCm caveats"),
    "precision-unsupported": N_("precision not supported"),
    "start-in-cloud": N_("start in the cloud"),
    "spot-checkpointing": N_("spot instances need checkpoints"),
    "data-residency": N_("data residency"),
    "export-control": N_("export control"),
    "stale-price": N_("stale cloud price"),
    "stale-purchase-price": N_("stale purchase price"),
    "family-not-validated": N_("model family not validated"),
    "obsolescence": N_("obsolescence"),
    "reliability-spares": N_("failures and spares"),
    "failures-per-run": N_("failures during a run"),
    "energy-efficiency": N_("energy efficiency"),
    "passive-cooling-in-tower": N_("passive cooling in a tower"),
    "marketplace-host": N_("marketplace host"),
    "data-staging": N_("data staging"),
    "hgx-lead-time": N_("HGX lead time"),
    "host-ram-offload": N_("host memory for offload"),
    "owned-no-estimate": N_("owned hardware: no estimate"),
    "owned-does-not-fit": N_("owned hardware does not fit"),
}

SEVERITY_WORDS: dict[str, str] = {"block": N_("block"), "high": N_("high"), "medium": N_("medium"),
                                  "info": N_("info")}


def title(pitfall_id: str) -> str:
    """The rule's title in the interface language; an id without one in words (``a-b`` -> ``a b``)."""
    words = TITLES.get(pitfall_id)
    return _(words) if words is not None else pitfall_id.replace("-", " ")


def severity_word(severity: str) -> str:
    words = SEVERITY_WORDS.get(severity)
    return _(words) if words is not None else severity
