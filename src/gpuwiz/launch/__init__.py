"""From answer to running job: launch files for the engines teams run (torchrun, accelerate, DeepSpeed,
Megatron-LM, Slurm, Kubernetes, SkyPilot), generated from the recommendation's plan.

Pure: ``job_from`` (Recommendation -> Job) and ``generate`` (target, Job -> files) do no I/O; writing
the files (``gpuwiz.launch.write``) is separate.
"""

from gpuwiz.launch.job import Job, job_from
from gpuwiz.launch.targets import TARGETS, LaunchFile, generate, refusal

__all__ = ["TARGETS", "Job", "LaunchFile", "generate", "job_from", "refusal"]
