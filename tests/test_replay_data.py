"""The committed replays were computed from the presets as they stand.

A replay (predicted, not measured) is a script's output committed to the package; the chapters read it
rather than re-running it. When a preset is corrected, its replays must be run again. The bug this catches:
the H100's capacity corrected to the 81,559 MiB nvidia-smi reports while Chapter 12's paging replay kept
the pool of 80 GiB (7,609 blocks of 16 tokens instead of 7,568), and a host link repriced while the swap
rows kept the old rate.

The general guard: every sweep whose output reads a preset records, under its JSON's `PRESETS_KEY`, the fields
of each preset its run read (`sweep_files.preset_record`), and `test_every_recorded_preset_is_todays` compares
them with today's; `test_every_script_that_reads_presets_records_them` keeps a new replay from escaping it.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from minigpt.costs.presets import ACHIEVED_HOST_LINKS, HARDWARE, MODELS
from minigpt.measure import sweeps
from minigpt.measure.sweep_files import DATA_DIR, PRESET_TABLES, PRESETS_KEY, preset_fields, preset_tables
from minigpt.serving.replay import replay_blocks

ROOT = Path(__file__).resolve().parent.parent
SWEEPS = ROOT / "scripts" / "sweeps"
#: The modules whose tables `PRESET_TABLES` names (`ALL_HARDWARE` is two of them together).
PRESET_MODULES = ("minigpt.costs.presets", "minigpt.costs.presets_links", "minigpt.costs.presets_recent")
READ_TABLES = {*PRESET_TABLES, "ALL_HARDWARE"}


def stale(file: str, record: dict[str, Any], tables: dict[str, dict[str, Any]]) -> list[str]:
    """Every way the presets `record` holds differ from `tables` today: a preset gone, a field changed, added
    or dropped; each line names the file, the preset, the field, the old and new value and what to rerun."""
    rerun = f"rerun `{record['command']}` ({record['script']})"
    out = []
    for table, rows in record["tables"].items():
        for name, fields in rows.items():
            if table not in tables or name not in tables[table]:
                out.append(f"{file}: {table}[{name!r}] is no longer a preset: {rerun}")
                continue
            now = preset_fields(tables[table][name])
            out += [f"{file}: {table}[{name!r}].{field} was {fields.get(field, '(absent)')!r}, is now "
                    f"{now.get(field, '(absent)')!r}: {rerun}"
                    for field in sorted(set(fields) | set(now)) if fields.get(field, ...) != now.get(field, ...)]
    return out


def records() -> dict[str, dict[str, Any]]:
    """Each committed sweep file's presets record, by file name (files without one left out)."""
    found = {path.name: sweeps.read_json(path) for path in sorted(DATA_DIR.glob("*.json"))}
    return {name: data[PRESETS_KEY] for name, data in found.items() if PRESETS_KEY in data}


def test_every_recorded_preset_is_todays():
    """The bug: a preset corrected (the H100's capacity from 80 GiB to the 81,559 MiB nvidia-smi reports) while
    a committed replay that read it keeps the old number (Chapter 12's paging pool of 7,609 blocks, not 7,568).
    Every file under minigpt/measure/data/ that records its presets must hold each one's fields of today."""
    tables, found = preset_tables(), records()
    assert found, f"no file under {DATA_DIR} records its presets ({PRESETS_KEY!r})"
    problems = []
    for file, record in found.items():
        assert (ROOT / record["script"]).is_file() and record["tables"], f"{file}: malformed record {record}"
        problems += stale(file, record, tables)
    assert not problems, "replays computed from presets that have changed since:\n" + "\n".join(problems)


def test_the_guard_names_what_changed():
    """The bug: a guard that cannot fail. A record of the 80 GiB H100 is stale today, and the message says
    which file, preset and field, the old and the new value, and what to rerun."""
    record = {"script": "scripts/sweeps/sweep_paging.py", "command": "python scripts/sweeps/sweep_paging.py "
              "--replay-only", "tables": {"HARDWARE": {"H100 SXM": preset_fields(HARDWARE["H100 SXM"]) | {
                  "memory_bytes": 80 * 2**30}}, "MODELS": {"Llama-1-7B": preset_fields(MODELS["Llama-2-7B"])}}}
    lines = stale("paging_cpu.json", record, preset_tables())
    assert lines == [
        f"paging_cpu.json: HARDWARE['H100 SXM'].memory_bytes was {80 * 2**30}, is now {81_559 * 2**20}: "
        "rerun `python scripts/sweeps/sweep_paging.py --replay-only` (scripts/sweeps/sweep_paging.py)",
        "paging_cpu.json: MODELS['Llama-1-7B'] is no longer a preset: rerun `python scripts/sweeps/sweep_paging.py "
        "--replay-only` (scripts/sweeps/sweep_paging.py)"]


def reads_presets(source: str) -> tuple[set[str], bool]:
    """The preset tables a script's source imports (`from minigpt.costs.presets import HARDWARE`) or reads as
    an attribute (`presets.HARDWARE`, `costs.presets.KV_LINKS`), and whether it calls `preset_record`."""
    names, records = set(), False
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module in PRESET_MODULES:
            names |= {alias.name for alias in node.names} & READ_TABLES
        elif isinstance(node, ast.Attribute) and node.attr in READ_TABLES:
            names.add(node.attr)
        elif isinstance(node, ast.Call):
            records |= getattr(node.func, "id", getattr(node.func, "attr", None)) == "preset_record"
    return names, records


def test_every_script_that_reads_presets_records_them():
    """The bug: a new replay that reads a preset table but writes no presets record, which the test above
    cannot see (so a corrected preset leaves it stale unnoticed), or a script that records but whose committed
    file was never rerun to carry the record. Scripts reading only the measured models' configs (SCALED,
    FAMILY, GPU_EXTRA) are measurements, not replays."""
    readers = {path.relative_to(ROOT).as_posix(): reads_presets(path.read_text(encoding="utf-8"))
               for path in sorted(SWEEPS.glob("*.py"))}
    readers = {script: facts for script, facts in readers.items() if facts[0]}
    assert "scripts/sweeps/sweep_paging.py" in readers, "the scan no longer sees sweep_paging.py's presets"
    silent = [f"{script} reads {', '.join(sorted(tables))} but never calls preset_record"
              for script, (tables, records_them) in readers.items() if not records_them]
    assert not silent, "\n".join(silent)
    recorded = {record["script"] for record in records().values()}
    unrun = sorted(set(readers) - recorded)
    assert not unrun, f"no committed file under {DATA_DIR} carries a record by {unrun}: rerun their replays"


@pytest.fixture(scope="module")
def paging() -> dict:
    return sweeps.read_json("data/paging_cpu.json")["replay"]


@pytest.mark.parametrize("chip", ["A100 80GB", "H100 SXM"])
def test_the_paging_replay_pools_are_todays_presets(paging: dict, chip: str):
    row = paging[chip]
    blocks = replay_blocks(MODELS[row["model"]], HARDWARE[chip], block_size=paging["block_size"], s=paging["s"])
    assert row["num_blocks"] == blocks, f"{chip}: rerun scripts/sweeps/sweep_paging.py --replay-only"
    assert row["preemption"]["num_blocks"] == blocks // 4
    rates = {name: ACHIEVED_HOST_LINKS[name].bandwidth_per_direction for name in row["host_link_bytes_per_s"]}
    assert row["host_link_bytes_per_s"] == rates and row["host_link"] in rates
    swaps = {key.removeprefix("swap ").removesuffix(" serial") for key in row["preemption"] if key.startswith("swap")}
    assert swaps == set(rates)


def test_the_tight_replay_pool_is_todays_presets(paging: dict):
    tight = paging["tight"]
    model, hw = MODELS[tight["model"]], HARDWARE[tight["hardware"]]
    assert tight["num_blocks"] == replay_blocks(model, hw, block_size=paging["block_size"], s=paging["s"])


def test_the_disaggregation_replay_pools_are_todays_presets():
    """Chapter 19's replay binds its pools with long prompts: an H100 pool of 80 GiB's blocks (before the
    81,559 MiB correction) gave Llama-2-7B's 2:1 split 14 req/s per chip instead of 16."""
    replayed = sweeps.read_json("data/disagg_cpu.json")["replayed"]
    hw = HARDWARE[replayed["chip"]]
    assert set(replayed["pool_blocks"]) == set(replayed["models"])
    for name, blocks in replayed["pool_blocks"].items():
        assert blocks == replay_blocks(MODELS[name], hw), f"{name}: rerun sweep_disagg.py --skip-measured"
