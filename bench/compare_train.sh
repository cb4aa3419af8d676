#!/usr/bin/env bash
# zero vs PyTorch DDP: training tokens/s of the same GPT, side by side, on this machine.
#
# Runs `zero bench train` (ZeRO stage 0 = DDP, 2 MPI ranks) and bench/pytorch_ddp_gpt.py
# (torch DistributedDataParallel over gloo, 2 processes) on the same models, micro-batch and
# sequence length, alternating them for ROUNDS rounds so that both see the same machine load,
# and prints each one's tokens/s (median and best over the rounds) and the ratio zero / PyTorch.
#   models: V=256 T=256, C=384 L=6 H=6 (10.8M parameters) and C=768 L=7 H=12 (50.0M)
#   per rank: micro-batch 4 x 256 tokens, one OpenMP/OpenBLAS (zero) or intra-op (torch) thread,
#   so 2 ranks = 2 cores; fp32, AdamW; synthetic uniform byte tokens
# A benchmark, not a test: scripts/test.sh does not run it, and scripts/setup.sh does not
# install torch. One-time setup (Debian 12, as root; PyTorch 1.13.1 from Debian's archive):
#     apt-get update && apt-get install -y python3-torch
#
# Method and measured figures: bench/README.md.
# usage: bench/compare_train.sh            (from anywhere; builds zero into $BUILD if needed)
# env:   BUILD (build), ROUNDS (3), WARMUP (2), STEPS (6), MICRO_BATCH (4), SEQ_LEN (256),
#        MODELS ("10m 50m"), OUT (a new temporary directory: the JSON of every run, summary.json)
# Whatever OpenBLAS kernel set the environment selects (OPENBLAS_CORETYPE) applies to both; the
# output names it.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
ROUNDS=${ROUNDS:-3}
WARMUP=${WARMUP:-2}
STEPS=${STEPS:-6}
MICRO_BATCH=${MICRO_BATCH:-4}
SEQ_LEN=${SEQ_LEN:-256}
MODELS=${MODELS:-"10m 50m"}
PY=/usr/bin/python3  # Debian's interpreter: python3-torch installs there, not into other Pythons

if ! "$PY" -c 'import torch' 2>/dev/null; then
  echo "compare_train: PyTorch is missing; install it once with: apt-get update && apt-get install -y python3-torch" >&2
  exit 1
fi
if [[ ! -x "$BUILD/zero" ]]; then
  cmake -S . -B "$BUILD" >/dev/null
  cmake --build "$BUILD" -j"$(nproc)" --target zero_cli >/dev/null
fi
OUT=${OUT:-$(mktemp -d /tmp/compare_train.XXXXXX)}
mkdir -p "$OUT"

common=(--micro-batch "$MICRO_BATCH" --seq-len "$SEQ_LEN" --warmup "$WARMUP" --steps "$STEPS")
echo "compare_train: $ROUNDS rounds of {zero, pytorch} x {$MODELS}; $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg); results in $OUT"
for round in $(seq 1 "$ROUNDS"); do
  for model in $MODELS; do
    echo "-- round $round, $model"
    "$BUILD/zero" bench train --ranks 2 --model "$model" "${common[@]}" --json "$OUT/zero_${model}_$round.json" | sed 's/^/   /'
    "$PY" bench/pytorch_ddp_gpt.py --ranks 2 --model "$model" "${common[@]}" --json "$OUT/torch_${model}_$round.json" | sed 's/^/   /'
  done
done

"$PY" - "$OUT" "$ROUNDS" "$MICRO_BATCH" "$SEQ_LEN" $MODELS <<'EOF'
import json, statistics, sys
out, rounds, B, T, models = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5:]
def load(tool, model, r):
    with open(f"{out}/{tool}_{model}_{r}.json") as f:
        return json.load(f)
summary = {"rounds": rounds, "micro_batch": B, "seq_len": T, "models": {}}
print(f"\n{'model':<6}{'params':>8}{'zero tok/s':>12}{'torch tok/s':>13}{'ratio':>7}   {'per-round ratios':<18}"
      f"{'best step: zero':>16}{'torch':>8}{'ratio':>7}")
for m in models:
    z = [load("zero", m, r) for r in range(1, rounds + 1)]
    t = [load("torch", m, r) for r in range(1, rounds + 1)]
    zt = [d["results"][0]["tokens_per_second"] for d in z]
    tt = [d["results"][0]["tokens_per_second"] for d in t]
    paired = [a / b for a, b in zip(zt, tt)]
    zm, tm = statistics.median(zt), statistics.median(tt)
    # The fastest single step of all rounds: what each does when the machine leaves it alone.
    tokens_per_step = B * T * z[0]["ranks"]
    zb = min(min(d["results"][0]["step_ms"]) for d in z)
    tb = min(min(d["results"][0]["step_ms"]) for d in t)
    params = z[0]["results"][0]["parameters"]
    print(f"{m:<6}{params / 1e6:>7.1f}M{zm:>12.0f}{tm:>13.0f}{zm / tm:>6.2f}x   {' '.join(f'{p:.2f}' for p in paired):<18}"
          f"{zb:>13.0f} ms{tb:>5.0f} ms{tb / zb:>6.2f}x")
    summary["models"][m] = {"parameters": params, "shape": z[0]["results"][0]["shape"],
                            "zero_tokens_per_second": zt, "torch_tokens_per_second": tt,
                            "median_ratio": zm / tm, "paired_ratios": paired,
                            "zero_best_step_ms": zb, "torch_best_step_ms": tb, "best_step_ratio": tb / zb,
                            "best_step_tokens_per_second": {"zero": tokens_per_step / zb * 1e3, "torch": tokens_per_step / tb * 1e3},
                            "openblas_core": {"zero": z[0]["openblas_core"], "torch": t[0]["openblas_core"]},
                            "torch_version": t[0]["torch"]}
print("ratio: median tokens/s over the rounds (wall clock over the timed steps, barrier to barrier), zero / PyTorch;\n"
      "best step: the fastest single step (slowest rank) of all rounds, PyTorch's time / zero's")
with open(f"{out}/summary.json", "w") as f:
    json.dump(summary, f, indent=2)
EOF
