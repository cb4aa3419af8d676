#!/usr/bin/env bash
# input_paths.sh ZERO: a data or config path that is not a regular file (a FIFO no one writes to,
# a device, a directory) or cannot be read (/proc/self/mem), or a .bin the run cannot use as asked,
# is one clear line naming the file and exit 1, promptly: never a hang, never an internal error,
# never one message per rank.
set -u
zero=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mkfifo "$dir/fifo"
small=(--steps 1 --sample 0 --set model.n_embd=16 --set model.n_layer=1)
failed=0

# refuse REGEX COMMAND...: exit 1 within 30 s, and the whole output is one line matching REGEX.
refuse() {
  local regex=$1
  shift
  local out code
  out=$(timeout 30 "$@" 2>&1)
  code=$?
  if [ "$code" -ne 1 ] || ! grep -qE -- "$regex" <<<"$out" || [ "$(wc -l <<<"$out")" -ne 1 ]; then
    echo "FAIL (exit $code; 124 is a hang): $*"
    echo "$out"
    failed=1
  fi
}
refuse "^zero: \[data\] data file $dir/fifo is a FIFO \(named pipe\), not a regular file" "$zero" train "${small[@]}" --data "$dir/fifo"
refuse "^zero: \[data\] data file $dir/fifo is a FIFO" "$zero" train "${small[@]}" --ranks 3 --data "$dir/fifo"
refuse "^zero: \[data\] data file $dir/fifo is a FIFO" "$zero" demo --steps 1 --data "$dir/fifo"
refuse "^zero: \[data\] data file /dev/zero is a character device" "$zero" train "${small[@]}" --data /dev/zero
refuse "^zero: \[data\] data file /proc/self/mem could not be read after 0 bytes: Input/output error" \
  "$zero" train "${small[@]}" --data /proc/self/mem
refuse "^zero: \[data\] data file $dir is a directory" "$zero" train "${small[@]}" --data "$dir"
refuse "^zero: \[data\] data file $dir/none.txt does not exist" "$zero" train "${small[@]}" --data "$dir/none.txt"
refuse "^zero: \[estimate\] config file $dir/fifo is a FIFO" "$zero" estimate --model gpt2 --config "$dir/fifo"
refuse "^zero: \[estimate\] config file /dev/zero is a character device" "$zero" estimate --model gpt2 --config /dev/zero
refuse "^zero: \[config\] config file '$dir/fifo' is not a regular file" "$zero" train --config "$dir/fifo"
# --resume and --save, checked before mpirun starts the ranks (one line, no Open MPI banner).
head -c 3000 /usr/share/common-licenses/GPL-3 >"$dir/data.txt"
refuse "^zero: \[checkpoint\] $dir/none does not exist: a checkpoint is a directory" \
  "$zero" train "${small[@]}" --ranks 2 --data "$dir/data.txt" --resume "$dir/none"
refuse "^zero: \[checkpoint\] cannot use --save $dir/fifo: " "$zero" train "${small[@]}" --ranks 2 --data "$dir/data.txt" --save "$dir/fifo"
"$zero" train "${small[@]}" --data "$dir/data.txt" --save "$dir/ck" >"$dir/save.log" 2>&1 || { echo "FAIL: a save"; cat "$dir/save.log"; failed=1; }
refuse "^zero: \[checkpoint\] $dir/ck/step-0*1/manifest.json holds a GPT V=256 T=64 C=16 L=1 H=4 but this run builds a GPT V=256 T=64 C=32" \
  "$zero" train "${small[@]}" --ranks 2 --data "$dir/data.txt" --resume "$dir/ck" --set model.n_embd=32
refuse "^zero: \[train\] the checkpoint is at step 1 and train_steps is 1: nothing to train. Raise --steps above 1" \
  "$zero" train "${small[@]}" --ranks 2 --data "$dir/data.txt" --resume "$dir/ck"
refuse "^zero: \[checkpoint\] $dir/ck already holds checkpoints" "$zero" train "${small[@]}" --ranks 2 --data "$dir/data.txt" --save "$dir/ck"

# An llm.c .bin of byte-range tokens whose header gives no vocabulary (so GPT-2's, 50257).
python3 -c "import struct, sys; n = 4096; sys.stdout.buffer.write(struct.pack('<256i', 20240520, 1, n, *[0] * 253) + struct.pack('<%dH' % n, *[i % 256 for i in range(n)]))" >"$dir/tokens.bin"
refuse "^zero: \[train\] $dir/tokens.bin is read with a vocabulary of 50257 tokens \(.*its largest token is 255\) but the model's vocab_size is 256" \
  "$zero" train "${small[@]}" --data "$dir/tokens.bin"
refuse "^zero: \[train\] --sample generates text, but $dir/tokens.bin holds llm.c token ids" \
  "$zero" train "${small[@]}" --ranks 2 --set model.vocab_size=50257 --data "$dir/tokens.bin" --sample 40
refuse "^zero: \[demo\] $dir/tokens.bin holds llm.c token ids, but zero demo trains its byte-level GPT" \
  "$zero" demo --ranks 2 --steps 1 --n-embd 8 --n-layer 1 --data "$dir/tokens.bin"
[ "$failed" -eq 0 ] && echo "ok: every unreadable input refused at once, by name"
exit "$failed"
