#!/usr/bin/env bash
# zero vs PyTorch on CPU: training tokens/s of the same GPT, side by side, on this machine.
#
# Two comparisons, each a zero stage against its PyTorch counterpart, 2 ranks each:
#   zero stage 0 (`zero bench train`, 2 MPI ranks)  vs  torch DistributedDataParallel
#   zero stage 1 (`zero bench train --stage 1`)     vs  DDP + torch's ZeroRedundancyOptimizer (ZeRO-1)
# (the torch side: bench/pytorch_ddp_gpt.py, gloo, 2 processes). Not FSDP: torch 1.13's
# FullyShardedDataParallel cannot run on CPU over gloo (bench/README.md says why, and
# bench/pytorch_fsdp_probe.py re-checks it in seconds), so zero's
# stage 3 has no PyTorch counterpart here. All four run the same models, micro-batch and sequence
# length, alternating for ROUNDS rounds so that all see the same machine load; per comparison it
# prints each side's tokens/s (median and best step over the rounds) and the ratio zero / PyTorch.
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
#        MODELS ("10m 50m"), SHARDED (1; 0 = stage 0 vs DDP only, in half the time),
#        OUT (a new temporary directory: the JSON of every run, summary.json)
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
SHARDED=${SHARDED:-1}
PY=/usr/bin/python3  # Debian's interpreter: python3-torch installs there, not into other Pythons

if [[ "$SHARDED" != 0 && "$SHARDED" != 1 ]]; then
  echo "compare_train: SHARDED must be 0 or 1, not '$SHARDED'" >&2
  exit 1
fi
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
runs="{zero stage 0, pytorch ddp}"
[[ "$SHARDED" == 1 ]] && runs+=" + {zero stage 1, pytorch ddp + ZeroRedundancyOptimizer}"
echo "compare_train: $ROUNDS rounds of $runs x {$MODELS}; $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg); results in $OUT"
# One pair's two runs, zero's first in odd rounds and PyTorch's first in even ones, so that neither
# always runs on the machine the other just warmed (or heated).
pair() {  # pair ROUND ZERO_TAG TORCH_TAG MODEL ZERO_ARGS... -- TORCH_ARGS...
  local round=$1 ztag=$2 ttag=$3 model=$4; shift 4
  local zargs=() targs=()
  while [[ $# -gt 0 && "$1" != -- ]]; do zargs+=("$1"); shift; done
  shift; targs=("$@")
  run_zero() { "$BUILD/zero" bench train --ranks 2 "${zargs[@]}" --model "$model" "${common[@]}" --json "$OUT/${ztag}_${model}_$round.json" | sed 's/^/   /'; }
  run_torch() { "$PY" bench/pytorch_ddp_gpt.py --ranks 2 "${targs[@]}" --model "$model" "${common[@]}" --json "$OUT/${ttag}_${model}_$round.json" | sed 's/^/   /'; }
  if (( round % 2 == 1 )); then run_zero; run_torch; else run_torch; run_zero; fi
}
for round in $(seq 1 "$ROUNDS"); do
  for model in $MODELS; do
    echo "-- round $round, $model"
    pair "$round" zero torch "$model" --
    if [[ "$SHARDED" == 1 ]]; then pair "$round" zero1 torchzro "$model" --stage 1 -- --zero-redundancy-optimizer; fi
  done
done

"$PY" - "$OUT" "$ROUNDS" "$MICRO_BATCH" "$SEQ_LEN" "$SHARDED" $MODELS <<'EOF'
import json, statistics, sys
out, rounds, B, T, sharded, models = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5] == "1", sys.argv[6:]
ZRO = "DDP+ZeroRedundancyOptimizer"
def load(tool, model):
    runs = []
    for r in range(1, rounds + 1):
        with open(f"{out}/{tool}_{model}_{r}.json") as f:
            runs.append(json.load(f))
    return runs
def compare(label, m, z, t):
    zt = [d["results"][0]["tokens_per_second"] for d in z]
    tt = [d["results"][0]["tokens_per_second"] for d in t]
    paired = [a / b for a, b in zip(zt, tt)]
    zm, tm = statistics.median(zt), statistics.median(tt)
    # The fastest single step of all rounds: what each does when the machine leaves it alone.
    tokens_per_step = B * T * z[0]["ranks"]
    zb = min(min(d["results"][0]["step_ms"]) for d in z)
    tb = min(min(d["results"][0]["step_ms"]) for d in t)
    params = z[0]["results"][0]["parameters"]
    if t[0]["results"][0]["parameters"] != params:  # then the two are not training the same model
        print(f"WARNING: {m}: zero counts {params} parameters, {t[0]['tool']} {t[0]['results'][0]['parameters']}")
    print(f"{m:<6}{params / 1e6:>7.1f}M  {label:<40}{zm:>10.0f}{tm:>13.0f}{zm / tm:>6.2f}x   {' '.join(f'{p:.2f}' for p in paired):<18}"
          f"{zb:>13.0f} ms{tb:>5.0f} ms{tb / zb:>6.2f}x")
    return {"parameters": params, "torch_parameters": t[0]["results"][0]["parameters"], "shape": z[0]["results"][0]["shape"],
            "zero_stage": z[0]["results"][0]["stage"], "torch_tool": t[0]["tool"],
            "zero_tokens_per_second": zt, "torch_tokens_per_second": tt,
            "median_ratio": zm / tm, "paired_ratios": paired,
            "zero_best_step_ms": zb, "torch_best_step_ms": tb, "best_step_ratio": tb / zb,
            "best_step_tokens_per_second": {"zero": tokens_per_step / zb * 1e3, "torch": tokens_per_step / tb * 1e3},
            "openblas_core": {"zero": z[0]["openblas_core"], "torch": t[0]["openblas_core"]},
            "torch_version": t[0]["torch"]}
def loss_gap(a, b):
    """The largest per-step loss difference between two torch runs' rank 0, over all rounds."""
    assert len(a) == len(b), (len(a), len(b))
    pairs = [(d["results"][0]["losses"], e["results"][0]["losses"]) for d, e in zip(a, b)]
    assert all(len(x) == len(y) for x, y in pairs), [(len(x), len(y)) for x, y in pairs]
    return max(abs(x - y) for p, q in pairs for x, y in zip(p, q))
summary = {"rounds": rounds, "micro_batch": B, "seq_len": T, "models": {}}
print(f"\n{'model':<6}{'params':>8}  {'comparison':<40}{'zero tok/s':>10}{'torch tok/s':>13}{'ratio':>7}   {'per-round ratios':<18}"
      f"{'best step: zero':>16}{'torch':>8}{'ratio':>7}")
notes = []
for m in models:
    ddp = load("torch", m)
    summary["models"][m] = compare("stage 0 vs DDP", m, load("zero", m), ddp)
    if sharded:
        zro = load("torchzro", m)
        entry = compare(f"stage 1 vs {ZRO}", m, load("zero1", m), zro)
        # The same seeds and batches as each round's DDP run, and ZeRO-1 moves AdamW's state, not
        # its arithmetic: the losses should be DDP's, step for step.
        entry["max_loss_difference_vs_ddp"] = gap = loss_gap(ddp, zro)
        r0 = zro[0]["results"][0]
        notes.append(f"{m}: {ZRO}'s losses differ from DDP's by at most {gap:.3g} over all steps and rounds "
                     f"(round 1: {r0['first_loss']:.3f} -> {r0['last_loss']:.3f})")
        summary["models"][m]["zero_redundancy_optimizer"] = entry
print("ratio: median tokens/s over the rounds (wall clock over the timed steps, barrier to barrier), zero / PyTorch;\n"
      "best step: the fastest single step (slowest rank) of all rounds, PyTorch's time / zero's")
for note in notes:
    print(note)
with open(f"{out}/summary.json", "w") as f:
    json.dump(summary, f, indent=2)
EOF
