"""Write the hostile Exercise 1 submissions of tests/data/submissions/ (one per class of attack on the grader).

    python scripts/maintenance/make_hostile_fixtures.py

Each notebook has the exercise's setup and imports cells, then the attack, then some honest answers,
so that its exact expected score (tests/test_grading.py, HOSTILE) shows both that the attack failed
and that grading went on. The older fixtures of that folder (corrupted, syntax_error, ...) are
hand-written and not touched here.
"""

from __future__ import annotations

import json
from pathlib import Path

FOLDER = Path(__file__).resolve().parents[2] / "tests" / "data" / "submissions"
MARKER = "minigpt-hostile"  # in every path and command line the attacks create, so the tests can look for them

Q1 = "def prefill_flops(L, P, d):\n    return 12 * L * P * d**2 + 2 * L * P**2 * d"
Q2 = "def decode_step_flops(L, S, d):\n    return 12 * L * d**2 + 2 * L * S * d"
Q3 = "def decode_flops(L, P, D, d):\n    return 12 * L * D * d**2 + 2 * L * d * (D * P + D * (D - 1) // 2)"
Q4 = ("def no_cache_flops(L, P, D, d):\n    n = D * P + D * (D - 1) // 2\n"
      "    n2 = D * P * P + P * D * (D - 1) + (D - 1) * D * (2 * D - 1) // 6\n"
      "    return 12 * L * d**2 * n + 2 * L * d * n2")

# A walk over the sandbox's whole file system (skipping the system libraries) for files of given names.
FIND = f'''import os

def find(names, skip=("/usr", "/proc", "/sys", "/dev", "/lib", "/lib64", "/sandbox/site-packages",
                      "/sandbox/python")):
    found = []
    for top, dirs, files, dfd in os.fwalk("/"):
        dirs[:] = [x for x in dirs if os.path.join(top, x) not in skip]
        found += [os.path.join(top, f) for f in files if f in names or f.endswith(names) or "{MARKER}" in f]
    return found
'''

ATTACKS: dict[str, list[str]] = {
    # The oracle: the registry, the cost formulas, a private helper, the presets' methods.
    "oracle_call": [
        "from minigpt.exercises.registry import question\n\n"
        "def prefill_flops(L, P, d):\n    return question('ex01.q1')[1].oracle(L=L, P=P, d=d)",
        "def decode_step_flops(L, S, d):\n    from minigpt import costs\n"
        "    return costs.decode_step_macs(L=L, S=S, d=d)",
        "def decode_flops(L, P, D, d):\n    from minigpt.exercises import ex01\n"
        "    return ex01.EXERCISE.questions[2].oracle(L=L, P=P, D=D, d=d)",
        Q4,
        "def prefill_flops_full(L, P, d, d_ffn, V):\n    from minigpt.costs.presets import ModelPreset\n"
        "    return ModelPreset('x', L, 1, 1, d, d_ffn, V, 0, '').matrix_params",
    ],
    # Switch a guard off through gc and the caller's frames, then read the solutions and write the package.
    "guard_disabled": [
        "import gc, sys\n"
        "for obj in gc.get_objects():\n"
        "    try:\n"
        "        if hasattr(obj, 'active') and hasattr(obj, 'violation'):\n"
        "            obj.active = False\n"
        "    except Exception:\n"
        "        pass\n"
        "frame = sys._getframe()\n"
        "while frame is not None:\n"
        "    for hook in ('guard', 'Guard'):\n"
        "        frame.f_globals.pop(hook, None)\n"
        "    frame = frame.f_back\n",
        FIND + "\ndef prefill_flops(L, P, d):\n"
        "    for path in find(('ex01_prefill_vs_decode.py',)):\n"
        "        if 'solutions' in path:\n"
        "            ns = {}\n            exec(open(path).read(), ns)\n"
        "            return ns['prefill_flops'](L, P, d)\n"
        "    return 0",
        "import minigpt, pathlib\n"
        "for target in pathlib.Path(minigpt.__file__).parent.rglob('*.py'):\n"
        "    try:\n        target.write_text('raise SystemExit')\n    except OSError as err:\n"
        "        print('write refused:', type(err).__name__)\n",
        Q2,
    ],
    # os.open with dir_fd: read the solutions, write into the package and the exercises.
    "dir_fd": [
        FIND + "\ndef prefill_flops(L, P, d):\n"
        "    root = os.open('/', os.O_RDONLY | os.O_DIRECTORY)\n"
        "    for path in find(('ex01_prefill_vs_decode.py',)):\n"
        "        fd = os.open(path.lstrip('/'), os.O_RDONLY, dir_fd=root)\n"
        "        return len(os.read(fd, 100))\n"
        "    raise FileNotFoundError('no solutions in reach')",
        "import os\nWROTE = []\n"
        "for folder in ('/sandbox/lib/minigpt', '/sandbox/lib/minigpt/grading', '/sandbox/lib', '/'):\n"
        "    try:\n"
        "        dfd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)\n"
        "        fd = os.open('__init__.py', os.O_WRONLY | os.O_CREAT | os.O_APPEND, dir_fd=dfd)\n"
        "        os.write(fd, b'raise SystemExit')\n        WROTE.append(folder)\n"
        "    except OSError as err:\n        print('refused:', type(err).__name__)\n"
        "    try:\n        os.rename('/sandbox/lib', '/sandbox/lib-away')\n        WROTE.append('rename')\n"
        "    except OSError as err:\n        print('rename refused:', type(err).__name__)\n",
        Q2,
        "def decode_flops(L, P, D, d):\n    if WROTE:\n        return -1\n"
        "    return 12 * L * D * d**2 + 2 * L * d * (D * P + D * (D - 1) // 2)",
    ],
    # A sitecustomize.py in every folder on the path: it would raise a friend and zero a classmate.
    "sitecustomize": [
        "import os, sys\nPLANTED = []\n"
        "payload = 'import builtins; builtins.print(\"" + MARKER + " sitecustomize ran\")\\n'\n"
        "for folder in [*sys.path, '/tmp', os.getcwd()]:\n"
        "    try:\n"
        "        with open(os.path.join(folder or '.', 'sitecustomize.py'), 'w') as f:\n"
        "            f.write(payload)\n"
        "        PLANTED.append(folder)\n"
        "    except OSError:\n        pass\n"
        "print('planted in', len(PLANTED), 'folder(s)')\n",
        Q1,
        "import os\ndef decode_step_flops(L, S, d):\n    os._exit(3)  # forces a relaunch: a planted file must not run",
        "import sys\ndef decode_flops(L, P, D, d):\n"
        "    if 'sitecustomize' in sys.modules:\n        return -1\n"
        "    return 12 * L * D * d**2 + 2 * L * d * (D * P + D * (D - 1) // 2)",
    ],
    # Daemons in new sessions (Popen goes through _posixsubprocess.fork_exec) and a multiprocessing spawn
    # child, meant to wait for the grader to exit and then rewrite the scores.
    "escaped_daemon": [
        "import multiprocessing, subprocess, sys, time\n"
        "script = ('import os, time\\n'\n"
        "          'time.sleep(3)\\n'\n"
        "          'for top, dirs, files in os.walk(\"/\"):\\n'\n"
        "          '    for f in files:\\n'\n"
        "          '        if f in (\"scores.csv\", \"details.csv\", \"results.json\"):\\n'\n"
        "          '            open(os.path.join(top, f), \"w\").write(\"pwned\")\\n'\n"
        "          'time.sleep(30)  # " + MARKER + "-daemon\\n')\n"
        "subprocess.Popen([sys.executable, '-c', script], start_new_session=True,\n"
        "                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
        "ctx = multiprocessing.get_context('spawn')\n"
        "try:\n    ctx.Process(target=time.sleep, args=(30,)).start()\nexcept Exception as err:\n"
        "    print('spawn failed:', type(err).__name__)\n",
        Q1,
    ],
    # Kill the parent: pidfd_send_signal, kill on the parent and on every process, a /proc/<ppid>/mem write.
    "kill_parent": [
        Q1,
        "import os, signal\n"
        "for pid in {os.getppid(), 1}:\n"
        "    try:\n        signal.pidfd_send_signal(os.pidfd_open(pid), signal.SIGKILL)\n"
        "    except OSError as err:\n        print('pidfd refused:', type(err).__name__)\n"
        "    try:\n        os.kill(pid, signal.SIGKILL)\n    except OSError as err:\n"
        "        print('kill refused:', type(err).__name__)\n"
        "try:\n    with open(f'/proc/{os.getppid()}/mem', 'r+b', buffering=0) as mem:\n"
        "        mem.seek(0x400000)\n        mem.write(b'\\0' * 4096)\nexcept OSError as err:\n"
        "    print('mem refused:', type(err).__name__)\n"
        "os.kill(-1, signal.SIGKILL)  # every process this one may signal (never itself)\n",
        Q2,
    ],
    # Heartbeats: ignore SIGALRM and write progress events to every descriptor, forever.
    "endless_heartbeats": [
        Q1,
        "import json, os, signal, time\n"
        "signal.signal(signal.SIGALRM, signal.SIG_IGN)\n"
        "fds = [int(fd) for fd in os.listdir('/proc/self/fd') if int(fd) > 2]\n"
        "while True:\n"
        "    for fd in fds:\n"
        "        try:\n"
        "            os.write(fd, json.dumps({'event': 'cell_start', 'cell': 1}).encode() + b'\\n')\n"
        "        except OSError:\n            pass\n"
        "    time.sleep(0.05)\n",
        Q2,
    ],
    # Another job's files (with --jobs 2): classmates' notebooks, logs, results and progress files.
    "other_jobs": [
        FIND + "\nFOUND = find(('.ipynb', '.jsonl', 'results.json', 'scores.csv', 'details.csv', '.txt'))\n"
        "print(len(FOUND), 'files of other jobs in reach')\n",
        "def prefill_flops(L, P, d):\n    if FOUND:\n        return -len(FOUND)\n"
        "    return 12 * L * P * d**2 + 2 * L * P**2 * d",
    ],
    # Memory: 4 GB at once, in a cell and in two questions.
    "memory_bomb": [
        "try:\n    hog = bytearray(4 * 10**9)\nexcept MemoryError:\n    print('4 GB refused')\n",
        "def prefill_flops(L, P, d):\n    hog = bytearray(4 * 10**9)\n    return len(hog)",
        "import torch\ndef decode_step_flops(L, S, d):\n    return int(torch.ones(10**9).sum())",
        Q3,
    ],
    # Processes: start threads until refused (they count as tasks), then try to fork one process more.
    "process_bomb": [
        "import os, threading, time\ntasks = []\n"
        "try:\n"
        "    for _ in range(1000):\n"
        "        t = threading.Thread(target=time.sleep, args=(60,), daemon=True)\n"
        "        t.start()\n        tasks.append(t)\n"
        "except RuntimeError as err:\n    print('thread refused after', len(tasks), err)\n"
        "try:\n    pid = os.fork()\n    if pid == 0:\n        os._exit(0)\n    os.waitpid(pid, 0)\n"
        "    FORK_REFUSED = False\nexcept OSError as err:\n    print('fork refused:', type(err).__name__)\n"
        "    FORK_REFUSED = True\n"
        "LIMITED = len(tasks) < 1000 and FORK_REFUSED\n",
        "def prefill_flops(L, P, d):\n    if not LIMITED:\n        return -1\n"
        "    return 12 * L * P * d**2 + 2 * L * P**2 * d",
    ],
    # Disk: 1 GB into one file, then many files.
    "disk_fill": [
        "def prefill_flops(L, P, d):\n"
        "    with open('/tmp/" + MARKER + "-fill', 'wb') as f:\n"
        "        for _ in range(1024):\n            f.write(b'x' * 2**20)\n"
        "    return 0",
        "import os\ndef decode_step_flops(L, S, d):\n"
        "    for i in range(64):\n"
        "        with open(f'/tmp/" + MARKER + "-{i}', 'wb') as f:\n            f.write(b'x' * 16 * 2**20)\n"
        "    return 0",
        Q3,
    ],
    # Leaks into visible feedback: paths, the environment, the sandbox's command line, a seed, a huge message.
    "leaky_messages": [
        "import os, sys\n"
        "def prefill_flops(L, P, d):\n"
        "    raise ValueError(f'{sys.path} {dict(os.environ)} seed=3141592653 {os.getcwd()} '\n"
        "                     f'{open(\"/proc/1/cmdline\").read()}')",
        "def decode_step_flops(L, S, d):\n    raise RuntimeError('x' * 10**6)",
        "def decode_flops(L, P, D, d):\n    return open('/proc/1/cmdline').read().replace('\\0', ' ')",
    ],
}


def _notebook(name: str, cells: list[str]) -> dict:
    template = json.loads((FOLDER / "exception.ipynb").read_text(encoding="utf-8"))
    setup, imports = template["cells"][1], template["cells"][2]
    out = [{"cell_type": "markdown", "id": "title", "metadata": {}, "source": [f"# Hostile submission: {name}"]},
           setup, imports]
    for i, source in enumerate(cells):
        out.append({"cell_type": "code", "execution_count": None, "id": f"attack{i}", "metadata": {},
                    "outputs": [], "source": source.splitlines(keepends=True)})
    return {"cells": out, "metadata": template["metadata"], "nbformat": 4, "nbformat_minor": 5}


def main() -> None:
    for name, cells in ATTACKS.items():
        path = FOLDER / f"{name}.ipynb"
        path.write_text(json.dumps(_notebook(name, cells), indent=1) + "\n", encoding="utf-8")
        print(f"wrote {path.relative_to(FOLDER.parent.parent.parent)}")


if __name__ == "__main__":
    main()
