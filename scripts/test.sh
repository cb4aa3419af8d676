#!/usr/bin/env bash
# Sets up, builds and runs every test: unit tests, thread-rank tests, and MPI tests under
# mpirun with 2 and 4 processes; then the fuzz harnesses for about a minute (scripts/fuzz.sh).
# ctest's closing line reports what ran.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
(cd build && ctest --output-on-failure -j"$(nproc)" --timeout 600)
bash scripts/fuzz.sh
