#!/usr/bin/env bash
# zero bench train's breakdown of the step (--json): on every stage the parts are not negative
# and fit in the step (no moment counted twice: rest >= 0), the kernels and Adam are on the
# clock (matmul, attention, norm, optimizer > 0), and the GEMM-bound limit is the tokens of a
# step over the step's own matrix-product time.
set -euo pipefail
out="$1" zero="$2"
rm -rf "$out" && mkdir -p "$out"
"$zero" bench train --model 10m --stage 0,3 --comm threads --ranks 2 --warmup 1 --steps 2 --seq-len 16 --micro-batch 1 --json "$out/b.json" > "$out/stdout"
grep -q "where rank 0's step went" "$out/stdout"
python3 - "$out/b.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
tokens = j["ranks"] * j["micro_batch"] * j["seq_len"]
for r in j["results"]:
    b = r["breakdown_ms"]
    parts = [k for k in b if k != "step"]
    for k in parts:
        assert b[k] >= -1e-9 * b["step"], (r["stage"], k, b[k])
    for k in ("matmul", "attention", "norm", "optimizer"):
        assert b[k] > 0, (r["stage"], k, b)
    total = sum(b[k] for k in parts)
    assert abs(total - b["step"]) <= 1e-6 * b["step"], (total, b["step"])
    assert abs(r["compute_ms"] + r["optimizer_ms"] - b["step"]) <= 1e-6 * b["step"]
    limit = r["gemm_bound_tokens_per_second"]
    assert abs(limit * b["matmul"] / 1e3 - tokens) <= 1e-6 * tokens, (limit, b["matmul"], tokens)
print("breakdown ok:", [(r["stage"], round(r["breakdown_ms"]["matmul"], 1), round(r["breakdown_ms"]["rest"], 1)) for r in j["results"]])
PY
