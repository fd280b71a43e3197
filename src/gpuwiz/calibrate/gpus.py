"""Match a GPU name as drivers report it (nvidia-smi, NVML, DCGM, torch) to a catalog id."""

from __future__ import annotations

import re

from gpuwiz.core.catalog import Catalog

_NOISE = {"nvidia", "amd", "intel", "tesla", "geforce", "instinct", "generation", "gb", "hbm3", "hbm3e", "hbm2e",
          "edition", "server", "workstation", "the", "of", "one", "on", "board", "gpus", "dgx", "hgx"}


def _tokens(name: str) -> set[str]:
    text = name.lower().replace("-", " ").replace("_", " ").replace("(", " ").replace(")", " ").replace("/", " ")
    text = re.sub(r"(\d+)\s*gb\b", r"\1gb", text)
    toks = {t for t in text.split() if t and t not in _NOISE}
    out = set()
    for t in toks:
        out.add(t)
        m = re.fullmatch(r"(sxm|pcie|nvl)\d*", t)
        if m:
            out.add(m.group(1))
    return out


def match_gpu(name: str, catalog: Catalog) -> str | None:
    """The catalog id whose name shares the model number and most details with ``name``; None if none."""
    toks = _tokens(name)
    # The model number ("h100", "a100", "4090", "mi300x", "l40s") must match exactly.
    models = {t for t in toks if re.search(r"\d", t) and not t.endswith("gb")}
    best: tuple[int, str] | None = None
    for g in catalog.gpus:
        gt = _tokens(g.name) | _tokens(g.id)
        if not models or not (models & gt):
            continue
        score = 10 * len(models & gt) + len(toks & gt)
        mem = {t for t in toks if t.endswith("gb")}
        if mem and not (mem & gt):
            mem_gb = int(next(iter(mem))[:-2])
            if abs(g.memory_gib - mem_gb) > 8:
                score -= 5
        # "H100 80GB HBM3" (the SXM part's driver name) carries no form factor: prefer SXM over PCIe/NVL.
        if not toks & {"pcie", "nvl", "sxm"} and g.form_factor == "sxm":
            score += 1
        if best is None or score > best[0]:
            best = (score, g.id)
    return best[1] if best else None
