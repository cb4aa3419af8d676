#!/usr/bin/env bash
# data_changed.sh ZERO: a data file truncated under a running 2-rank mpirun job (what `cp new.txt
# data.txt` does first) ends the job with exit 1 and the [data] error naming the file, from a rank
# that read it; never a SIGBUS ("Bus error"), never a hang. The ranks read the file through one
# shared read-only mapping (src/common/mapped_file.h).
set -u
zero=$1
dir=$(mktemp -d)
trap 'kill -9 "$job" 2>/dev/null; [ -n "${KEEP:-}" ] && cat "$dir/out"; rm -rf "$dir"' EXIT
for _ in $(seq 40); do cat /usr/share/common-licenses/GPL-3; done >"$dir/data.txt"
"$zero" train --ranks 2 --steps 1000000 --sample 0 --set model.n_embd=16 --set model.n_layer=1 \
  --data "$dir/data.txt" >"$dir/out" 2>&1 &
job=$!
for _ in $(seq 600); do grep -q "^step " "$dir/out" && break; sleep 0.1; done
grep -q "^step " "$dir/out" || { echo "FAIL: the job never started stepping"; cat "$dir/out"; exit 1; }
truncate -s 1000 "$dir/data.txt"
for _ in $(seq 600); do kill -0 "$job" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$job" 2>/dev/null; then echo "FAIL: the job still runs 60 s after its data was truncated"; cat "$dir/out"; exit 1; fi
wait "$job"
code=$?
if [ "$code" -ne 1 ] || ! grep -qE "zero: \[rank [01] of 2\] \[data\] data file $dir/data.txt changed while this run was reading it \([0-9]+ bytes, modified [^;]+; now 1000 bytes" "$dir/out" ||
  grep -qiE "bus error|SIGBUS|signal 7" "$dir/out"; then
  echo "FAIL (exit $code)"
  cat "$dir/out"
  exit 1
fi
