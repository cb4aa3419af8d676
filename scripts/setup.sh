#!/usr/bin/env bash
# Installs what zero needs to build and test from Debian 12's packages.
# Idempotent: quiet and quick when everything is already installed.
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  openmpi-bin libopenmpi-dev
  libopenblas-dev
  libdnnl-dev                   # oneDNN: bf16 matrix products on CPUs with AVX512-BF16 or AMX (backends/cpu/matmul.h)
  libomp-dev
  nlohmann-json3-dev
  libgtest-dev libbenchmark-dev
  libssl-dev
  zlib1g-dev jargon-text
  procps
  clang-14 libclang-rt-14-dev  # the libFuzzer harnesses (scripts/fuzz.sh)
  iproute2                      # network namespaces for the two-host test
  e2fsprogs                     # chattr, for the test of a checkpoint --keep cannot remove
  libpcre2-dev                  # GPT-2 pre-tokenisation regex (Unicode-aware, JIT)
  libsentencepiece-dev sentencepiece  # SentencePiece models; spm_train and spm_encode for its test
  python3                       # the checkpoint tests read safetensors and metrics with a reader of their own
  slurmd slurmctld slurm-client munge  # a one-node Slurm of the test's own (tests/cli/slurm.sh)
  python3-numpy                 # the LLaMA reference test (tests/model/llama_reference.py), run with /usr/bin/python3
  liburing-dev                  # io_uring: the NVMe tier's asynchronous file I/O (src/io/)
  fio                           # zero bench io measures the disk beside it
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "[setup] installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
