#!/usr/bin/env bash
# llama_train.sh DIR ZERO: `zero train` of a small LLaMA (grouped-query attention, untied head)
# from a config file with model.type "llama", on 2 MPI ranks: at stage 0, at stage 3, and at
# stage 3 with activation checkpointing. Passes when the header names the LLaMA, the validation
# loss falls by more than 1 nat over the 30 steps (it starts near ln 256 = 5.55 on byte text), and
# all three runs end with the same final weights' SHA-256.
set -u
dir=$1; zero=$2
rm -rf "$dir"; mkdir -p "$dir"
cat >"$dir/llama.json" <<'JSON'
{
  "train_batch_size": 8,
  "train_micro_batch_size_per_gpu": 4,
  "zero_optimization": {"stage": 0},
  "optimizer": {"type": "AdamW", "params": {"lr": 3e-3}},
  "gradient_clipping": 1.0,
  "model": {"type": "llama", "vocab_size": 256, "max_position_embeddings": 32, "hidden_size": 48,
            "intermediate_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2,
            "num_hidden_layers": 2, "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "tie_word_embeddings": false},
  "train_steps": 30
}
JSON
run() {
  local name=$1; shift
  "$zero" train --config "$dir/llama.json" --ranks 2 "$@" >"$dir/$name.txt" 2>&1 || { echo "FAIL: $name run"; cat "$dir/$name.txt"; exit 1; }
}
run stage0
run stage3 --stage 3
run stage3_ckpt --stage 3 --activation-checkpointing
grep -q "^zero train: LLaMA V=256 T=32 C=48 L=2 H=4 KV=2 F=128 " "$dir/stage0.txt" || { echo "FAIL: the header names no LLaMA"; head -3 "$dir/stage0.txt"; exit 1; }
read -r first last < <(grep -oE "validation loss [0-9.]+ -> [0-9.]+" "$dir/stage0.txt" | awk '{print $3, $5}')
if [ -z "${first:-}" ] || ! awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a - 1.0) }'; then
  echo "FAIL: the validation loss did not fall by more than 1: ${first:-?} -> ${last:-?}"; tail -5 "$dir/stage0.txt"; exit 1
fi
sha() { grep -oE "final weights sha256 [0-9a-f]+" "$dir/$1.txt"; }
for r in stage3 stage3_ckpt; do
  if [ -z "$(sha stage0)" ] || [ "$(sha stage0)" != "$(sha $r)" ]; then echo "FAIL: $r's weights differ from stage 0's"; sha stage0; sha $r; exit 1; fi
done
echo "PASS: LLaMA validation loss $first -> $last; stages 0 and 3 (and 3 with checkpointing): $(sha stage0)"
