#!/usr/bin/env bash
# The NVMe step against the step-time model's time for its disk bytes (issue 25's speed goal).
# Each round, back to back on the folder DIR: `zero bench io` with --size the step's bytes a
# direction (this VM's disk gives 1.7x more on 512 MiB passes than on 128 MiB ones, so the pass
# must be the step's size), `zero bench offload --device nvme` (host offload and the NVMe tier
# alternated, the same GPT as docs/estimate.md's NVMe rows), `zero bench io` again (the disk's
# rate drifts within minutes: the mean of the passes before and after brackets the step's), then
# `zero estimate` at those bandwidths. The model's compute is not this machine's, so the prediction is the
# measured host-offload step plus what the model says the NVMe tier adds to it (its nvme row's
# step minus its host row's); the ratio is the measured NVMe step over that.
#   bash bench/nvme_step.sh [BUILD_DIR] [ROUNDS] [DIR]
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
rounds=${2:-3}
dir=${3:-/var/tmp/zero-nvme-step}
zero=$build/zero
[ -x "$zero" ] || { echo "build zero first: bash scripts/build.sh zero_cli"; exit 2; }
mkdir -p "$dir"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
model=(--n-embd 384 --n-layer 6)
echo "{\"zero_optimization\": {\"stage\": 2, \"offload_optimizer\": {\"device\": \"nvme\", \"nvme_path\": \"$dir\"}}}" >"$work/nvme.json"
estimate() {  # estimate READ_GBPS WRITE_GBPS OUT.json
  "$zero" estimate --vocab 256 --seq-len 64 --n-embd 384 --n-layer 6 --n-head 4 --ranks 1 --comm threads --stage 2 \
    --config "$work/nvme.json" --peak-tflops 0.0756 --achieved-fraction 0.955 --host-memory-bandwidth 40.9GB/s \
    --disk-read-bandwidth "$1GB/s" --disk-write-bandwidth "$2GB/s" --json "$3" >/dev/null
}
estimate 1 1 "$work/e0.json"
mib=$(python3 -c "import json,sys; p=[p for p in json.load(open(sys.argv[1]))['plans'] if p['offload_optimizer_nvme']][0]; print(max(1, round(p['nvme_traffic_bytes_per_step']['read'] / 2**20)))" "$work/e0.json")
echo "the step moves ${mib} MiB each way; $rounds rounds on $dir ($(df -h --output=fstype "$dir" | tail -1 | tr -d ' '))"
printf "%5s %9s %9s %11s %11s %11s %11s %7s\n" round "write GB/s" "read GB/s" "host ms" "nvme ms" "model adds" "predicted" ratio
for r in $(seq "$rounds"); do
  "$zero" bench io --dir "$dir" --size "${mib}MiB" --rounds 2 --fio no >"$work/io.txt"
  "$zero" bench offload --device nvme --nvme-path "$dir" --comm threads --ranks 1 "${model[@]}" --micro-batch 1 --steps 10 \
    --rounds 1 --json "$work/off.json" >/dev/null
  "$zero" bench io --dir "$dir" --size "${mib}MiB" --rounds 2 --fio no >>"$work/io.txt"
  read -r w rd < <(awk '/^zero \(src\/io\)/ {w += $3; r += $4; n++} END {printf "%.3f %.3f\n", w / n, r / n}' "$work/io.txt")
  estimate "$rd" "$w" "$work/e.json"
  python3 - "$r" "$w" "$rd" "$work/off.json" "$work/e.json" <<'PY'
import json, sys
r, w, rd, off, est = sys.argv[1:]
m = {t["optimizer_state"]: t["step_seconds"] * 1e3 for t in json.load(open(off))}
plans = json.load(open(est))["plans"]
step = lambda nvme: [p for p in plans if p["offload_optimizer"] and p["offload_optimizer_nvme"] == nvme][0]["step_time"]["step"] * 1e3
adds = step(True) - step(False)
pred = m["host"] + adds
print(f"{r:>5} {float(w):>10.3f} {float(rd):>9.3f} {m['host']:>11.1f} {m['nvme']:>11.1f} {adds:>11.1f} {pred:>11.1f} {m['nvme'] / pred:>7.2f}")
PY
done
