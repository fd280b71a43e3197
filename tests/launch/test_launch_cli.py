"""`gpuwiz launch` as a user runs it: default folder, no silent overwrite, refusals, hostile outputs."""

from __future__ import annotations

import os
import stat

import pytest

from conftest import EXAMPLES, run_cli

RESNET = EXAMPLES / "resnet50-imagenet.yaml"


def test_writes_into_launch_target_by_default_and_never_overwrites(tmp_path):
    r = run_cli("launch", RESNET, "--target", "slurm", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "launch-slurm" / "job.sbatch"
    assert out.is_file() and "wrote launch-slurm/job.sbatch" in r.stdout
    assert os.stat(out).st_mode & stat.S_IXUSR
    out.write_text("my edits\n")
    r = run_cli("launch", RESNET, "--target", "slurm", cwd=tmp_path)
    assert r.returncode == 2 and "already exists" in r.stderr and "--force" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert out.read_text() == "my edits\n"
    r = run_cli("launch", RESNET, "--target", "slurm", "--force", cwd=tmp_path)
    assert r.returncode == 0 and out.read_text().startswith("#!/bin/bash")


def test_nothing_is_written_when_one_file_exists(tmp_path):
    d = tmp_path / "k8s"
    d.mkdir()
    (d / "pytorchjob.yaml").write_text("mine\n")
    r = run_cli("launch", RESNET, "--target", "kubernetes", "-o", d)
    assert r.returncode == 2
    assert sorted(p.name for p in d.iterdir()) == ["pytorchjob.yaml"]  # trainjob.yaml not written either


def test_megatron_for_a_resnet_is_refused_in_one_line(tmp_path):
    r = run_cli("launch", RESNET, "--target", "megatron", cwd=tmp_path)
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1 and "Megatron" in r.stderr
    assert not (tmp_path / "launch-megatron").exists()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_hostile_outputs_are_refused(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    r = run_cli("launch", RESNET, "--target", "torchrun", "-o", fifo)
    assert r.returncode == 2 and "not a folder" in r.stderr
    d = tmp_path / "out"
    d.mkdir()
    os.mkfifo(d / "launch.sh")
    r = run_cli("launch", RESNET, "--target", "torchrun", "-o", d, "--force")
    assert r.returncode == 2 and "FIFO" in r.stderr
    target = tmp_path / "elsewhere.sh"
    target.write_text("keep\n")
    d2 = tmp_path / "out2"
    d2.mkdir()
    os.symlink(target, d2 / "launch.sh")
    r = run_cli("launch", RESNET, "--target", "torchrun", "-o", d2, "--force")
    assert r.returncode == 2 and "symbolic link" in r.stderr
    assert target.read_text() == "keep\n"
    os.symlink(d, tmp_path / "link-dir")
    r = run_cli("launch", RESNET, "--target", "torchrun", "-o", tmp_path / "link-dir")
    assert r.returncode == 2 and "symbolic link" in r.stderr
    if os.path.exists("/dev/null"):
        r = run_cli("launch", RESNET, "--target", "torchrun", "-o", "/dev/null")
        assert r.returncode == 2


def test_unknown_target_and_missing_config(tmp_path):
    r = run_cli("launch", RESNET, "--target", "mpi", cwd=tmp_path)
    assert r.returncode == 2 and "invalid choice" in r.stderr
    r = run_cli("launch", tmp_path / "nope.yaml", "--target", "slurm", cwd=tmp_path)
    assert r.returncode == 2 and "no such file" in r.stderr




def test_owned_hardware_that_does_the_run_gets_the_launch_files(tmp_path):
    """The answer's verdict is to use 8 of the team's 100000x H100; launch wrote files for the 1x H100 to rent
    beside it (the build to add capacity). It now writes them for the owned GPUs the run takes, and says so."""
    plain = EXAMPLES / "small-team-lora-7b.yaml"
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(plain.read_text() + "have:\n  - {gpu: h100-sxm, count: 100000}\n")
    r = run_cli("launch", plain, "--target", "torchrun", "-o", tmp_path / "a")
    assert r.returncode == 0, r.stderr
    assert "--nproc-per-node=1 " in (tmp_path / "a" / "launch.sh").read_text() + " "
    r = run_cli("launch", fleet, "--target", "torchrun", "-o", tmp_path / "b")
    assert r.returncode == 0, r.stderr
    assert "owned hardware does this run: launch files for 8 of your 100000x NVIDIA H100 SXM5 80GB" in r.stdout
    assert "--nproc-per-node=8" in (tmp_path / "b" / "launch.sh").read_text()
    r = run_cli("launch", fleet, "--target", "skypilot", "-o", tmp_path / "c")
    assert r.returncode == 0, r.stderr
    task = (tmp_path / "c" / "task.yaml").read_text()
    assert "H100:8" in task and "vast" not in task.lower()  # the owned GPUs, no rented offer's provider
