#!/usr/bin/env bash
# json_outputs.sh DIR ZERO: the final validation loss is the last --metrics line's val_loss (the
# summary's figure; earlier steps null without --eval-every); zero eval --json FILE and zero
# estimate --json FILE write what they print, as JSON, and still print it.
set -u
dir=$1; zero=$2
rm -rf "$dir"; mkdir -p "$dir"
fail() { echo "FAIL: $*"; exit 1; }
"$zero" train --comm threads --ranks 2 --steps 3 --sample 0 --set model.n_embd=32 --set model.n_layer=2 \
  --set train_micro_batch_size_per_gpu=2 --save "$dir/ck" --metrics "$dir/m.jsonl" >"$dir/train.txt" 2>&1 ||
  { cat "$dir/train.txt"; fail "train"; }
final=$(grep -oE "validation loss [0-9.]+ -> [0-9.]+" "$dir/train.txt" | grep -oE "[0-9.]+$")
"$zero" eval --checkpoint "$dir/ck" --split val --json "$dir/eval.json" >"$dir/eval.txt" 2>&1 || { cat "$dir/eval.txt"; fail "eval"; }
"$zero" estimate --model gpt2 --ranks 4 --device-memory 8GB --json "$dir/estimate.json" >"$dir/estimate.txt" 2>&1 ||
  { cat "$dir/estimate.txt"; fail "estimate"; }
grep -q "^recommended: " "$dir/estimate.txt" || { cat "$dir/estimate.txt"; fail "estimate --json no longer prints the table"; }
python3 - "$dir" "$final" <<'PY' || exit 1
import json, re, sys
d, final = sys.argv[1], sys.argv[2]
lines = [json.loads(l) for l in open(d + "/m.jsonl")]
assert [l["step"] for l in lines] == [1, 2, 3], [l["step"] for l in lines]
assert lines[0]["val_loss"] is None and lines[1]["val_loss"] is None, lines
assert lines[2]["val_loss"] is not None and "%.4f" % lines[2]["val_loss"] == final, (lines[2]["val_loss"], final)
e = json.load(open(d + "/eval.json"))
printed = re.search(r"^loss ([0-9.]+) .*; ([0-9.]+) bits per byte", open(d + "/eval.txt").read(), re.M)
assert printed and "%.4f" % e["loss"] == printed.group(1) and "%.4f" % e["bits_per_byte"] == printed.group(2), (e, printed)
assert e["split"] == "val" and e["step"] == 3 and e["windows"] > 0, e
# zero eval --split val evaluates the training run's held-out windows: the same loss.
assert "%.4f" % e["loss"] == final, (e["loss"], final)
est = json.load(open(d + "/estimate.json"))
assert "recommendation" in est, sorted(est)
print("ok: final val_loss %s in --metrics and eval --json; estimate --json has %d keys" % (final, len(est)))
PY
