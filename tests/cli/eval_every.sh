#!/usr/bin/env bash
# eval_every.sh DIR ZERO: --eval-every 2 --eval-batches 1 over 4 steps prints the validation loss
# at steps 2 and 4 only, records it in --metrics at those steps (null elsewhere), and step 4's
# equals the final validation loss of the summary (the same windows).
set -u
dir=$1; zero=$2
rm -rf "$dir"; mkdir -p "$dir"
"$zero" train --comm threads --ranks 2 --steps 4 --sample 0 --set model.n_embd=32 --set model.n_layer=2 \
  --set train_micro_batch_size_per_gpu=2 --eval-every 2 --eval-batches 1 --metrics "$dir/m.jsonl" >"$dir/out.txt" 2>&1 ||
  { echo "FAIL: train"; cat "$dir/out.txt"; exit 1; }
[ "$(grep -cE "^step +[0-9]+/4 \| validation loss" "$dir/out.txt")" -eq 2 ] || { echo "FAIL: printed"; cat "$dir/out.txt"; exit 1; }
final=$(grep -oE "validation loss [0-9.]+ -> [0-9.]+" "$dir/out.txt" | grep -oE "[0-9.]+$")
python3 - "$dir/m.jsonl" "$final" <<'PY' || exit 1
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
vals = [l["val_loss"] for l in lines]
assert len(vals) == 4 and vals[0] is None and vals[2] is None, vals
assert vals[1] is not None and vals[3] is not None, vals
assert "%.4f" % vals[3] == sys.argv[2], (vals[3], sys.argv[2])
print("ok: validation loss at steps 2 and 4:", vals[1], vals[3])
PY
