#!/usr/bin/env bash
# Configures and builds zero (Release) into build/. Run scripts/setup.sh first.
#   bash scripts/build.sh                          everything: libraries, CLI, tests
#   bash scripts/build.sh zero_cli                 only the named targets (the demo: the CLI)
#   bash scripts/build.sh -DZERO_CUDA=ON [targets] cmake options first (ZERO_CUDA: AUTO, ON, OFF)
# ccache is used when it is installed (a developer's machine); a fresh machine builds without it.
set -euo pipefail
cd "$(dirname "$0")/.."
options=() targets=()
for a in "$@"; do
  case "$a" in
    -D*) options+=("$a") ;;
    -*) echo "[build] unknown option '$a': cmake options are -DNAME=VALUE, other arguments are targets" >&2; exit 2 ;;
    *) targets+=(--target "$a") ;;
  esac
done
command -v ccache >/dev/null && options+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "${options[@]}" >/dev/null
cmake --build build -j"$(nproc)" "${targets[@]}"
