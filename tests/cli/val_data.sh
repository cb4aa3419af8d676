#!/usr/bin/env bash
# --val-data (data.val_path): a validation file of its own. A run on train.txt validating on
# val.txt is the run on their concatenation with val.txt's share held out (val_fraction chosen so
# that the held-out tokens are exactly val.txt's): the same final weights and the same validation
# losses. `zero eval --split val` of its checkpoint reads val.txt and prints the run's final
# validation loss. Bad input is refused before any rank starts.
#   val_data.sh OUT_DIR ZERO
set -euo pipefail
out=$1 zero=$2
rm -rf "$out" && mkdir -p "$out" && cd "$out"
cp /usr/share/common-licenses/GPL-3 train.txt
cp /usr/share/common-licenses/Apache-2.0 val.txt
cat train.txt val.txt > both.txt
# floor(n * f) == the validation file's bytes, in doubles as the trainer computes it.
fraction=$(python3 -c '
import math, os, sys
n, v = os.path.getsize("both.txt"), os.path.getsize("val.txt")
f = v / n
while math.floor(n * f) < v: f = math.nextafter(f, 1)
while math.floor(n * f) > v: f = math.nextafter(f, 0)
assert math.floor(n * f) == v
print(repr(f))')
common=(train --comm threads --ranks 2 --steps 3 --sample 0 --eval-every 2)
separate=$("$zero" "${common[@]}" --data train.txt --val-data val.txt --save ck)
held_out=$("$zero" "${common[@]}" --data both.txt --set data.val_fraction="$fraction")
sha() { grep -o 'final weights sha256 [0-9a-f]*' <<<"$1"; }
vals() { grep -oE 'validation loss [0-9.]+ -> [0-9.]+' <<<"$1"; }
[[ -n $(sha "$separate") && $(sha "$separate") == $(sha "$held_out") ]] || { echo "FAILED: weights differ"; echo "$separate"; echo "$held_out"; exit 1; }
[[ -n $(vals "$separate") && $(vals "$separate") == $(vals "$held_out") ]] || { echo "FAILED: validation losses differ"; exit 1; }
echo "val.txt as a file of its own = held out of the concatenation: $(sha "$separate"), $(vals "$separate")"
final=$(vals "$separate" | grep -oE '[0-9.]+$')
got=$("$zero" eval --checkpoint ck --split val)
grep -q "^loss $final on val.txt (val, " <<<"$got" || { echo "FAILED: eval printed: $got (want loss $final on val.txt)"; exit 1; }
echo "eval --split val: $got"
refuse() { "$(dirname "$0")/refuse_train.sh" "$zero" "$@"; }  # refuse REGEX ARGS...: refused before any rank starts
refuse "val_fraction.*is 0.1 but data.val_path names a validation set of its own" --data train.txt --val-data val.txt --set data.val_fraction=0.1
refuse "nowhere.txt" --data train.txt --val-data nowhere.txt
head -c 20 val.txt > short.txt
refuse "short.txt.*(fewer|shorter|needs)" --data train.txt --val-data short.txt
echo "bad --val-data refused"
