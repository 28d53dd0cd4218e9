#!/usr/bin/env bash
# The wheels lab/gpu_suite.sh installs on the GPU machine, which has no network: downloaded here into .whl/ (and
# .whl/plot/) for its Python (3.12, x86-64), without their dependencies, which its image holds (jax, flax, optax,
# chex, tensorstore, h5py, typer, seaborn, matplotlib, tqdm, cloudpickle: the device's KINDS.md). .whl/ is kept out
# of git (.git/info/exclude) and travels with the call as a carried path:
#
#   bash lab/gpu_wheels.sh && du -sh .whl    # tens of MB; the working tree that travels is capped at 64 MiB
#   run(command="OUT=$OUT STAGES=... bash lab/gpu_suite.sh 585", carry=[".whl"])
set -euo pipefail
cd "$(dirname "$0")/.."
PEERS=(gymnasium==1.4.0 farama-notifications==0.0.4 gymnax==1.0.1 pgx==2.6.0 svgwrite==1.4.3 minatar==1.0.15
    flashbax==0.1.3 minari==0.5.3)
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >>.git/info/exclude
rm -rf .whl
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d .whl "${PEERS[@]}"
ls -la .whl
du -sh .whl
