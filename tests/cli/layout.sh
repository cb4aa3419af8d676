#!/usr/bin/env bash
# The start-up layout under a user's own mpirun (tests/cli/layout_test.cpp has the rules; the
# --ranks and srun forms are checked by cli_train_self_launch and tests/cli/slurm.sh):
#   bound, one core per rank: "each bound to 1 core", no warning;
#   not bound, more OpenMP threads than the host's cores: "not bound", and the warning naming both.
# usage: layout.sh ZERO
set -euo pipefail
zero=$1
cores=$(nproc --all)  # GNU nproc alone honours OMP_NUM_THREADS
train=(train --comm mpi --steps 1 --sample 0 --set model.n_embd=32 --set model.n_layer=2 --set train_micro_batch_size_per_gpu=2)
fail() { echo "FAIL: $1"; echo "--- output:"; cat "$2"; exit 1; }
out=$(mktemp) && trap 'rm -f "$out"' EXIT

mpirun --allow-run-as-root -np 2 --map-by slot:PE=1 --bind-to core -x OMP_NUM_THREADS=1 "$zero" "${train[@]}" >"$out" 2>&1 || fail "bound run exit $?" "$out"
grep -q "^layout: 2 ranks (mpi) on 1 host, 2 ranks per host, 1 OpenMP thread per rank, each bound to 1 core$" "$out" || fail "bound layout line" "$out"
grep -qE "^  host [^:]+: ranks 0,1, cpus [0-9,-]+; rank 0 on [0-9]+; rank 1 on [0-9]+$" "$out" || fail "bound host line" "$out"
grep -q "warning: \[launch\]" "$out" && fail "a warning for a good layout" "$out"

threads=$((cores + 1))
mpirun --allow-run-as-root --oversubscribe -np 2 --bind-to none -x OMP_NUM_THREADS=$threads "$zero" "${train[@]}" >"$out" 2>&1 || fail "unbound run exit $?" "$out"
grep -q "^layout: 2 ranks (mpi) on 1 host, 2 ranks per host, $threads OpenMP threads per rank, not bound (each may run on its host's $cores cores)$" "$out" \
  || fail "unbound layout line" "$out"
grep -qE "^warning: \[launch\] host [^ ]+ runs 2 ranks with $((2 * threads)) threads in all on $cores cores: the ranks oversubscribe" "$out" \
  || fail "no oversubscription warning" "$out"
echo "ok: bound and unbound layouts under mpirun, and the oversubscription warning"
