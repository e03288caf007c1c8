"""`minigpt.distributed.launch`: results in rank order, a failing worker's traceback, a timeout, bad
arguments named; and in every case no worker process left alive (the bug this catches: a launcher that
raises on the first failure and forgets the ranks still sleeping)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from limits import DISTRIBUTED, HANG_S

from minigpt.distributed import launch
from tests.workers import basic

pytestmark = DISTRIBUTED


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead; only the parent's reaping is missing
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except FileNotFoundError:
        return False


def _pids(stem: Path, world_size: int) -> list[int]:
    return [int(Path(f"{stem}.{r}").read_text()) for r in range(world_size)
            if Path(f"{stem}.{r}").exists()]


def test_results_come_back_in_rank_order_and_the_collective_ran() -> None:
    out = launch.run(basic.all_reduce_rank, 3, 0.5, timeout_s=HANG_S)
    assert [v for v, _ in out] == [4.5, 4.5, 4.5]  # 0.5 + 1.5 + 2.5
    pids = [p for _, p in out]
    assert len(set(pids)) == 3 and os.getpid() not in pids
    assert not any(_alive(p) for p in pids)


def test_tensors_come_back_by_value() -> None:
    # the bug: torch's queues send a tensor as a shared-memory handle that dies with its worker
    out = launch.run(basic.return_tensor, 2, timeout_s=HANG_S)
    assert [o["rank"] for o in out] == [0, 1]
    assert out[1]["t"].tolist() == [0.0, 2.0, 4.0, 6.0]


def test_a_failing_worker_raises_its_traceback_and_kills_the_rest(tmp_path: Path) -> None:
    stem = tmp_path / "pid"
    with pytest.raises(RuntimeError, match="rank 1 .*failed(.|\n)*rank 1 fails on purpose"):
        launch.run(basic.fail_on_rank_1, 2, str(stem), timeout_s=HANG_S)
    pids = _pids(stem, 2)
    assert len(pids) == 2 and not any(_alive(p) for p in pids)


def test_a_worker_that_dies_without_python_is_reported() -> None:
    with pytest.raises(RuntimeError, match="rank 0"):
        launch.run(basic.exit_hard, 2, timeout_s=HANG_S)


def test_a_run_past_its_timeout_is_killed_whole(tmp_path: Path) -> None:
    stem = tmp_path / "pid"
    # long enough for both workers to start on a loaded machine (they write their pids first)
    with pytest.raises(TimeoutError, match="timeout_s=10"):
        launch.run(basic.sleep_forever, 2, str(stem), timeout_s=10)
    pids = _pids(stem, 2)
    assert len(pids) == 2 and not any(_alive(p) for p in pids)


@pytest.mark.parametrize(("kwargs", "name"), [
    ({"world_size": 0}, "world_size"), ({"world_size": 2, "backend": "mpi"}, "backend"),
    ({"world_size": 2, "threads": 0}, "threads"), ({"world_size": 2, "timeout_s": 0}, "timeout_s"),
])
def test_bad_arguments_name_the_parameter(kwargs: dict, name: str) -> None:
    kwargs = dict(kwargs)  # the parametrization's own dict stays whole for a second run in the same session
    world_size = kwargs.pop("world_size")
    with pytest.raises(ValueError, match=name):
        launch.run(basic.all_reduce_rank, world_size, 0.0, **kwargs)


def test_an_expendable_worker_may_die_and_the_rest_finish(tmp_path: Path) -> None:
    out = launch.run(basic.die_on_rank_2, 3, str(tmp_path / "pid"), timeout_s=HANG_S, expendable=[2])
    assert out[0] == "rank 0 done" and out[1] == "rank 1 done"
    assert isinstance(out[2], launch.WorkerFailure) and out[2].rank == 2 and out[2].exitcode == 5
    pids = _pids(tmp_path / "pid", 3)
    assert len(pids) == 3 and not any(_alive(p) for p in pids)


def test_a_non_expendable_failure_still_kills_all(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="rank 1"):
        launch.run(basic.fail_on_rank_1, 3, str(tmp_path / "pid"), timeout_s=HANG_S, expendable=[2])
    pids = _pids(tmp_path / "pid", 3)
    assert not any(_alive(p) for p in pids)


def test_rank_0_cannot_be_expendable() -> None:
    with pytest.raises(ValueError, match="expendable"):
        launch.run(basic.all_reduce_rank, 2, 0.0, expendable=[0])


@pytest.mark.parametrize(("setup", "rank", "detail"), [
    (basic.die_in_setup_on_rank_1, 1, "exit code -9"),
    (basic.raise_in_setup_on_rank_2, 2, "cannot load its weights"),
])
def test_a_worker_that_dies_before_the_group_forms_ends_the_run_at_once(setup, rank: int, detail: str) -> None:
    """The others would wait in `init_process_group` for the missing rank until their timeout (here
    HANG_S): the launcher must notice the death itself. The error's type is the proof that it did: a
    run that waited would end in `TimeoutError` instead. An expendable rank is no exception: without it
    the group never forms."""
    with pytest.raises(launch.RendezvousError, match=f"rank {rank} .*before the process group formed(.|\n)*{detail}"):
        launch.run(basic.all_reduce_rank, 3, 0.0, timeout_s=HANG_S, expendable=[1, 2], setup=setup)
