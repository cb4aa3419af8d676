#!/usr/bin/env bash
# Sets up, builds and runs the main job: `zero demo` on 4 MPI processes, which trains the same
# model under ZeRO stages 0-3, with offload, and stage 3 with activation checkpointing, prints
# measured memory and traffic per rank beside the paper's formulas, and draws them in
# zero-demo.svg (rsvg-convert zero-demo.svg -o zero-demo.png to view it as an image). Extra
# arguments go to `zero demo` (see build/zero demo --help).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh zero_cli >/dev/null  # the CLI alone: the tests and CUDA objects are the test command's
mpi_flags=(--oversubscribe)  # 4 ranks on however many cores there are
[ "$(id -u)" -eq 0 ] && mpi_flags+=(--allow-run-as-root)
export OMPI_MCA_mpi_yield_when_idle=1 OMP_NUM_THREADS=1
exec mpirun "${mpi_flags[@]}" -np 4 build/zero demo --json zero-demo.json "$@"
