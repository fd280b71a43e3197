"""Launch files for every example config and target: generated, valid against the engines' own option
names / schemas (vendored under tests/data/schemas with their sources), consistent with the plan, and
readable back into the same plan."""

from __future__ import annotations

import ast
import dataclasses
import json
import re
import shutil
import subprocess
from pathlib import Path

import jsonschema
import pytest
import yaml

from conftest import EXAMPLES
from gpuwiz.core.config_io import load_config
from gpuwiz.core.errors import GpuwizError
from gpuwiz.core.models import Plan
from gpuwiz.core.recommend import recommend
from gpuwiz.launch import TARGETS, Job, generate, job_from, readers, refusal, targets
from gpuwiz.launch.job import PARTITION_MAX_HOURS, time_limit_hours

SCHEMAS = Path(__file__).resolve().parents[1] / "data" / "schemas"
EXAMPLE_FILES = sorted(EXAMPLES.glob("*.yaml"))


def _lines(name: str) -> set[str]:
    return {ln.strip() for ln in (SCHEMAS / name).read_text().splitlines() if ln.strip() and not ln.startswith("#")}


DS_KEYS = json.loads((SCHEMAS / "deepspeed-0.19.8-config-keys.json").read_text())
ACC_KEYS = json.loads((SCHEMAS / "accelerate-1.15.0-config-keys.json").read_text())
SBATCH_OPTS = _lines("sbatch-options-slurm-26.11.txt")
MEGATRON_OPTS = _lines("megatron-lm-arguments.txt")


def _strict(schema: object) -> object:
    """A CRD schema as the API server applies it to our objects: unknown fields are errors (the server
    would silently prune them, which for a launch file means a setting that never takes effect)."""
    if isinstance(schema, dict):
        out = {k: _strict(v) for k, v in schema.items()}
        open_ended = out.get("x-kubernetes-preserve-unknown-fields")
        if "properties" in out and "additionalProperties" not in out and not open_ended:
            out["additionalProperties"] = False
        return out
    if isinstance(schema, list):
        return [_strict(v) for v in schema]
    return schema


def _crd(name: str) -> dict:
    doc = json.loads((SCHEMAS / f"{name}-crd.json").read_text())
    schema = _strict(doc["schema"])
    assert isinstance(schema, dict)
    schema["properties"]["metadata"] = {"type": "object"}
    return {"schema": schema, "apiVersion": f"{doc['group']}/{doc['version']}", "kind": doc["kind"]}


SKY_TASK = json.loads((SCHEMAS / "skypilot-task-schema.json").read_text())["schema"]
CRDS = {c["kind"]: c for c in (_crd("trainjob"), _crd("pytorchjob"), _crd("trainingruntime"))}


@pytest.fixture(scope="module")
def jobs(catalog) -> dict[str, Job]:
    out = {}
    for path in EXAMPLE_FILES:
        req = load_config(path, catalog=catalog)
        out[path.stem] = job_from(req, recommend(req, catalog), catalog, path.name)
    return out


def _files(job: Job, target: str) -> dict[str, str]:
    return {f.name: f.text for f in generate(target, job)}


def _comment_body(text: str) -> str:
    return "\n".join(ln for ln in text.splitlines() if not ln.lstrip().startswith("#"))


# ---- every example x every target ------------------------------------------------------------------


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("example", [p.stem for p in EXAMPLE_FILES])
def test_every_example_and_target_is_generated_or_refused_in_one_line(jobs, example, target):
    job = jobs[example]
    why = refusal(target, job)
    if why is not None:
        assert "\n" not in why and target in why
        with pytest.raises(GpuwizError):
            generate(target, job)
        return
    files = generate(target, job)
    assert files
    for f in files:
        if f.name.endswith(".json"):
            json.loads(f.text)
            continue
        head = f.text.split("\n", 12)
        assert any("gpuwiz assumed" in ln for ln in head), f.name
        assert "You must fill in" in f.text, f.name
        assert f"{job.gpus}x {job.gpu_name}" in f.text
        if f.name.endswith(".yaml"):
            list(yaml.safe_load_all(f.text))
        if f.name.endswith(".sh") or f.name.endswith(".sbatch"):
            assert f.executable
            if shutil.which("bash"):
                r = subprocess.run(["bash", "-n"], input=f.text, text=True, capture_output=True)
                assert r.returncode == 0, (f.name, r.stderr)
        if f.name.endswith(".py"):
            ast.parse(f.text)


def test_megatron_refuses_a_cnn_and_lora(jobs):
    assert "cnn" in (refusal("megatron", jobs["resnet50-imagenet"]) or "")
    assert "LORA" in (refusal("megatron", jobs["small-team-lora-7b"]) or "")
    assert refusal("megatron", jobs["enterprise-70b-pretrain"]) is None


# ---- DeepSpeed ---------------------------------------------------------------------------------------


def _ds_keys_ok(cfg: dict) -> None:
    top = set(DS_KEYS["top_level_and_section_keys"])
    for key, value in cfg.items():
        assert key in top, key
        if key in ("bf16", "fp16"):
            assert set(value) <= set(DS_KEYS[key]), value
    zero = cfg["zero_optimization"]
    assert set(zero) <= set(DS_KEYS["zero_optimization"]), set(zero) - set(DS_KEYS["zero_optimization"])
    for part in ("offload_optimizer", "offload_param"):
        if part in zero:
            assert set(zero[part]) <= set(DS_KEYS[part])
            assert zero[part]["device"] in DS_KEYS["offload_device"]


@pytest.mark.parametrize("example", [p.stem for p in EXAMPLE_FILES])
def test_deepspeed_config_keys_batch_and_round_trip(jobs, example):
    job = _dp_only(jobs[example])
    files = _files(job, "deepspeed")
    cfg = json.loads(files["ds_config.json"])
    _ds_keys_ok(cfg)
    p = job.plan
    assert cfg["train_batch_size"] == cfg["train_micro_batch_size_per_gpu"] * cfg["gradient_accumulation_steps"] * p.dp
    assert cfg["zero_optimization"]["stage"] == p.zero_stage
    assert ("bf16" in cfg) == (job.precision in ("bf16", "fp8"))
    back = readers.read_deepspeed(files["ds_config.json"])
    assert back == {"micro_batch": p.micro_batch, "grad_accum": p.grad_accum, "zero_stage": p.zero_stage,
                    "offload": p.offload, "dp": p.dp}
    assert f"--num_nodes={job.nodes}" in files["launch_deepspeed.sh"]
    assert ("hostfile" in files) == (job.nodes > 1)


# ---- accelerate ----------------------------------------------------------------------------------------


def _acc_ok(cfg: dict) -> None:
    assert set(cfg) <= set(ACC_KEYS["config_fields"]), set(cfg) - set(ACC_KEYS["config_fields"])
    assert cfg["distributed_type"] in ACC_KEYS["distributed_type"]
    assert cfg["mixed_precision"] in ACC_KEYS["mixed_precision"]
    if "fsdp_config" in cfg:
        fc = cfg["fsdp_config"]
        assert set(fc) <= set(ACC_KEYS["fsdp_config"]), set(fc) - set(ACC_KEYS["fsdp_config"])
        assert fc["fsdp_sharding_strategy"] in ACC_KEYS["fsdp_sharding_strategy"]
        assert fc["fsdp_auto_wrap_policy"] in ACC_KEYS["fsdp_auto_wrap_policy"]
        assert fc["fsdp_state_dict_type"] in ACC_KEYS["fsdp_state_dict_type"]
    if "deepspeed_config" in cfg:
        assert set(cfg["deepspeed_config"]) <= set(ACC_KEYS["deepspeed_config"])


@pytest.mark.parametrize("example", [p.stem for p in EXAMPLE_FILES])
def test_accelerate_config_keys_and_round_trip(jobs, example):
    job = _dp_only(jobs[example])
    text = _files(job, "accelerate")["accelerate_config.yaml"]
    cfg = yaml.safe_load(text)
    _acc_ok(cfg)
    assert cfg["num_machines"] == job.nodes and cfg["num_processes"] == job.plan.dp
    back = readers.read_accelerate(text)
    assert back["dp"] == job.plan.dp and back["zero_stage"] == job.plan.zero_stage
    assert back["offload"] == job.plan.offload


# ---- Megatron ------------------------------------------------------------------------------------------


def test_megatron_options_exist_and_round_trip(jobs):
    job = jobs["enterprise-70b-pretrain"]
    files = _files(job, "megatron")
    script = files["megatron_pretrain.sh"]
    opts = [t for t in re.findall(r"(?<![\w-])--[a-z0-9-]+", _comment_body(script)) if not t.startswith("--nnodes")]
    torchrun_opts = {"--nproc-per-node", "--node-rank", "--master-addr", "--master-port"}
    unknown = {o for o in opts if o not in MEGATRON_OPTS and o not in torchrun_opts}
    assert not unknown, unknown
    p = job.plan
    back = readers.read_megatron(script, job.gpus)
    assert back == {"tp": p.tp, "pp": p.pp, "micro_batch": p.micro_batch, "zero_stage": p.zero_stage,
                    "activation_checkpointing": p.activation_checkpointing, "offload": p.offload,
                    "dp": p.dp, "grad_accum": p.grad_accum, "cp": p.cp, "ep": p.ep, "vp": p.vp}
    nemo = dict(ln.split("=", 1) for ln in files["nemo_overrides.txt"].splitlines() if ln and not ln.startswith("#"))
    assert int(nemo["data.global_batch_size"]) == job.global_batch
    assert int(nemo["trainer.num_nodes"]) * int(nemo["trainer.devices"]) == job.gpus


# ---- plans the examples do not reach -------------------------------------------------------------------


def _with(job: Job, **plan: object) -> Job:
    return dataclasses.replace(job, plan=job.plan.model_copy(update=plan))


def _dp_only(job: Job) -> Job:
    """The same run laid out without TP/PP: the planner may give an example a Megatron plan (the DeepSpeed and
    Accelerate targets then refuse it in one line, checked here), their files are checked on this layout."""
    p = job.plan
    if p.tp * p.pp == 1:
        return job
    with pytest.raises(GpuwizError, match="use --target megatron"):
        _files(job, "deepspeed")
    return _with(job, tp=1, pp=1, dp=p.dp * p.tp * p.pp)


PLANS = [
    dict(zero_stage=1, offload="none", activation_checkpointing="selective"),
    dict(zero_stage=2, offload="optimizer", activation_checkpointing="none"),
    dict(zero_stage=3, offload="optimizer+params", activation_checkpointing="full"),
    dict(zero_stage=0, offload="none", micro_batch=3, grad_accum=5),
]


@pytest.mark.parametrize("update", PLANS)
def test_round_trip_for_other_plans(jobs, update):
    job = _with(_dp_only(jobs["enterprise-70b-pretrain"]), **update)
    p = job.plan
    ds = _files(job, "deepspeed")["ds_config.json"]
    _ds_keys_ok(json.loads(ds))
    assert readers.read_deepspeed(ds) == {"micro_batch": p.micro_batch, "grad_accum": p.grad_accum,
                                          "zero_stage": p.zero_stage, "offload": p.offload, "dp": p.dp}
    acc = _files(job, "accelerate")["accelerate_config.yaml"]
    _acc_ok(yaml.safe_load(acc))
    back = readers.read_accelerate(acc)
    assert back == readers.expected(
        {"FSDP": targets.ACCELERATE_FSDP_FIELDS, "DEEPSPEED": targets.ACCELERATE_DEEPSPEED_FIELDS}.get(
            targets.accelerate_plugin(p), ()), p) or targets.accelerate_plugin(p) not in ("FSDP", "DEEPSPEED")
    assert back["offload"] == p.offload and back["dp"] == p.dp
    if targets.accelerate_plugin(p) == "DEEPSPEED":
        assert back["zero_stage"] == p.zero_stage
    if p.offload != "optimizer+params":
        meg = _files(job, "megatron")["megatron_pretrain.sh"]
        got = readers.read_megatron(meg, job.gpus)
        assert got["zero_stage"] == p.zero_stage and got["offload"] == p.offload
        assert got["activation_checkpointing"] == p.activation_checkpointing
        assert got["grad_accum"] == p.grad_accum and got["micro_batch"] == p.micro_batch


def test_model_parallel_plan_goes_to_megatron_only(jobs):
    base = jobs["enterprise-70b-pretrain"]
    dp = base.gpus // 32  # tp 8 x pp 4 over the recommended GPU count
    job = _with(base, tp=8, pp=4, dp=dp, zero_stage=1)
    assert "megatron" in (refusal("deepspeed", job) or "")
    assert "megatron" in (refusal("accelerate", job) or "")
    script = _files(job, "megatron")["megatron_pretrain.sh"]
    assert "--sequence-parallel" in script
    back = readers.read_megatron(script, job.gpus)
    assert (back["tp"], back["pp"], back["dp"], back["zero_stage"]) == (8, 4, dp, 1)


def test_an_adapter_plan_with_model_parallelism_is_not_bounced_between_targets(jobs):
    """A LoRA plan with expert parallelism (the fastest Mixtral LoRA's): Megatron-LM's script does no LoRA and the
    data-parallel targets no EP, so each refusal names NeMo's PEFT recipes and the pin that gives a plan they run,
    and none sends the user to another of them."""
    job = _with(dataclasses.replace(jobs["small-team-lora-7b"], method="lora"), ep=8, dp=8)
    for target in ("megatron", "accelerate", "deepspeed"):
        why = refusal(target, job) or ""
        assert "NeMo's PEFT" in why and "ep=8" in why and "tp 1, pp 1, ep 1" in why, why
        assert "use --target megatron" not in why and "(use --target accelerate" not in why
    plain = _with(jobs["small-team-lora-7b"], tp=1, pp=1, ep=1, cp=1)
    assert refusal("accelerate", plain) is None  # ... and the pinned plan is written


def test_megatron_refuses_parameter_offload(jobs):
    job = _with(jobs["enterprise-70b-pretrain"], zero_stage=3, offload="optimizer+params")
    assert "offload" in (refusal("megatron", job) or "")


def test_readers_reject_malformed_configs():
    with pytest.raises(GpuwizError, match="not valid JSON"):
        readers.read_deepspeed("{ nope")
    with pytest.raises(GpuwizError, match="not micro-batch"):
        readers.read_deepspeed(json.dumps({"train_batch_size": 10, "train_micro_batch_size_per_gpu": 3,
                                           "gradient_accumulation_steps": 1, "zero_optimization": {"stage": 0}}))
    with pytest.raises(GpuwizError):
        readers.read_accelerate("a: [")
    with pytest.raises(GpuwizError, match="PARALLEL_ARGS"):
        readers.read_megatron("torchrun pretrain_gpt.py", 8)


# ---- Slurm ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("example", [p.stem for p in EXAMPLE_FILES])
def test_sbatch_directives_are_slurm_options_and_match_the_build(jobs, example):
    job = jobs[example]
    text = _files(job, "slurm")["job.sbatch"]
    directives = dict(re.findall(r"^#SBATCH (--[a-z-]+)(?:=(\S+))?$", text, re.M))
    assert set(directives) <= SBATCH_OPTS, set(directives) - SBATCH_OPTS
    assert int(directives["--nodes"]) == job.nodes
    assert int(directives["--gpus-per-node"]) == job.gpus_per_node
    assert int(directives["--ntasks-per-node"]) == 1
    assert int(directives["--cpus-per-task"]) == job.cpu_cores_per_node
    assert "--requeue" in directives and directives["--signal"].startswith("B:USR1@")
    d, hms = directives["--time"].split("-")
    h, m, _ = hms.split(":")
    hours = int(d) * 24 + int(h) + int(m) / 60
    assert job.upper_hours < hours <= PARTITION_MAX_HOURS or hours == PARTITION_MAX_HOURS
    assert "srun" in text and "torchrun" in text and "scontrol requeue" in text
    assert "--node-rank" not in text  # it would expand in the batch shell: 0 on every node
    assert ("--rdzv-backend=c10d" in text) == (job.nodes > 1)
    assert ("NCCL_IB_DISABLE=0" in text) == (job.nodes > 1 and job.rdma)


def test_time_limit_grows_with_the_estimate_and_caps(jobs):
    job = jobs["resnet50-imagenet"]
    short, capped = time_limit_hours(job)
    assert not capped and short > job.upper_hours
    longer, _ = time_limit_hours(dataclasses.replace(job, wall_hours=job.wall_hours * 3))
    assert longer > short
    assert time_limit_hours(dataclasses.replace(job, wall_hours=500.0)) == (PARTITION_MAX_HOURS, True)


# ---- Kubernetes ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("example", [p.stem for p in EXAMPLE_FILES])
def test_kubernetes_objects_validate_against_the_published_crds(jobs, example):
    job = jobs[example]
    files = _files(job, "kubernetes")
    docs = [*list(yaml.safe_load_all(files["trainjob.yaml"])), yaml.safe_load(files["pytorchjob.yaml"])]
    kinds = [d["kind"] for d in docs]
    assert kinds == ["TrainingRuntime", "TrainJob", "PyTorchJob"]
    for d in docs:
        crd = CRDS[d["kind"]]
        assert d["apiVersion"] == crd["apiVersion"]
        jsonschema.validate(d, crd["schema"])
    trainjob, pytorchjob = docs[1], docs[2]
    t = trainjob["spec"]["trainer"]
    assert t["numNodes"] == job.nodes and t["numProcPerNode"] == job.gpus_per_node
    assert t["resourcesPerNode"]["limits"]["nvidia.com/gpu"] == job.gpus_per_node
    specs = pytorchjob["spec"]["pytorchReplicaSpecs"]
    assert sum(s["replicas"] for s in specs.values()) == job.nodes
    pod = specs["Master"]["template"]["spec"]
    assert pod["volumes"][0]["emptyDir"]["medium"] == "Memory"
    assert pod["containers"][0]["volumeMounts"][0]["mountPath"] == "/dev/shm"
    assert any(e["name"] == "NCCL_DEBUG" for e in pod["containers"][0]["env"])


def test_a_wrong_field_fails_the_crd_check(jobs):
    """The schema check can fail: a misspelt field is caught."""
    d = list(yaml.safe_load_all(_files(jobs["resnet50-imagenet"], "kubernetes")["trainjob.yaml"]))[1]
    d["spec"]["trainer"]["numNode"] = d["spec"]["trainer"].pop("numNodes")
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(d, CRDS["TrainJob"]["schema"])


# ---- SkyPilot ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("example", [p.stem for p in EXAMPLE_FILES])
def test_skypilot_task_and_launcher(jobs, example):
    job = jobs[example]
    files = _files(job, "skypilot")
    task = yaml.safe_load(files["task.yaml"])
    jsonschema.validate(task, SKY_TASK)
    assert task["num_nodes"] == job.nodes
    name, n = task["resources"]["accelerators"].split(":")
    assert int(n) == job.gpus_per_node and name == targets.skypilot_accelerator(job.gpu)
    if job.renting and job.provider in targets.SKYPILOT_CLOUDS:
        assert task["resources"]["cloud"] == targets.SKYPILOT_CLOUDS[job.provider]
    else:
        assert "cloud" not in task["resources"]
    assert f"{job.wall_hours:,.1f} h" in files["task.yaml"]
    tree = ast.parse(files["sky_launch.py"])
    calls = {n.func.attr for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)}
    assert "set_time_estimator" in calls and "launch" in calls


def test_a_wrong_skypilot_field_fails_the_schema(jobs):
    task = yaml.safe_load(_files(jobs["resnet50-imagenet"], "skypilot")["task.yaml"])
    task["resources"]["accelerator"] = task["resources"].pop("accelerators")
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(task, SKY_TASK)


def test_plan_fields_reach_the_generic_launchers(jobs):
    job = jobs["enterprise-70b-pretrain"]
    env = targets.table_values(targets.ENV_FIELDS, job.plan)
    for target, name in (("torchrun", "launch.sh"), ("slurm", "job.sbatch")):
        text = _files(job, target)[name]
        for key, value in env.items():
            assert f"export {key}={value}\n" in text
    assert env["GPUWIZ_GLOBAL_BATCH"] == job.global_batch


def test_plan_is_the_typed_estimate_plan(jobs):
    assert all(isinstance(j.plan, Plan) for j in jobs.values())


def test_every_file_says_when_it_trains_another_batch_than_the_config_asks(jobs) -> None:
    """The 70B example asks 1,024 sequences a step; 96 replicas train 1,056: every target's files say so in their
    header, with the batch they use. A job whose replicas split its batch says nothing of the kind."""
    job = jobs["enterprise-70b-pretrain"]
    assert job.batch_asked == 1024 and job.global_batch == 1056
    for target in TARGETS:
        if refusal(target, job):
            continue
        text = "\n".join(_files(job, target).values())
        assert "asks for a global batch of 1,024" in text and "train 1,056 a step" in text, target
    split = dataclasses.replace(job, batch_asked=job.global_batch)
    for target in TARGETS:
        if not refusal(target, split):
            assert "asks for a global batch" not in "\n".join(_files(split, target).values()), target
