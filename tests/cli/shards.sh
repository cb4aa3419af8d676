#!/usr/bin/env bash
# shards.sh DIR ZERO: a data set given as a pattern of llm.c .bin shards trains exactly as the one
# file they concatenate to: the same losses and final weights, straight and resumed across the
# shards' boundaries (--save at step 3, --resume to step 6), and with the validation set a pattern
# too. Bad patterns are refused before any rank starts.
set -euo pipefail
dir=$1 zero=$2
rm -rf "$dir" && mkdir -p "$dir/shards" && cd "$dir"
# The GPL-3 text's bytes as tokens (vocabulary 256), cut into shards of uneven sizes (one a single
# token), written in llm.c's format: 256 int32 header (magic, version 1, count, vocab), uint16 tokens.
/usr/bin/python3 - <<'PY'
import struct
data = open("/usr/share/common-licenses/GPL-3", "rb").read()
def write(name, toks):
    with open(name, "wb") as f:
        f.write(struct.pack("<256i", 20240520, 1, len(toks), 256, *([0] * 252)))
        f.write(struct.pack("<%dH" % len(toks), *toks))
write("whole.bin", data)
cuts = [0, 7001, 7002, 20000, len(data)]
for i in range(len(cuts) - 1):
    write("shards/train_%06d.bin" % i, data[cuts[i]:cuts[i + 1]])
val = open("/usr/share/common-licenses/Apache-2.0", "rb").read()
write("val.bin", val)
write("shards/val_000000.bin", val[:5000]); write("shards/val_000001.bin", val[5000:])
PY
common=(train --comm threads --ranks 2 --sample 0 --eval-every 3 --set steps_per_print=1 --set model.n_embd=32 --set model.n_layer=2 --set train_micro_batch_size_per_gpu=2)
"$zero" "${common[@]}" --steps 6 --data whole.bin --val-data val.bin >whole.txt 2>&1 || { cat whole.txt; exit 1; }
"$zero" "${common[@]}" --steps 6 --data 'shards/train_*.bin' --val-data 'shards/val_*.bin' >glob.txt 2>&1 || { cat glob.txt; exit 1; }
"$zero" "${common[@]}" --steps 3 --data 'shards/train_*.bin' --val-data 'shards/val_*.bin' --save ck >first.txt 2>&1 || { cat first.txt; exit 1; }
"$zero" "${common[@]}" --steps 6 --data 'shards/train_*.bin' --val-data 'shards/val_*.bin' --resume ck >second.txt 2>&1 || { cat second.txt; exit 1; }
sha() { grep -oE "final weights sha256 [0-9a-f]+" "$1"; }
losses() { grep -oE "^step +[4-6]/6 \| loss [0-9.]+" "$1"; }
vals() { grep -oE "validation loss [0-9.]+ -> [0-9.]+" "$1"; }
[[ -n $(sha whole.txt) && $(sha whole.txt) == $(sha glob.txt) && $(sha glob.txt) == $(sha second.txt) ]] || {
  echo "FAILED: weights differ"; sha whole.txt; sha glob.txt; sha second.txt; exit 1; }
[[ $(losses whole.txt | wc -l) == 3 && $(losses whole.txt) == $(losses glob.txt) && $(losses glob.txt) == $(losses second.txt) ]] || {
  echo "FAILED: losses differ"; exit 1; }
[[ -n $(vals whole.txt) && $(vals whole.txt) == $(vals glob.txt) ]] || { echo "FAILED: validation losses differ"; exit 1; }
grep -q "shards/train_\*.bin (4 files)" glob.txt || { echo "FAILED: the data line does not say the files"; cat glob.txt; exit 1; }
echo "4 shards = the concatenated file, straight and resumed: $(sha second.txt); $(vals glob.txt)"
got=$("$zero" eval --checkpoint ck --split val)
final=$(vals first.txt | grep -oE '[0-9.]+$')
grep -q "^loss $final on shards/val_\*.bin (val, " <<<"$got" || { echo "FAILED: eval printed: $got (want loss $final, the run's at step 3)"; exit 1; }
echo "eval --split val over the pattern: $got"
# At another world size: the batch of 8 read by 2 ranks straight, and by 4 ranks to step 3 resumed
# on 1 rank to step 6 (across the shards' boundaries), are the same tokens at the same places at
# every step: the metrics' batch_digest of each step agrees (the weights cannot be bit-identical
# across world sizes: the ranks' gradients are summed in another grouping).
wide=(train --comm threads --sample 0 --set model.n_embd=32 --set model.n_layer=2 --set train_batch_size=8
      --data 'shards/train_*.bin' --val-data 'shards/val_*.bin' --eval-batches 1)
"$zero" "${wide[@]}" --set train_micro_batch_size_per_gpu=4 --ranks 2 --steps 6 --metrics n2.jsonl >n2.txt 2>&1 || { cat n2.txt; exit 1; }
"$zero" "${wide[@]}" --set train_micro_batch_size_per_gpu=2 --ranks 4 --steps 3 --metrics n4.jsonl --save ck4 >n4.txt 2>&1 || { cat n4.txt; exit 1; }
"$zero" "${wide[@]}" --set train_micro_batch_size_per_gpu=8 --ranks 1 --steps 6 --metrics n4.jsonl --resume ck4 >n1.txt 2>&1 || { cat n1.txt; exit 1; }
digests() { /usr/bin/python3 -c 'import json, sys; print(" ".join(json.loads(l)["batch_digest"] for l in open(sys.argv[1])))' "$1"; }
d2=$(digests n2.jsonl) d41=$(digests n4.jsonl)
[[ $(wc -w <<<"$d2") == 6 && "$d2" == "$d41" ]] || { echo "FAILED: the batches differ: 2 ranks: $d2; 4 then 1: $d41"; exit 1; }
[[ $(tr ' ' '\n' <<<"$d2" | sort -u | wc -l) == 6 ]] || { echo "FAILED: steps with the same digest: $d2"; exit 1; }
echo "6 steps of 8 sequences read the same at 2 ranks and at 4 then (resumed) 1: $d2"
refuse() { "$(dirname "$0")/refuse_train.sh" "$zero" "$@"; }  # refuse REGEX ARGS...: refused before any rank starts
refuse "nowhere/train_\*.bin matches no file" --data 'nowhere/train_*.bin'
cp /usr/share/common-licenses/Apache-2.0 shards/train_zzz.txt
refuse "matches files of different kinds: .*train_000000.bin \(llm.c .bin, 2-byte tokens\) and .*train_zzz.txt \(text" --data 'shards/train_*'
echo "bad patterns refused"
