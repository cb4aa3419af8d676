#!/usr/bin/env bash
# reshard_mpi.sh DIR MPIRUN PROGRAM NP_FROM STAGE_FROM OFFLOAD_FROM NP_TO STAGE_TO OFFLOAD_TO DTYPE:
# one mpirun job of NP_FROM processes trains and saves, a second of NP_TO processes loads it at
# another stage and checks every parameter, master and moment bit for bit (tests/checkpoint/reshard_mpi.cpp).
set -u
dir=$1; mpirun=$2; prog=$3
rm -rf "$dir"; mkdir -p "$dir"
$mpirun --allow-run-as-root --oversubscribe -np "$4" "$prog" save "$dir" "$5" "$6" "${10}" >"$dir/save.txt" 2>&1 || { echo "FAIL: save on $4 ranks"; cat "$dir/save.txt"; exit 1; }
$mpirun --allow-run-as-root --oversubscribe -np "$7" "$prog" load "$dir" "$8" "$9" "${10}" >"$dir/load.txt" 2>&1 || { echo "FAIL: load on $7 ranks"; cat "$dir/load.txt"; exit 1; }
grep -q "^ok: $4 ranks -> $7 ranks" "$dir/load.txt" || { echo "FAIL: no verdict"; cat "$dir/load.txt"; exit 1; }
cat "$dir/load.txt"
