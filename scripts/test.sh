#!/usr/bin/env bash
# Sets up, builds and runs every test: the fuzz harnesses for about a minute (scripts/fuzz.sh),
# then unit tests, thread-rank tests, and MPI tests under mpirun with 2 and 4 processes.
# ctest runs last, so its closing lines report what ran.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/get-gpt2-tokenizer.sh  # GPT-2's files and the JavaScript tokenizers the BPE is tested against
bash scripts/build.sh -DZERO_CUDA=ON  # everything, the CUDA objects included where the toolkit is (no GPU needed to compile)
bash scripts/fuzz.sh
cd build
ctest --output-on-failure -j"$(nproc)" --timeout 600
