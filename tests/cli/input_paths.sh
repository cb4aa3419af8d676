#!/usr/bin/env bash
# input_paths.sh ZERO: a data or config path that is not a regular file (a FIFO no one writes to,
# a device, a directory) or cannot be read (/proc/self/mem) is one clear line naming the file and
# exit 1, promptly: never a hang, never an internal error, never one message per rank.
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
[ "$failed" -eq 0 ] && echo "ok: every unreadable input refused at once, by name"
exit "$failed"
