#!/usr/bin/env bash
# Fetch the wheels the GPU kit installs on a machine that has torch, transformers and torchvision
# but nothing else of ours and no network. They land in bench/gpu/wheels/ (git-ignored); carry that
# folder with the run (the whole carry must stay under 64 MiB: about 17 MiB here).
#
#   bash bench/gpu/fetch_wheels.sh            # pure-Python wheels + binary ones for CPython 3.10-3.13
#   PYTHONS="3.11" bash bench/gpu/fetch_wheels.sh   # only one Python version (smaller)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dest="$here/wheels"
mkdir -p "$dest"
pip="${PIP:-python -m pip}"
# pure Python: one wheel for every version
pure=(pydantic annotated-types typing-inspection typing-extensions "jinja2>=3.1" loguru "setuptools>=69" wheel packaging tqdm)
# compiled: one wheel per CPython version
binary=(pydantic-core pyyaml markupsafe)
$pip download --quiet --no-deps --only-binary=:all: -d "$dest" "${pure[@]}"
for py in ${PYTHONS:-3.10 3.11 3.12 3.13}; do
  $pip download --quiet --no-deps --only-binary=:all: --platform manylinux2014_x86_64 \
    --python-version "$py" --implementation cp -d "$dest" "${binary[@]}"
done
# pydantic pins the exact pydantic-core it was built against: fetch that one for every version
core="$(ls "$dest"/pydantic-2*.whl | head -1 | xargs -I{} unzip -p {} '*/METADATA' | sed -n 's/^Requires-Dist: pydantic-core==\([0-9.]*\).*/\1/p')"
if [ -n "$core" ]; then
  for py in ${PYTHONS:-3.10 3.11 3.12 3.13}; do
    $pip download --quiet --no-deps --only-binary=:all: --platform manylinux2014_x86_64 \
      --python-version "$py" --implementation cp -d "$dest" "pydantic-core==$core"
  done
fi
du -sh "$dest"
ls "$dest"
