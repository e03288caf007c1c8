"""Start W worker processes on one `torch.distributed` process group, collect what each returns, and
always clean up: the process group destroyed in every worker, every worker joined, none left behind.

This is how PyTorch users start workers on one machine (`torch.multiprocessing.start_processes`, the
engine under `mp.spawn`; `torchrun` does the same from a shell). The rendezvous is the env:// one
`torchrun` uses: `MASTER_ADDR=127.0.0.1` and a free port per run. A worker that raises makes `run`
raise with that worker's traceback after the others are killed; a run that outlives `timeout_s` is
killed whole and raises `TimeoutError`.

A long-lived job (a driver in rank 0 and serving workers, Chapter 19) may name `expendable` ranks: a
worker there that raises or dies does not stop the run; the others go on (the driver notices through
`torch.distributed`: gloo raises on a closed connection, or a wait times out) and its place in the
result is a `WorkerFailure`. A failure of any other rank still kills all.

Rendezvous. Every worker says it has joined once the group has formed in every rank: `init_process_group`
returns, then (gloo) a barrier. Without the barrier, a rank whose own connections were up could say so and
die (an expendable one, at once) while another rank was still connecting to it, whose rendezvous then
failed ("Connection closed by peer"; `tests/test_launch.py` kills an expendable rank at its first line). A
worker that dies
before that (an import that fails, a process killed while loading) would leave every other rank
blocked in the group's creation until its timeout; `run` notices the death at its next poll (every
50 ms), kills the others and raises `RendezvousError` naming the rank, whatever `expendable` says:
without it the group never forms.

`setup(rank)`, if given, runs in each worker before the rendezvous (a top-level function, or a
`functools.partial` of one): where a GPU worker picks its device, and where the fault-injection tests
of Chapter 19 kill a worker before its group forms.

The worker function must be importable by name (defined at the top level of a module, not in a
notebook): workers are started with `forkserver`, as fresh as `spawn`'s (no state of the caller's is
inherited: no thread, no CUDA context, no open group) but forked from a server process that has already
imported torch, so a worker starts in a fraction of a second instead of the 2-3 s an import of torch
takes on this project's 2-core machine. The server is started once per calling process (it holds no
state but its imports) and ends with it. Each worker gets the caller's environment as it is at the call
(a forked worker would otherwise see the server's, fixed when it started).
"""

from __future__ import annotations

import io
import os
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable, Collection
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.multiprocessing.spawn import ProcessException

#: gloo carries CPU tensors, NCCL CUDA tensors; "cpu:gloo,cuda:nccl" is one group with both, each tensor
#: going to the backend of its device (vLLM and SGLang keep such a CPU group for control messages).
BACKENDS = ("gloo", "nccl", "cpu:gloo,cuda:nccl")
JOINED = "joined"  # what a worker puts on the results queue once its process group has formed


class RendezvousError(RuntimeError):
    """A worker died before the process group formed; the others were killed."""


@dataclass(frozen=True)
class WorkerFailure:
    """What `run` returns for an expendable rank that raised or died: its rank, exit code and traceback."""

    rank: int
    exitcode: int | None
    detail: str


def free_port() -> int:
    """A TCP port nobody listens on now (the kernel's choice), for one run's rendezvous."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _pack(value: Any) -> bytes:
    """A worker's result as bytes (`torch.save`): tensors travel by value, not as shared-memory handles
    that die with the worker (torch's queues would send those)."""
    buffer = io.BytesIO()
    torch.save(value, buffer)
    return buffer.getvalue()


def _unpack(data: bytes) -> Any:
    return torch.load(io.BytesIO(data), weights_only=False)


#: How workers start (see the module docstring), and what their server imports once for all of them.
START_METHOD = "forkserver"
PRELOAD = ["torch", "torch.distributed", "minigpt.distributed.launch"]


def _context() -> Any:
    ctx = mp.get_context(START_METHOD)
    ctx.set_forkserver_preload(PRELOAD)  # read when the server starts: the first run of this process
    return ctx


def _worker(rank: int, fn: Callable[..., Any], world_size: int, backend: str, port: int, threads: int,
            timeout_s: float, results: Any, setup: Callable[[int], None] | None, args: tuple[Any, ...],
            environ: dict[str, str]) -> None:
    os.environ.clear()
    os.environ.update(environ)  # the caller's, as at the call (a spawned worker's would be)
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    torch.set_num_threads(threads)
    try:
        if setup is not None:
            setup(rank)
        dist.init_process_group(backend, rank=rank, world_size=world_size, timeout=timedelta(seconds=timeout_s))
        if backend == "gloo":  # every rank's full mesh is up before any says it joined (see Rendezvous)
            dist.barrier()
    except BaseException:
        results.put((rank, None, traceback.format_exc()))
        raise
    results.put((rank, JOINED, None))
    returned = False
    try:
        out = fn(rank, world_size, *args)
        results.put((rank, _pack(out), None))
        returned = True
    except BaseException:
        results.put((rank, None, traceback.format_exc()))
        raise
    finally:
        if returned and any(th.is_alive() for th in threading.enumerate() if th is not threading.main_thread()):
            # A helper thread of `fn` is still blocked in a receive from a peer that died (gloo cannot cancel
            # it): destroying the group now would abort the process ("terminate called without an active
            # exception"). The result is already sent, so end the process here, without the group's teardown.
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(0)
        dist.destroy_process_group()


def run(fn: Callable[..., Any], world_size: int, *args: Any, backend: str = "gloo", threads: int = 1,
        timeout_s: float = 120.0, expendable: Collection[int] = (),
        setup: Callable[[int], None] | None = None) -> list[Any]:
    """Run `fn(rank, world_size, *args)` in `world_size` processes on one process group; return what
    each rank returned, in rank order (picklable values; tensors come back by value, through `torch.save`).

    Raises `ValueError` for a bad argument, `RendezvousError` if a worker dies before the group forms,
    `RuntimeError` carrying the failing rank's traceback if a worker raises or dies, `TimeoutError` if
    the whole run takes longer than `timeout_s` seconds.
    In every case no worker survives the call. A rank in `expendable` may fail without stopping the
    others: its entry in the result is then a `WorkerFailure`.
    """
    if not isinstance(world_size, int) or isinstance(world_size, bool) or world_size < 1:
        raise ValueError(f"world_size must be an int >= 1, got {world_size!r}")
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads must be an int >= 1, got {threads!r}")
    if not timeout_s > 0:
        raise ValueError(f"timeout_s must be > 0 seconds, got {timeout_s!r}")
    spare = set(expendable)
    if not all(isinstance(r, int) and 0 <= r < world_size for r in spare) or 0 in spare:
        raise ValueError(f"expendable must hold ranks in 1..{world_size - 1} (rank 0 drives), got {expendable!r}")
    ctx = _context()
    results = ctx.SimpleQueue()
    context = mp.start_processes(
        _worker, args=(fn, world_size, backend, free_port(), threads, timeout_s, results, setup, args,
                       dict(os.environ)),
        nprocs=world_size, join=False, start_method=START_METHOD)
    got: dict[int, Any] = {}
    errors: dict[int, str] = {}
    joined: set[int] = set()
    deadline = time.monotonic() + timeout_s

    def drain() -> None:
        while not results.empty():
            rank, out, err = results.get()
            if out == JOINED:
                joined.add(rank)
            elif err is None:
                got[rank] = _unpack(out)
            else:
                errors[rank] = err

    def check_rendezvous() -> None:
        """Raise if a worker died before the group formed (the others would wait for it until the timeout).
        A rank that had joined and then failed is named as the cause: the others' rendezvous fails because
        of it (rank 0 holds the rendezvous store), so their deaths are its consequence."""
        drain()
        if len(joined) == world_size:
            return
        dead = [r for r, p in enumerate(context.processes) if not p.is_alive()]
        if not dead:
            return
        drain()
        failed = [r for r in dead if r in joined and context.processes[r].exitcode != 0]
        unjoined = [r for r in dead if r not in joined]
        if failed and (unjoined or any(r not in spare for r in failed)):
            r = failed[0]
            detail = errors.get(r) or f"exit code {context.processes[r].exitcode}"
            raise RuntimeError(f"worker rank {r} of {world_size} failed:\n{detail}")
        if unjoined:
            r = unjoined[0]
            detail = errors.get(r) or f"exit code {context.processes[r].exitcode}"
            raise RendezvousError(f"worker rank {r} of {world_size} died before the process group formed "
                                  f"(ranks {sorted(joined)} had joined); all killed: {detail}")

    try:
        while len(joined) < world_size:
            check_rendezvous()
            if time.monotonic() > deadline:
                raise TimeoutError(f"the process group did not form within timeout_s={timeout_s} s "
                                   f"(joined: {sorted(joined)}); all killed")
            time.sleep(0.05)
        while spare:  # poll each process: a failure of an expendable rank is recorded, not fatal
            drain()
            done = True
            for r, p in enumerate(context.processes):
                if p.is_alive():
                    done = False
                elif p.exitcode != 0 and r not in spare:
                    drain()
                    detail = errors.get(r) or f"exit code {p.exitcode}"
                    raise RuntimeError(f"worker rank {r} of {world_size} failed:\n{detail}")
            if done:
                drain()
                for r, p in enumerate(context.processes):
                    if r not in got:
                        got[r] = WorkerFailure(r, p.exitcode, errors.get(r) or f"exit code {p.exitcode}")
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"workers did not finish within timeout_s={timeout_s} s; all killed")
            time.sleep(0.05)
        while not spare:
            drain()
            try:
                if context.join(timeout=0.05, grace_period=1.0):
                    break
            except ProcessException as e:  # a worker raised or died: the others are killed by join
                drain()
                rank = e.error_index
                detail = errors.get(rank) or str(e)
                raise RuntimeError(f"worker rank {rank} of {world_size} failed:\n{detail}") from None
            if time.monotonic() > deadline:
                raise TimeoutError(f"workers did not finish within timeout_s={timeout_s} s; all killed")
        drain()
    finally:
        for p in context.processes:
            if p.is_alive():
                p.kill()
            p.join()
        results.close()
    missing = sorted(set(range(world_size)) - set(got))
    if missing:
        raise RuntimeError(f"ranks {missing} returned nothing")
    return [got[r] for r in range(world_size)]
