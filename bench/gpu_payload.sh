#!/usr/bin/env bash
# Builds the two ignored folders that bench/gpu_check.sh needs carried beside the tracked tree, from scratch,
# on a networked Debian machine (the device machine has no network):
#   .whl/         the wheels the device's Python 3.12 lacks (pip download --no-deps, cp312 manylinux or pure
#                 Python, the exact versions pinned below: the ones the check was run with);
#   .gpu/wheels/  what the task environments install offline (REPOGYM_WHEELS), pinned the same way;
#   .gpu/debs/    Debian's bubblewrap and libcap2 packages, amd64 (`apt-get download`: the candidate version of
#                 this machine's package lists; Debian 12 gives the ones the check was run with);
#   .gpu/data/    from a learning benchmark work folder (bench/bench_learning.py --work LEARN_WORK):
#                 data/split/{heldout-functions,heldout-repo}.jsonl as they are, data/split/train.jsonl with
#                 its synthetic rows only (the mined rows' repositories are not carried), and
#                 data/train/sft.jsonl gzipped (sft.jsonl.gz, gzip -9);
#   .gpu/repos/   bare clones (every ref: the tasks' refs/repogym/*) of the repositories those rows name,
#                 from LEARN_WORK/data/synth-repos/owner__name.git; gpu_check.sh points each task's
#                 repo_source at them, so the rows are carried unchanged.
# Everything is built in a scratch folder inside DEST and moved into place only when complete and under
# 56 MiB in all (the device machine carries at most 64 MiB with the tree); the old folders stay otherwise.
#
#   bash bench/gpu_payload.sh LEARN_WORK [DEST]
#
# DEST defaults to the repository root; e.g. DEST=/tmp/payload-test to compare with the folders in place.
# Needs python3 with pip, git, gzip and apt-get (package lists fetched: `apt-get update` once before).
set -euo pipefail

usage="usage: bash bench/gpu_payload.sh LEARN_WORK [DEST]"
LEARN=$(realpath "${1:?$usage}")
ROOT=$(realpath "$(dirname "$0")/..")
DEST=$(realpath -m "${2:-$ROOT}")
MAX_MIB=56

WHEELS=(
    annotated-types==0.8.0 datasets==5.2.0 detect-secrets==1.5.0 dill==0.4.1 farama-notifications==0.0.6
    gymnasium==1.4.0 libcst==1.9.0 multiprocess==0.70.19 pydantic==2.14.4 pydantic-core==2.50.5 trl==1.16.0
    typing-extensions==4.16.0 typing-inspection==0.4.5 unidiff==1.0.1 uv==0.13.9
)
ENV_WHEELS=(
    coverage==7.18.0 iniconfig==2.1.0 packaging==25.0 pip==26.3 pluggy==1.6.0 pytest==7.4.4 pytest-cov==5.0.0
    setuptools==80.9.0
)
DEBS=(bubblewrap:amd64 libcap2:amd64)
SPLITS=(train heldout-functions heldout-repo)

for need in "$LEARN/data/split/train.jsonl" "$LEARN/data/train/sft.jsonl" "$LEARN/data/synth-repos"; do
    [ -e "$need" ] || { echo "$need is missing: LEARN_WORK must be a bench_learning.py --work folder" >&2; exit 1; }
done
mkdir -p "$DEST"
BUILD=$(mktemp -d "$DEST/.gpu-payload.XXXXXX")
trap 'rm -rf "$BUILD"' EXIT
mkdir -p "$BUILD/.whl" "$BUILD/.gpu/wheels" "$BUILD/.gpu/debs" "$BUILD/.gpu/data" "$BUILD/.gpu/repos"

# The device's Python is CPython 3.12 on x86_64 Linux: its wheels, whatever this machine runs.
pip_download() {
    local dest=$1
    shift
    python3 -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
        --python-version 3.12 --implementation cp --platform manylinux_2_28_x86_64 \
        --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux1_x86_64 \
        --platform manylinux_2_5_x86_64 --dest "$dest" "$@"
}
pip_download "$BUILD/.whl" "${WHEELS[@]}"
pip_download "$BUILD/.gpu/wheels" "${ENV_WHEELS[@]}"

if ! (cd "$BUILD/.gpu/debs" && apt-get download -q "${DEBS[@]}"); then
    echo "apt-get download ${DEBS[*]} failed (run apt-get update first)" >&2
    exit 1
fi
echo "debs: $(cd "$BUILD/.gpu/debs" && echo *)"

# The split's rows byte for byte (train: its synthetic rows), and the repositories they name.
python3 - "$LEARN/data/split" "$BUILD/.gpu/data" "${SPLITS[@]}" >"$BUILD/repos.txt" <<'EOF'
"""Copy the split files (train: synthetic rows only) and print the repositories their rows name."""
import json
import sys
from pathlib import Path

source, dest, *names = sys.argv[1:]
repos = set()
for name in names:
    with open(Path(source) / f"{name}.jsonl") as rows_in, open(Path(dest) / f"{name}.jsonl", "w") as rows_out:
        for line in rows_in:
            row = json.loads(line)
            if name == "train" and row["source"] != "synthetic":
                continue
            rows_out.write(line)
            repos.add(Path(row["repo_source"]).name)
print("\n".join(sorted(repos)))
EOF
gzip -9 -n -c "$LEARN/data/train/sft.jsonl" >"$BUILD/.gpu/data/sft.jsonl.gz"

while read -r repo; do
    git clone -q --mirror --no-hardlinks "$LEARN/data/synth-repos/$repo" "$BUILD/.gpu/repos/$repo"
    git --git-dir="$BUILD/.gpu/repos/$repo" config --remove-section remote.origin  # no path of this machine
done <"$BUILD/repos.txt"
rm "$BUILD/repos.txt"

for folder in .whl .gpu; do
    echo "$folder: $(du -sb "$BUILD/$folder" | awk '{printf "%.1f MiB", $1 / 1048576}')"
done
total=$(du -scb "$BUILD/.whl" "$BUILD/.gpu" | awk 'END {print $1}')
if [ "$total" -gt $((MAX_MIB * 1048576)) ]; then
    echo "together $((total / 1048576)) MiB, over $MAX_MIB MiB: the device carries at most 64 MiB with the tree" >&2
    exit 1
fi
rm -rf "$DEST/.whl" "$DEST/.gpu"
mv "$BUILD/.whl" "$BUILD/.gpu" "$DEST/"
echo "together $(awk -v b="$total" 'BEGIN {printf "%.1f", b / 1048576}') MiB (at most $MAX_MIB) in $DEST"
