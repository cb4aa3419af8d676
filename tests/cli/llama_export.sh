#!/usr/bin/env bash
# llama_export.sh DIR ZERO LLAMA_CONFIG: trains a small LLaMA 3 steps on 2 ranks at stage 3 (untied,
# then tied head), exports the checkpoint with `zero ckpt export` (fp32), and checks with NumPy
# (tests/checkpoint/llama_export_reference.py) the file's Hugging Face names and shapes and that
# the reference computes `zero eval`'s loss on the same tokens within 1e-5 relative.
set -u
dir=$1; zero=$2; config=$3
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$dir"; mkdir -p "$dir"
head -c 65 /usr/share/common-licenses/GPL-3 >"$dir/data.txt"  # 4 windows of 16 tokens
for tied in false true; do
  d=$dir/$tied
  "$zero" train --config "$config" --ranks 2 --stage 3 --steps 3 --set model.tie_word_embeddings=$tied --save "$d/ck" >"$d.train.txt" 2>&1 ||
    { echo "FAIL: train ($tied)"; cat "$d.train.txt"; exit 1; }
  "$zero" eval --checkpoint "$d/ck" --data "$dir/data.txt" --json "$d/eval.json" >"$d.eval.txt" 2>&1 || { echo "FAIL: eval"; cat "$d.eval.txt"; exit 1; }
  "$zero" ckpt export "$d/ck" --out "$d/model.safetensors" >"$d.export.txt" 2>&1 || { echo "FAIL: export"; cat "$d.export.txt"; exit 1; }
  /usr/bin/python3 "$here/../checkpoint/llama_export_reference.py" "$d/model.safetensors" "$d/ck/step-00000003/manifest.json" \
    "$dir/data.txt" "$d/eval.json" || { echo "FAIL: reference (tie_word_embeddings $tied)"; exit 1; }
done
echo "ok: the exported LLaMA computes zero eval's loss"
