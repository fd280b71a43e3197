"""The built-in catalog: loads, holds the required ids, every figure is sourced, the physics is sane,
and user overlays merge (and fail) the way the docs say."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuwiz.core.catalog import FACILITY_KEYS, PRICE_DATES, Catalog, CloudInstance, load_catalog
from gpuwiz.core.errors import GpuwizError
from gpuwiz.core.yamlio import parse

REQUIRED_GPUS = {
    "rtx-3090", "rtx-4090", "rtx-5090", "rtx-a6000", "rtx-6000-ada", "l4", "l40s", "a10", "a16", "t4",
    "v100-16gb-sxm2", "v100-32gb-sxm2", "a100-40gb-pcie", "a100-40gb-sxm", "a100-80gb-pcie", "a100-80gb-sxm",
    "h100-pcie", "h100-sxm", "h100-nvl", "h200-sxm", "h20", "b200", "mi250x", "mi300x", "gaudi3",
}
REQUIRED_MODELS = {
    "resnet-50", "vit-b-16", "bert-base", "bert-large", "gpt2-124m", "llama-2-7b", "llama-2-13b", "llama-2-70b",
    "llama-3-8b", "llama-3-70b", "llama-3.1-405b", "mistral-7b", "mixtral-8x7b", "qwen2.5-7b",
    "stable-diffusion-1.5", "sdxl", "whisper-large-v3",
}
ARCHITECTURES = {"volta", "turing", "ampere", "ada", "hopper", "blackwell", "cdna2", "cdna3", "cdna4", "gaudi3",
                 "davinci"}


@pytest.fixture(scope="module")
def cat() -> Catalog:
    return load_catalog()


# ---- loading and coverage -------------------------------------------------------------------------

def test_builtin_catalog_loads(cat: Catalog) -> None:
    assert cat.version == 1
    assert cat.as_of == "2026-11-30"
    assert set(cat.export_controlled_countries) == {"CN", "HK", "MO"}
    assert set(FACILITY_KEYS) <= set(cat.facility)


def test_required_gpu_ids_present(cat: Catalog) -> None:
    assert {g.id for g in cat.gpus} >= REQUIRED_GPUS


def test_required_model_ids_present(cat: Catalog) -> None:
    assert {m.id for m in cat.models} >= REQUIRED_MODELS


def test_every_platform_section_populated(cat: Catalog) -> None:
    assert {c.segment for c in cat.platforms.cpus} == {"desktop", "workstation", "server"}
    kinds = {(c.kind, c.gpu_form, c.max_gpus) for c in cat.platforms.chassis}
    assert ("hgx", "sxm", 8) in kinds and ("hgx", "sxm", 4) in kinds and ("hgx", "oam", 8) in kinds
    assert any(k == "desktop" for k, _, _ in kinds) and any(k == "workstation" and n == 4 for k, _, n in kinds)
    assert any(k == "server" and f == "pcie" and n == 8 for k, f, n in kinds)
    assert {d.kind for d in cat.platforms.memory} >= {"ddr5-rdimm", "ddr5-udimm", "ddr4-rdimm"}
    assert {s.kind for s in cat.storage} == {"nvme", "nvme-raid0", "sata-ssd", "hdd", "parallel-fs", "nas", "object"}
    assert {n.kind for n in cat.network} == {"ethernet", "roce", "infiniband"}


def _all_entries(cat: Catalog) -> list:
    return [*cat.gpus, *cat.models, *cat.cloud_instances, *cat.platforms.cpus, *cat.platforms.chassis,
            *cat.platforms.memory, *cat.storage, *cat.network]


def test_every_entry_has_source_and_as_of(cat: Catalog) -> None:
    for e in _all_entries(cat):
        assert e.source.strip(), e.id
        # cloud offers split the date: when the price was true (observed) and when it was read
        date = e.observed if isinstance(e, CloudInstance) else e.as_of
        assert len(date) >= 4 and date[:4].isdigit(), (e.id, date)
    for key, fv in cat.facility.items():
        assert fv.source.strip() and fv.unit.strip(), key
        assert fv.as_of[:4].isdigit(), key


def test_every_price_in_the_builtin_file_carries_its_observed_date() -> None:
    # read the file itself: the date must be written next to the price, not derived from as_of
    text = (Path(__file__).parents[2] / "catalog.yaml").read_text(encoding="utf-8")
    raw, _lines = parse(text, "catalog.yaml")
    plat = raw["platforms"]
    entries = [*raw["gpus"], *raw["cloud_instances"], *plat["cpus"], *plat["chassis"], *plat["memory"],
               *raw["storage"], *raw["network"]]
    priced = 0
    for e in entries:
        for price, date in PRICE_DATES.items():
            if e.get(price) is not None:
                priced += 1
                assert isinstance(e.get(date), str) and e[date][:4].isdigit(), (e["id"], price, date)
                assert e[date] <= raw["as_of"], (e["id"], date)  # never after the catalog's own date
    assert priced > 150
    for key, fv in raw["facility"].items():
        if "USD" in fv["unit"]:
            assert isinstance(fv.get("observed"), str), key
    for code, fx in raw["fx"].items():
        assert fx["observed"][:4].isdigit(), code
    for country, row in raw["economics"].items():
        assert row["observed"][:4].isdigit(), country


@pytest.mark.parametrize(("overlay", "where", "missing"), [
    ("gpus:\n- id: h100-sxm\n  price_new_usd: 21000\n", ":2: gpus[", "price_new_usd has no price_new_observed"),
    ("gpus:\n- id: rtx-3090\n  price_used_usd: 500\n", ":2: gpus[", "price_used_usd has no price_used_observed"),
    ("platforms:\n  memory:\n  - id: ddr5-rdimm-64gb\n    price_usd: 500\n", ":3: platforms.memory[",
     "price_usd has no observed"),
    ("network:\n- id: ib-ndr-400\n  switch_port_usd: 700\n", ":2: network[", "_usd has no observed"),
    ("storage:\n- id: object-s3-standard\n  usd_per_tb_month: 20\n", ":2: storage[",
     "usd_per_tb_month has no observed"),
    ("facility:\n  staff_usd_per_year: {value: 100000}\n", ":2: facility.staff_usd_per_year", "has no observed"),
    ("cloud_instances:\n- id: aws-p5-48xlarge\n  price_per_hour: 50\n", ":2: cloud_instances[",
     "observed: Field required"),
])
def test_a_price_without_its_date_is_refused(tmp_path: Path, overlay: str, where: str, missing: str) -> None:
    # an overlay's new price never inherits the built-in entry's date: it brings its own or is refused
    over = tmp_path / "prices.yaml"
    over.write_text(overlay, encoding="utf-8")
    with pytest.raises(GpuwizError) as exc:
        load_catalog(over)
    msg = str(exc.value).splitlines()[0]
    assert msg.startswith(f"{over}{where}") and missing in msg, msg


def test_an_overlay_price_takes_its_own_date(tmp_path: Path) -> None:
    over = tmp_path / "prices.yaml"
    over.write_text("gpus:\n- id: h100-sxm\n  price_new_usd: 21000\n  as_of: '2026-10'\n"
                    "- id: rtx-3090\n  price_used_usd: 500\n  price_used_observed: '2026-09-15'\n", encoding="utf-8")
    cat = load_catalog(over)
    base = load_catalog()
    h, r = cat.gpu("h100-sxm"), cat.gpu("rtx-3090")
    assert (h.price_new_usd, h.price_new_observed) == (21000, "2026-10")  # a v1 overlay's as_of is its date
    assert h.price_used_observed == base.gpu("h100-sxm").price_used_observed  # the price it did not set keeps its
    assert (r.price_used_observed, r.price_new_observed) == ("2026-09-15", base.gpu("rtx-3090").price_new_observed)


def test_estimates_are_labelled_where_source_says_estimate(cat: Catalog) -> None:
    # A source that is only an estimate must say so in notes too (the UI shows notes, not sources).
    for e in _all_entries(cat):
        if e.source.lower().startswith("estimate"):
            assert any("estimate" in n.lower() for n in e.notes), e.id


# ---- GPU physics ----------------------------------------------------------------------------------

def test_gpu_vendor_and_architecture_vocabulary(cat: Catalog) -> None:
    for g in cat.gpus:
        assert g.architecture in ARCHITECTURES, g.id
        assert g.vendor == g.vendor.lower()


def test_tensor_rates_are_monotone(cat: Catalog) -> None:
    for g in cat.gpus:
        if g.tf32_tflops is not None:
            assert g.tf32_tflops >= g.fp32_tflops * 0.99, g.id
        if g.bf16_tflops is not None:
            assert g.bf16_tflops >= g.fp32_tflops, g.id
        if g.fp8_tflops is not None:
            best16 = max(x for x in (g.bf16_tflops, g.fp16_tflops) if x is not None)
            assert g.fp8_tflops >= best16 * 0.99, g.id


def test_dense_not_sparse_figures(cat: Catalog) -> None:
    gm = cat.gpu_map()
    # Datasheet "with sparsity" headline numbers must have been halved.
    assert gm["h100-sxm"].bf16_tflops == pytest.approx(989.5)
    assert gm["h100-sxm"].fp8_tflops == pytest.approx(1979)
    assert gm["a100-80gb-sxm"].bf16_tflops == pytest.approx(312)
    assert gm["b200"].bf16_tflops == pytest.approx(2250)
    assert gm["l40s"].bf16_tflops == pytest.approx(362)


def test_no_bf16_on_volta_and_turing(cat: Catalog) -> None:
    for g in cat.gpus:
        if g.architecture in {"volta", "turing"}:
            assert g.bf16_tflops is None and g.tf32_tflops is None and g.fp8_tflops is None, g.id
            assert g.fp16_tflops, g.id
            assert not g.supports("bf16") and g.supports("fp16")
    assert load_catalog().gpu("t4").peak_tflops("bf16") == pytest.approx(65)  # falls back to fp16


def test_memory_bandwidth_plausible(cat: Catalog) -> None:
    for g in cat.gpus:
        assert 150 <= g.memory_bandwidth_gbps <= 10_000, g.id
        # HBM parts are >= 900 GB/s; GDDR parts below 2 TB/s
        if g.form_factor in {"sxm", "oam"}:
            assert g.memory_bandwidth_gbps >= 900, g.id
    gm = cat.gpu_map()
    assert gm["h200-sxm"].memory_bandwidth_gbps > gm["h100-sxm"].memory_bandwidth_gbps
    assert gm["b200"].memory_bandwidth_gbps > gm["h200-sxm"].memory_bandwidth_gbps


def test_power_and_memory_plausible(cat: Catalog) -> None:
    for g in cat.gpus:
        assert 50 <= g.tdp_w <= 1500, g.id
        assert 8 <= g.memory_gib <= 300, g.id


def test_interconnect_flags(cat: Catalog) -> None:
    gm = cat.gpu_map()
    for gid in ("h100-sxm", "h200-sxm", "a100-80gb-sxm", "b200", "mi300x"):
        assert gm[gid].nvlink_multi_gpu and gm[gid].nvlink_gbps > 0, gid
    for g in cat.gpus:
        if g.segment == "consumer":
            assert not g.nvlink_multi_gpu, g.id
        if g.form_factor == "pcie" and g.segment != "consumer":
            assert not g.nvlink_multi_gpu, g.id
    for gid in ("rtx-4090", "rtx-5090"):
        assert gm[gid].p2p is False and gm[gid].nvlink_gbps == 0


def test_consumer_cards_flags(cat: Catalog) -> None:
    gm = cat.gpu_map()
    for g in cat.gpus:
        if g.segment == "consumer":
            assert g.datacenter_licence_ok is False and g.ecc is False, g.id
            assert g.max_per_node <= 4, g.id
        else:
            assert g.datacenter_licence_ok is True, g.id
    assert gm["rtx-3090"].mining_era is True
    assert gm["rtx-4090"].slot_width == 3
    assert gm["rtx-a6000"].slot_width == 2


def test_export_flags(cat: Catalog) -> None:
    gm = cat.gpu_map()
    for gid in ("a100-80gb-sxm", "a100-40gb-pcie", "h100-sxm", "h100-pcie", "h200-sxm", "b200", "mi250x",
                "mi300x", "gaudi3", "rtx-4090"):
        assert gm[gid].export_restricted, gid
    assert gm["h20"].export_restricted is False
    assert gm["t4"].export_restricted is False


def test_every_gpu_has_a_new_price(cat: Catalog) -> None:
    # ... or says that no public price exists (rack-scale and new parts sell only in systems)
    for g in cat.gpus:
        if g.price_new_usd is None:
            assert any("no public" in n.lower() and "price" in n.lower() for n in g.notes), g.id
            continue
        assert g.price_new_usd > 0, g.id
        if g.price_used_usd is not None:
            assert g.price_used_usd < g.price_new_usd * 1.2, g.id


# ---- models -----------------------------------------------------------------------------------------

def test_transformer_presets_are_self_consistent(cat: Catalog) -> None:
    from gpuwiz.core.arch import count_params, resolve_model
    from gpuwiz.core.models import ModelSpec

    for m in cat.models:
        if m.modality != "text":
            continue
        assert m.layers and m.hidden and m.heads and m.vocab and m.seq_len and m.ffn, m.id
        assert m.head_dim or m.hidden % m.heads == 0, m.id
        kv = m.kv_heads or m.heads
        assert m.heads % kv == 0, m.id
        # the exact count from the architecture (core.arch) matches the published figure within 0.5 %
        total, active, _ = count_params(resolve_model(ModelSpec(preset=m.id), cat))
        assert total / 1e9 == pytest.approx(m.params_b, rel=0.005), (m.id, total)
        if m.params_active_b:
            assert active / 1e9 == pytest.approx(m.params_active_b, rel=0.005), (m.id, active)


def test_specific_published_values(cat: Catalog) -> None:
    assert cat.model("llama-2-70b").params_b == pytest.approx(68.98)
    assert cat.model("llama-2-70b").kv_heads == 8
    mix = cat.model("mixtral-8x7b")
    assert (mix.family, mix.experts, mix.top_k) == ("moe", 8, 2)
    assert cat.model("qwen2.5-7b").tied_embeddings is False
    assert cat.model("gpt2-124m").tied_embeddings is True
    assert cat.model("llama-3-8b").norm == "rms" and cat.model("llama-3-8b").mlp == "swiglu"


def test_non_token_models_have_per_sample_figures(cat: Catalog) -> None:
    for mid in ("resnet-50", "vit-b-16", "stable-diffusion-1.5", "sdxl", "whisper-large-v3"):
        m = cat.model(mid)
        assert m.modality in {"image", "audio"}, mid
        assert m.train_gflops_per_sample and m.act_gib_per_sample and m.sample_kb, mid
        assert m.default_micro_batch, mid
    assert cat.model("resnet-50").train_gflops_per_sample == pytest.approx(3 * 8.2)
    assert cat.model("vit-b-16").train_gflops_per_sample == pytest.approx(3 * 17.6)
    assert cat.model("whisper-large-v3").seq_len == 1500
    for mid in ("resnet-50", "vit-b-16", "stable-diffusion-1.5", "sdxl"):
        assert cat.model(mid).resolution, mid


# ---- cloud ------------------------------------------------------------------------------------------

def test_cloud_offers_cover_the_gpus_the_recommender_picks(cat: Catalog) -> None:
    by_gpu: dict[str, set[int]] = {}
    for inst in cat.cloud_instances:
        by_gpu.setdefault(inst.gpu, set()).add(inst.gpu_count)
    for gid in ("h100-sxm", "a100-80gb-sxm"):
        assert {1, 8} <= by_gpu[gid], gid
    for gid in ("l4", "l40s", "a10", "t4", "rtx-4090", "h200-sxm", "b200"):
        assert gid in by_gpu, gid


def test_cloud_offer_consistency(cat: Catalog) -> None:
    gm = cat.gpu_map()
    for inst in cat.cloud_instances:
        assert len(inst.country) == 2 and inst.country.isupper(), inst.id
        if inst.spot_usd_per_hour is not None:
            assert inst.spot_usd_per_hour < inst.price_usd_per_hour, inst.id
        for r in (inst.reserved_1y_usd_per_hour, inst.reserved_3y_usd_per_hour):
            if r is not None:
                assert r < inst.price_usd_per_hour, inst.id
        g = gm[inst.gpu]
        if inst.gpu_count >= 4 and g.form_factor in {"sxm", "oam"}:
            assert inst.interconnect in {"nvlink", "xgmi"}, inst.id
        if inst.interconnect == "nvlink":
            assert g.nvlink_gbps > 0, inst.id
        per_gpu = inst.price_usd_per_hour / inst.gpu_count
        assert 0.05 < per_gpu < 20, inst.id


# ---- facility ---------------------------------------------------------------------------------------

def test_facility_values_in_range(cat: Catalog) -> None:
    f = cat.fac
    assert 1.0 < f("pue") < 2.5 and f("pue_office") >= f("pue")
    assert 0.02 < f("electricity_usd_per_kwh") < 0.6
    assert f("office_circuit_w") == 1440
    for key in ("maintenance_frac_per_year", "residual_value_frac", "utilization", "spot_overhead_frac",
                "goodput", "reserved_1y_discount", "reserved_3y_discount", "server_overhead_frac"):
        assert 0 < f(key) < 1, key
    assert f("reserved_3y_discount") > f("reserved_1y_discount")
    assert 1 <= f("depreciation_years") <= 10


# ---- lookups ------------------------------------------------------------------------------------------

def test_unknown_gpu_suggests_close_ids(cat: Catalog) -> None:
    with pytest.raises(GpuwizError) as exc:
        cat.gpu("h100-sxm5")
    msg = str(exc.value)
    assert "unknown GPU id 'h100-sxm5'" in msg and "did you mean" in msg and "h100-sxm" in msg


def test_unknown_model_suggests_close_ids(cat: Catalog) -> None:
    with pytest.raises(GpuwizError, match=r"did you mean .*llama-3-8b"):
        cat.model("llama3-8b")


# ---- overlays -----------------------------------------------------------------------------------------

def test_overlay_overrides_price_and_adds_gpu(tmp_path: Path) -> None:
    base = load_catalog().gpu("h100-sxm")
    over = tmp_path / "prices.yaml"
    over.write_text(
        "gpus:\n"
        "- id: h100-sxm\n"
        "  price_new_usd: 21000\n"
        "  price_new_observed: '2026-11'\n"
        "- id: my-gpu\n"
        "  name: Lab prototype\n"
        "  vendor: nvidia\n"
        "  architecture: hopper\n"
        "  release_year: 2025\n"
        "  segment: datacenter\n"
        "  form_factor: pcie\n"
        "  cooling: passive\n"
        "  memory_gib: 64\n"
        "  memory_bandwidth_gbps: 2000\n"
        "  fp32_tflops: 50\n"
        "  bf16_tflops: 500\n"
        "  tdp_w: 300\n"
        "  pcie_gen: 5\n"
        "  price_new_usd: 9000\n"
        "  source: our quote\n"
        "  as_of: '2026-11-01'\n",
        encoding="utf-8",
    )
    cat = load_catalog(over)
    h = cat.gpu("h100-sxm")
    assert h.price_new_usd == 21000
    # every other field of the overridden entry is kept from the built-in catalog
    assert h.bf16_tflops == base.bf16_tflops and h.source == base.source
    mine = cat.gpu("my-gpu")
    assert mine.memory_gib == 64 and mine.peak_tflops("bf16") == 500
    assert len(cat.gpus) == len(load_catalog().gpus) + 1
    # the built-in catalog itself is untouched
    assert load_catalog().gpu("h100-sxm").price_new_usd == base.price_new_usd


def test_overlay_overrides_facility_value(tmp_path: Path) -> None:
    over = tmp_path / "site.yaml"
    over.write_text("facility:\n  electricity_usd_per_kwh:\n    value: 0.31\n    observed: '2026-10'\n",
                    encoding="utf-8")
    cat = load_catalog(over)
    assert cat.fac("electricity_usd_per_kwh") == pytest.approx(0.31)
    assert cat.facility["electricity_usd_per_kwh"].unit == load_catalog().facility["electricity_usd_per_kwh"].unit


def test_broken_overlay_names_file_line_and_field(tmp_path: Path) -> None:
    over = tmp_path / "broken.yaml"
    over.write_text(
        "# my overrides\n"
        "gpus:\n"
        "- id: rtx-4090\n"
        "  tdp_w: lots\n",
        encoding="utf-8",
    )
    with pytest.raises(GpuwizError) as exc:
        load_catalog(over)
    msg = str(exc.value).splitlines()[0]
    assert msg.startswith(f"{over}:4:"), msg
    assert "tdp_w" in msg and "rtx-4090" in msg


def test_overlay_with_unknown_section_is_rejected(tmp_path: Path) -> None:
    over = tmp_path / "typo.yaml"
    over.write_text("gpu:\n- id: t4\n  price_new_usd: 1\n", encoding="utf-8")
    with pytest.raises(GpuwizError, match=r"typo\.yaml:1: gpu: unknown catalog section"):
        load_catalog(over)


def test_overlay_cloud_instance_must_reference_known_gpu(tmp_path: Path) -> None:
    over = tmp_path / "cloud.yaml"
    over.write_text(
        "cloud_instances:\n"
        "- id: my-cloud\n"
        "  provider: Mine\n"
        "  instance_type: big\n"
        "  gpu: h100sxm\n"
        "  gpu_count: 8\n"
        "  country: US\n"
        "  tier: neocloud\n"
        "  price_usd_per_hour: 10\n"
        "  source: quote\n"
        "  as_of: '2026'\n",
        encoding="utf-8",
    )
    with pytest.raises(GpuwizError, match=r"unknown GPU id 'h100sxm' \(did you mean .*h100-sxm"):
        load_catalog(over)
