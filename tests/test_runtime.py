"""Where a process runs: the CUDA device each rank takes (no GPU needed: device count and set_device are faked)."""
import pytest
import torch

from trainer import runtime


@pytest.fixture
def cuda(monkeypatch):
    """A fake CUDA with `visible` devices; returns the list of indices set_device was called with."""
    chosen = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "set_device", chosen.append)
    monkeypatch.setattr(runtime.dist, "is_initialized", lambda: True)  # no process group is joined

    def visible(n):
        monkeypatch.setattr(torch.cuda, "device_count", lambda: n)
        return chosen
    return visible


@pytest.mark.parametrize("visible,local_rank,index", [(1, 3, 0), (4, 3, 3), (2, 3, 1)])
def test_rank_takes_local_rank_modulo_the_visible_devices(cuda, monkeypatch, visible, local_rank, index):
    """SLURM binding one GPU per task shows every rank one device: set_device(LOCAL_RANK) failed for all but rank 0."""
    chosen = cuda(visible)
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setenv("RANK", str(local_rank))
    monkeypatch.setenv("LOCAL_RANK", str(local_rank))
    run = runtime.start("cuda", "bf16")
    assert chosen == [index] and run.device == torch.device("cuda", index) and run.rank == local_rank


def test_nccl_is_told_the_device_of_the_rank_not_left_to_guess_it(cuda, monkeypatch):
    """Seen on an H200: NCCL warned "Guessing device ID based on global rank. This can cause a hang if rank to GPU
    mapping is heterogeneous": it guesses rank % device_count, where a rank's device is LOCAL_RANK modulo the
    visible devices (rank 3 of a node showing 2 GPUs, with LOCAL_RANK 1)."""
    chosen, joined = cuda(2), []
    monkeypatch.setattr(runtime.dist, "is_initialized", lambda: False)
    monkeypatch.setattr(runtime.dist, "init_process_group", lambda backend, **kw: joined.append((backend, kw)))
    for name, value in (("WORLD_SIZE", "4"), ("RANK", "3"), ("LOCAL_RANK", "1"), ("MASTER_ADDR", "127.0.0.1")):
        monkeypatch.setenv(name, value)
    run = runtime.start("cuda", "bf16")
    assert chosen == [1] and joined == [("nccl", {"timeout": joined[0][1]["timeout"], "device_id": run.device})]
    assert run.device == torch.device("cuda", 1)


def test_single_process_takes_the_device_it_names(cuda, monkeypatch):
    chosen = cuda(2)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    assert runtime.start("cuda:1", "bf16").device == torch.device("cuda", 1) and chosen == [1]


def test_the_process_group_waits_the_configured_timeout_longer_than_nccls_ten_minutes(monkeypatch):
    """Classic bug: no timeout given, NCCL's watchdog (10 min) kills the job while rank 0 writes a large checkpoint
    and the other ranks wait in the barrier after it."""
    from datetime import timedelta

    from trainer.config import RunConfig

    default = RunConfig.parse({"steps": 1}).pg_timeout_s()
    assert default >= 3600 and RunConfig.parse({"steps": 1, "parallel": {"timeout_s": 7200}}).pg_timeout_s() == 7200
    for name in ("WORLD_SIZE", "RANK", "MASTER_ADDR"):
        monkeypatch.delenv(name, raising=False)
    run = runtime.start("cpu", "fp32", group=True, timeout_s=7200)
    try:
        group = runtime.dist.distributed_c10d._get_default_group()
        assert group._get_backend(torch.device("cpu")).options._timeout == timedelta(seconds=7200)
    finally:
        runtime.stop(run)
