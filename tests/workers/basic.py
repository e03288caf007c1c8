"""Small workers for tests/test_launch.py."""

from __future__ import annotations

import os
import signal
import time

import torch
import torch.distributed as dist


def all_reduce_rank(rank: int, world_size: int, offset: float) -> tuple[float, int]:
    t = torch.tensor([float(rank) + offset])
    dist.all_reduce(t)
    return t.item(), os.getpid()


def fail_on_rank_1(rank: int, world_size: int, pid_file: str) -> None:
    with open(f"{pid_file}.{rank}", "w") as f:
        f.write(str(os.getpid()))
    if rank == 1:
        raise ValueError("rank 1 fails on purpose")
    time.sleep(60)


def sleep_forever(rank: int, world_size: int, pid_file: str) -> None:
    with open(f"{pid_file}.{rank}", "w") as f:
        f.write(str(os.getpid()))
    time.sleep(600)


def exit_hard(rank: int, world_size: int) -> None:
    if rank == 0:
        os._exit(3)
    time.sleep(60)


def die_on_rank_2(rank: int, world_size: int, pid_file: str) -> str:
    with open(f"{pid_file}.{rank}", "w") as f:
        f.write(str(os.getpid()))
    if rank == 2:
        os._exit(5)
    time.sleep(1.0)
    return f"rank {rank} done"
def return_tensor(rank: int, world_size: int) -> dict:
    return {"rank": rank, "t": torch.arange(4.0) * (rank + 1)}


def die_in_setup_on_rank_1(rank: int) -> None:
    """A `setup` hook: rank 1 is killed (SIGKILL, as the kernel's OOM killer would) before its group forms."""
    if rank == 1:
        os.kill(os.getpid(), signal.SIGKILL)


def raise_in_setup_on_rank_2(rank: int) -> None:
    if rank == 2:
        raise OSError("rank 2 cannot load its weights")
