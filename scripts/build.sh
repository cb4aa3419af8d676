#!/usr/bin/env bash
# Configures and builds zero (Release) into build/. Run scripts/setup.sh first.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)"
