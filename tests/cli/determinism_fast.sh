#!/usr/bin/env bash
# determinism_fast.sh DIR ZERO [TOLERANCE]: `zero train --determinism fast` on 4 MPI ranks (where
# MPI's own sums may add in another order than rank order) trains the same model as the default,
# deterministic mode: every step's loss and gradient norm within TOLERANCE (relative; default 1e-6,
# about 70 times the spread measured here, 1.4e-8), and every rank sends the same bytes every step.
set -u
dir=$1; zero=$2; tolerance=${3:-1e-6}
rm -rf "$dir"; mkdir -p "$dir"
common=(train --ranks 4 --stage 2 --steps 4 --sample 0 --set steps_per_print=1 --set model.n_embd=32 --set model.n_layer=2
        --set train_micro_batch_size_per_gpu=2 --set train_batch_size=8)
for mode in deterministic fast; do
  "$zero" "${common[@]}" --determinism "$mode" --metrics "$dir/$mode.jsonl" >"$dir/$mode.txt" 2>&1 \
    || { echo "FAIL: --determinism $mode"; cat "$dir/$mode.txt"; exit 1; }
done
python3 - "$dir/deterministic.jsonl" "$dir/fast.jsonl" "$tolerance" <<'PY'
import json, sys
det = [json.loads(l) for l in open(sys.argv[1])]
fast = [json.loads(l) for l in open(sys.argv[2])]
tol = float(sys.argv[3])
assert len(det) == len(fast) == 4, f"FAIL: {len(det)} and {len(fast)} steps, not 4"
spread = 0.0
for d, f in zip(det, fast):
    assert [r["sent_bytes"] for r in d["ranks"]] == [r["sent_bytes"] for r in f["ranks"]], f"FAIL: step {d['step']} sent bytes differ"
    for key in ("loss", "grad_norm"):
        rel = abs(d[key] - f[key]) / abs(d[key])
        spread = max(spread, rel)
        assert rel <= tol, f"FAIL: step {d['step']}: {key} {f[key]} (fast) vs {d[key]} (deterministic), relative {rel:.2e} > {tol}"
print(f"ok: fast's losses and gradient norms within {spread:.2e} of deterministic's (tolerance {tol}); the same bytes sent on every rank, every step")
PY
