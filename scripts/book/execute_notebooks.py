"""Re-execute notebooks in place, saving outputs and widget state (what the static site renders).

    python scripts/book/execute_notebooks.py                       # every notebook in chapters/ and exercises/
    python scripts/book/execute_notebooks.py chapters/01_prefill_vs_decode.ipynb

Each notebook runs in a fresh `python3` kernel of this interpreter, from the notebook's own folder,
with PYTHONHASHSEED=0 (MINIGPT_DEVICE passes through). A cell that raises fails the run (exit 1,
the cell and the error printed) unless it is tagged `raises-exception`; the notebook is then not
written. Reference solutions (exercises/solutions/) are not executed unless named explicitly.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import nbformat
from jupyter_client.kernelspec import KernelSpec, KernelSpecManager
from jupyter_client.manager import AsyncKernelManager
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError

ROOT = Path(__file__).resolve().parents[2]
CELL_TIMEOUT_S = 600


class _ThisInterpreter(KernelSpecManager):
    """Resolve the `python3` kernel to this very interpreter, whatever kernelspecs are installed."""

    def get_kernel_spec(self, kernel_name: str) -> KernelSpec:
        return KernelSpec(
            argv=[sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            display_name="Python 3",
            language="python",
            resource_dir="",
        )


def default_notebooks() -> list[Path]:
    return sorted([*ROOT.glob("chapters/*.ipynb"), *ROOT.glob("exercises/*.ipynb")])


def execute(path: Path, timeout: int) -> None:
    """Run `path` top to bottom and write it back with outputs and widget state."""
    nb = nbformat.read(path, as_version=4)
    km = AsyncKernelManager(kernel_name="python3", kernel_spec_manager=_ThisInterpreter())
    client = NotebookClient(
        nb,
        km=km,
        timeout=timeout,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
        allow_errors=False,  # errors raise unless the cell is tagged raises-exception
        store_widget_state=True,
        record_timing=False,  # no timestamps in cell metadata: re-runs give small diffs
    )
    client.execute()
    _drop_unviewed_widget_state(nb)
    nbformat.write(nb, path)


def _drop_unviewed_widget_state(nb: nbformat.NotebookNode) -> None:
    """Keep the saved widget state only if an output displays a widget: a progress bar that a library shows
    and clears (tqdm) leaves state without a view, and the site would wait for a widget it never draws."""
    view = "application/vnd.jupyter.widget-view+json"
    if not any(view in output.get("data", {}) for cell in nb.cells for output in cell.get("outputs", [])):
        nb.metadata.pop("widgets", None)


def main(argv: list[str] | None = None) -> int:
    fmt = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=fmt)
    parser.add_argument("paths", nargs="*", type=Path, help="notebooks (default: chapters/ and exercises/)")
    parser.add_argument("--timeout", type=int, default=CELL_TIMEOUT_S, help="seconds per cell")
    args = parser.parse_args(argv)
    paths = [p.resolve() for p in args.paths] or default_notebooks()
    os.environ["PYTHONHASHSEED"] = "0"  # inherited by the kernels
    # Outputs for the book: explorers do not inline the cost scripts or explorer.js, the site serves them
    # (minigpt/book/explorers.py; nbval's sanitizer drops the inlined copies a plain kernel adds).
    os.environ["MINIGPT_EXPLORER_JS"] = "site"
    failed = []
    for path in paths:
        if not path.is_file():
            print(f"error: {path} does not exist", file=sys.stderr)
            return 2
        name = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        start = time.perf_counter()
        print(f"executing {name} ...", flush=True)
        try:
            execute(path, args.timeout)
        except (CellExecutionError, CellTimeoutError) as err:
            print(f"FAILED {name}: a cell raised (not tagged raises-exception); notebook not written\n{err}",
                  file=sys.stderr, flush=True)
            failed.append(name)
            continue
        print(f"  ok in {time.perf_counter() - start:.1f} s", flush=True)
    if failed:
        print("failed: " + ", ".join(map(str, failed)), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
