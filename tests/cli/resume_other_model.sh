#!/usr/bin/env bash
# resume_other_model.sh DIR ZERO LLAMA_CONFIG: a LLaMA checkpoint resumed by a GPT run, and a GPT
# checkpoint by a LLaMA run, are each one [checkpoint] error naming both models, before any step.
set -u
dir=$1; zero=$2; llama=$3
rm -rf "$dir"; mkdir -p "$dir"
gpt=(--set model.n_embd=32 --set model.n_layer=2)
"$zero" train --config "$llama" --steps 1 --save "$dir/llama" >"$dir/llama.txt" 2>&1 || { echo "FAIL: llama save"; cat "$dir/llama.txt"; exit 1; }
"$zero" train "${gpt[@]}" --sample 0 --steps 1 --save "$dir/gpt" >"$dir/gpt.txt" 2>&1 || { echo "FAIL: gpt save"; cat "$dir/gpt.txt"; exit 1; }
expect() {  # expect NAME PATTERN ARGS...: the run fails with PATTERN and trains no step
  local name=$1 pattern=$2; shift 2
  if "$zero" train "$@" >"$dir/$name.txt" 2>&1; then echo "FAIL: $name succeeded"; cat "$dir/$name.txt"; exit 1; fi
  grep -qE "$pattern" "$dir/$name.txt" || { echo "FAIL: $name: no '$pattern'"; cat "$dir/$name.txt"; exit 1; }
  if grep -q "^step " "$dir/$name.txt"; then echo "FAIL: $name trained"; cat "$dir/$name.txt"; exit 1; fi
}
expect gpt_resumes_llama "\[checkpoint\] .*manifest.json holds a LLaMA V=256 T=16 C=32 L=2 H=4 KV=2 F=64 but this run builds a GPT V=256 T=64 C=32 L=2 H=4: set the model section" \
  "${gpt[@]}" --sample 0 --steps 2 --resume "$dir/llama"
expect llama_resumes_gpt "\[checkpoint\] .*manifest.json holds a GPT V=256 T=64 C=32 L=2 H=4 but this run builds a LLaMA V=256 T=16 C=32 L=2 H=4 KV=2 F=64: set the model section" \
  --config "$llama" --steps 2 --resume "$dir/gpt"
expect llama_other_kv "holds a LLaMA V=256 T=16 C=32 L=2 H=4 KV=2 F=64 but this run builds a LLaMA V=256 T=16 C=32 L=2 H=4 KV=4 F=64" \
  --config "$llama" --steps 2 --resume "$dir/llama" --set model.num_key_value_heads=4
echo "ok: resuming another model is refused naming both"
