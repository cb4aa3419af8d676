#!/usr/bin/env bash
# output_paths.sh ZERO CHECK_METRICS: every flag that writes a file refuses, before any work, a path
# it would damage (a device, a FIFO, a directory empty or not, a symlink to one, an input of the
# run by another name, a path in a missing directory) with one line naming the flag and the path,
# and leaves every path as it was; of two runs given the same --metrics path at once, one writes it
# whole and the other, if they overlap, is refused naming it.
set -u
zero=$1
check_metrics=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
small=(--steps 2 --sample 0 --set model.n_embd=16 --set model.n_layer=1)
head -c 3000 /usr/share/common-licenses/GPL-3 >"$dir/data.txt"
printf '{"train_micro_batch_size_per_gpu": 2}\n' >"$dir/config.json"
mkfifo "$dir/fifo"
mkdir "$dir/empty" "$dir/full"
echo keep >"$dir/full/keep"
ln -s /dev/null "$dir/to_null"
ln -s "$dir/full" "$dir/to_dir"
ln "$dir/data.txt" "$dir/data_link"
failed=0

# Every path's type, size and inode, and the directories' entries: what a refused run must not change.
state() { stat -c '%n %F %s %i' /dev/null "$dir"/* && ls -A "$dir" "$dir/full" "$dir/empty"; }

# refuse WHY COMMAND...: exit 1, the one line "zero: [output] --FLAG PATH ...WHY...", nothing changed.
refuse() {
  local why=$1
  shift
  local before after out code
  before=$(state)
  out=$(timeout 60 "$@" 2>&1)
  code=$?
  after=$(state)
  if [ "$code" -ne 1 ] || ! grep -qE -- "^zero: \[output\] --[a-z]+ [^ ]+ .*$why" <<<"$out" ||
     [ "$(wc -l <<<"$out")" -ne 1 ] || [ "$before" != "$after" ]; then
    echo "FAIL (exit $code, want 1 and one line with /$why/ and nothing changed): $*"
    echo "$out"
    diff <(echo "$before") <(echo "$after")
    failed=1
  fi
}

bad_paths() {  # bad_paths COMMAND... --FLAG: the command with each damaging path after the flag
  refuse "is a character device" "$@" /dev/null
  refuse "is a FIFO" "$@" "$dir/fifo"
  refuse "is a directory" "$@" "$dir/empty"
  refuse "is a directory" "$@" "$dir/full"
  refuse "symbolic link to a character device" "$@" "$dir/to_null"
  refuse "symbolic link to a directory" "$@" "$dir/to_dir"
  refuse "its directory $dir/none does not exist" "$@" "$dir/none/out"
}
train=("$zero" train --comm threads "${small[@]}" --data "$dir/data.txt")
for flag in --metrics --trace; do
  bad_paths "${train[@]}" "$flag"
  refuse "is the same file as the data file" "${train[@]}" "$flag" "$dir/data.txt"
  refuse "is the same file as the data file" "${train[@]}" "$flag" "$dir/data_link"
  refuse "is the same file as the config file" "${train[@]}" --config "$dir/config.json" "$flag" "$dir/config.json"
done
refuse "also named by another output flag" "${train[@]}" --metrics "$dir/m.json" --trace "$dir/./m.json"
refuse "is a character device" "$zero" train "${small[@]}" --ranks 2 --data "$dir/data.txt" --metrics /dev/null  # before mpirun
demo=("$zero" demo --ranks 2 --steps 1 --n-embd 8 --n-layer 1 --data "$dir/data.txt")
for flag in --svg --json; do
  bad_paths "${demo[@]}" "$flag"
  refuse "is the same file as the data file" "${demo[@]}" "$flag" "$dir/data_link"
done
bad_paths "$zero" bench train --json
bad_paths "$zero" bench offload --comm threads --json
refuse "is a directory" "$zero" bench adam --sizes 1M --reps 1 --json "$dir/full"

# Two runs at once, one --metrics path: the file is one run's whole file, and no temporary file is
# left. The file is a log that grows, locked by the run writing it: a run that finds it locked
# fails before its first step, naming the other (when the two do not overlap, both succeed).
"${train[@]}" --metrics "$dir/same.jsonl" >"$dir/run1.log" 2>&1 &
first=$!
"${train[@]}" --seed 7 --metrics "$dir/same.jsonl" >"$dir/run2.log" 2>&1
second=$?
wait "$first"
first=$?
locked_out() { grep -q "^zero: \[output\] --metrics $dir/same.jsonl is being written by another run (pid [0-9]*)" "$1"; }
if { [ "$first" -ne 0 ] && ! locked_out "$dir/run1.log"; } || { [ "$second" -ne 0 ] && ! locked_out "$dir/run2.log"; } ||
   { [ "$first" -ne 0 ] && [ "$second" -ne 0 ]; } || ! "$check_metrics" "$dir/same.jsonl" 2 1; then
  echo "FAIL: two runs writing $dir/same.jsonl (exit $first and $second)"
  cat "$dir/run1.log" "$dir/run2.log"
  failed=1
fi
left=$(ls "$dir" | grep -c partial)
if [ "$left" -ne 0 ]; then
  echo "FAIL: temporary files left behind:"
  ls -la "$dir"
  failed=1
fi
[ "$failed" -eq 0 ] && echo "ok: every damaging output path refused; of concurrent runs on one --metrics, one writes it whole (exit $first and $second)"
exit "$failed"
