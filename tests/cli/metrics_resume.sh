#!/usr/bin/env bash
# metrics_resume.sh DIR ZERO: a resumed run's --metrics goes on from the step it resumes: a 4-step
# run saved every 2 steps, then resumed from its step 2 into a new save directory with the same
# --metrics file, leaves steps 1, 2, 3, 4 in the file once each (appending left 1 2 3 4 3 4), the
# last two from the resumed run; resuming from the latest (step 4) to step 6 gives 1-6.
set -u
dir=$1; zero=$2
rm -rf "$dir"; mkdir -p "$dir"
common=(train --comm threads --ranks 1 --sample 0 --set model.n_embd=16 --set model.n_layer=1
        --set train_micro_batch_size_per_gpu=2 --metrics "$dir/m.jsonl")
run() {  # run NAME FLAGS...
  local name=$1; shift
  "$zero" "${common[@]}" "$@" >"$dir/$name.txt" 2>&1 || { echo "FAIL: run $name"; cat "$dir/$name.txt"; exit 1; }
}
steps() { python3 -c 'import json, sys; print(" ".join(str(json.loads(l)["step"]) for l in open(sys.argv[1])), end=" ")' "$dir/m.jsonl"; }
run first --steps 4 --save "$dir/ck" --save-every 2
[ "$(steps)" = "1 2 3 4 " ] || { echo "FAIL: first run's steps: $(steps)"; exit 1; }
step2=$(ls -d "$dir"/ck/step-*2 2>/dev/null | head -1)
[ -d "$step2" ] || { echo "FAIL: no step-2 checkpoint in $dir/ck"; ls "$dir/ck"; exit 1; }
run fork --steps 4 --resume "$step2" --save "$dir/ck2"
[ "$(steps)" = "1 2 3 4 " ] || { echo "FAIL: after resuming step 2, the file holds steps $(steps)"; exit 1; }
run more --steps 6 --resume "$dir/ck2" --save "$dir/ck2"
[ "$(steps)" = "1 2 3 4 5 6 " ] || { echo "FAIL: after resuming step 4 to 6, the file holds steps $(steps)"; exit 1; }
echo "ok: --metrics holds each step once after a resume ($(steps))"
