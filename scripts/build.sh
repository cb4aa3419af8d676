#!/usr/bin/env bash
# Configures and builds zero (Release) into build/. Run scripts/setup.sh first.
# ccache is used when it is installed (a developer's machine); a fresh machine builds without it.
set -euo pipefail
cd "$(dirname "$0")/.."
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" >/dev/null
cmake --build build -j"$(nproc)"
