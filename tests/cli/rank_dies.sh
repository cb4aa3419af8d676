#!/usr/bin/env bash
# rank_dies.sh ZERO: starts a 2-rank MPI training, kills rank 1 once training is under way, and
# passes if the whole job ends within 60 s with a non-zero exit and a message naming rank 1
# (never a hang).
set -u
zero=$1
out=$(mktemp)
"$zero" train --ranks 2 --steps 1000000 --sample 0 --set model.n_layer=1 >"$out" 2>&1 &
job=$!  # zero runs mpirun as its child: the ranks are mpirun's children
for _ in $(seq 1 120); do grep -q "^step" "$out" && break; sleep 0.5; done
victim=""
for p in $(for c in $(pgrep -P "$job"); do pgrep -P "$c"; done); do
  if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=1'; then victim=$p; fi
done
if [ -z "$victim" ]; then
  echo "FAIL: could not find rank 1 under mpirun ($job)"; cat "$out"; kill -9 "$job" 2>/dev/null; exit 1
fi
kill -9 "$victim"
for _ in $(seq 1 120); do kill -0 "$job" 2>/dev/null || break; sleep 0.5; done
if kill -0 "$job" 2>/dev/null; then
  echo "FAIL: the job still runs 60 s after rank 1 died"; pkill -9 -P "$job"; kill -9 "$job"; exit 1
fi
wait "$job"
code=$?
if [ "$code" -eq 0 ]; then echo "FAIL: the job exited 0 after rank 1 died"; cat "$out"; exit 1; fi
if ! grep -q "rank 1" "$out"; then echo "FAIL: no message names rank 1"; cat "$out"; exit 1; fi
echo "ok: the job ended with exit $code and said:"; grep "rank 1" "$out"
rm -f "$out"
