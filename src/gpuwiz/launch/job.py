"""The facts a launch file needs, taken once from the recommendation (typed; no sentence parsing).

``job_from(req, rec)`` turns a ``Recommendation`` (and the ``Requirements`` behind it) into a ``Job``:
the GPU, the node shape, the parallel plan, the precision, the time per run, the build's CPU cores
and network, and the cloud offer when the verdict is to rent. Every generator in
``gpuwiz.launch.targets`` is a pure function of a ``Job``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from gpuwiz.core.catalog import Catalog
from gpuwiz.core.errors import GpuwizError
from gpuwiz.core.models import Build, HardwareSpec, Plan, Recommendation, Requirements

# Upper range of the time estimate: gpuwiz's p90 absolute error on throughput and GPU-hours over the
# 236 published runs of docs/VALIDATION.md is 39 % (measured by `gpuwiz validate`, 2026-12).
TIME_P90_ERROR = 0.39
# Margin on top of the upper range: start-up, checkpoint saves, one restart.
TIME_MARGIN_FRAC = 0.10
TIME_MARGIN_HOURS = 0.5
# A typical GPU partition's MaxTime: 48 h (NERSC Perlmutter `regular` QOS and TACC `gpu-*` queues,
# as published in their user guides, 2025). Longer runs are chained with requeue + checkpoint-resume.
PARTITION_MAX_HOURS = 48.0

TOKEN_FAMILIES = ("decoder", "encoder", "encoder-decoder", "moe")


@dataclass(frozen=True, slots=True)
class Job:
    config_name: str
    model_name: str
    family: str
    is_token_model: bool
    method: str
    precision: str
    seq_len: int | None
    gpu: str  # catalog id
    gpu_name: str
    vendor: str
    plan: Plan
    wall_hours: float
    gpu_hours: float
    tokens_per_s_per_gpu: float | None
    samples_per_s_per_gpu: float | None
    step_time_s: float | None
    cpu_cores_per_node: int
    ram_gb_per_node: int
    rdma: bool
    network: str
    renting: bool
    provider: str  # cloud provider of the rented offer ("" when owned)
    region: str
    instance: str
    spot_usd_per_run: float | None
    on_demand_usd_per_run: float | None
    batch_asked: int | None = None  # training.global_batch as the config states it (None: the estimator's default)

    @property
    def nodes(self) -> int:
        return self.plan.nodes

    @property
    def gpus_per_node(self) -> int:
        return self.plan.gpus_per_node

    @property
    def gpus(self) -> int:
        return self.plan.gpus

    @property
    def global_batch(self) -> int:
        return self.plan.global_batch

    @property
    def upper_hours(self) -> float:
        """The estimate's upper range (p90 error of the estimator)."""
        return self.wall_hours * (1.0 + TIME_P90_ERROR)

    @property
    def slug(self) -> str:
        s = re.sub(r"[^a-z0-9]+", "-", self.model_name.lower()).strip("-")
        return ("gpuwiz-" + s)[:50].rstrip("-") or "gpuwiz-job"


def time_limit_hours(job: Job, cap: float = PARTITION_MAX_HOURS) -> tuple[float, bool]:
    """(limit in hours rounded up to 15 min, capped?) for one scheduler allocation."""
    want = job.upper_hours * (1.0 + TIME_MARGIN_FRAC) + TIME_MARGIN_HOURS
    want = math.ceil(want * 4.0) / 4.0
    return (cap, True) if want > cap else (want, False)


def slurm_time(hours: float) -> str:
    """Slurm's days-hours:minutes:seconds form."""
    minutes = round(hours * 60)
    d, rest = divmod(minutes, 24 * 60)
    h, m = divmod(rest, 60)
    return f"{d}-{h:02d}:{m:02d}:00"


def owned_run(req: Requirements, rec: Recommendation, catalog: Catalog) -> tuple[Requirements, Recommendation] | None:
    """Where owned hardware does the run (``rec.owned_pick``), the requirements pinned to the part of it the run
    takes and their recommendation: the launch files are for the GPUs the team runs on, not for the build to add
    capacity. None otherwise."""
    own = rec.owned_pick
    if own is None:
        return None
    from gpuwiz.core.recommend import recommend

    pinned = req.model_copy(update={
        "hardware": HardwareSpec(gpu=own.gpu, count=own.count, gpus_per_node=own.gpus_per_node), "have": ()})
    return pinned, recommend(pinned, catalog)


def job_from(req: Requirements, rec: Recommendation, catalog: Catalog, config_name: str = "config.yaml",
             owned: bool = False) -> Job:
    """The launch facts of a recommendation; GpuwizError when it found no plan. ``owned``: the plan runs on owned
    hardware (``owned_run``), never on a rented instance."""
    est = rec.estimate
    if not rec.found or est is None or rec.build is None:
        raise GpuwizError("launch: the recommendation found no feasible plan, so there is nothing to launch "
                          "(run `gpuwiz recommend` for what would make it work)")
    build = rec.build
    cost = rec.cost
    renting = bool(cost is not None and cost.verdict == "rent" and cost.cloud)
    offer = cost.cloud[0] if (cost is not None and cost.cloud) else None
    if offer is not None and offer.gpu != est.gpu:
        offer = None
    renting = renting and offer is not None and not owned
    fam = est.model.family
    return Job(
        config_name=config_name,
        model_name=est.model.name,
        family=fam,
        is_token_model=est.throughput.tokens_per_s_per_gpu is not None,
        method=req.training.method,
        precision=req.training.precision,
        seq_len=req.model.seq_len,
        gpu=est.gpu,
        gpu_name=est.gpu_name,
        vendor=catalog.gpu(est.gpu).vendor,
        plan=est.plan,
        wall_hours=est.time.wall_hours,
        gpu_hours=est.time.gpu_hours,
        tokens_per_s_per_gpu=est.throughput.tokens_per_s_per_gpu,
        samples_per_s_per_gpu=est.throughput.samples_per_s_per_gpu,
        step_time_s=est.throughput.step_time_s,
        cpu_cores_per_node=_cores(build),
        ram_gb_per_node=build.ram_gb,
        rdma=build.rdma,
        network=build.network,
        renting=renting,
        provider=offer.provider if (renting and offer) else "",
        region=offer.region if (renting and offer) else "",
        instance=offer.instance if (renting and offer) else "",
        spot_usd_per_run=offer.cost_per_run_spot_usd if (renting and offer) else None,
        on_demand_usd_per_run=offer.cost_per_run_usd if (renting and offer) else None,
        batch_asked=int(req.training.global_batch) if req.training.global_batch else None,
    )


def _cores(build: Build) -> int:
    """CPU cores per node: the owned build's, or a rented instance's published vCPUs, else the sizing rule's."""
    if build.cpu_cores:
        return build.cpu_cores
    if build.instance is not None and build.instance.vcpus:
        return build.instance.vcpus
    return max(1, build.cpu_cores_needed)
