#!/usr/bin/env bash
# zero bench train's breakdown of the step (--json): on every stage the parts are not negative
# and fit in the step (no moment counted twice: rest >= 0), the kernels and Adam are on the
# clock (matmul, attention, norm, optimizer > 0), the in-step limit is the tokens of a step over
# the step's own linear-layer time, and the GEMM-bound limit times exactly the step's products:
# their FLOPs, counted here from the shape, and tokens = limit x their seconds.
set -euo pipefail
out="$1" zero="$2"
rm -rf "$out" && mkdir -p "$out"
"$zero" bench train --model 10m --stage 0,3 --comm threads --ranks 2 --warmup 1 --steps 2 --seq-len 16 --micro-batch 1 --json "$out/b.json" > "$out/stdout"
grep -q "where rank 0's step went" "$out/stdout"
python3 - "$out/b.json" <<'PY'
import json, statistics, sys
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
    limit = r["gemm_bound_in_step_tokens_per_second"]
    assert abs(limit * b["matmul"] / 1e3 - tokens) <= 1e-6 * tokens, (limit, b["matmul"], tokens)
    g = r["gemm_limit"]
    assert g["tokens_per_second"] > 0 and abs(g["tokens_per_second"] * g["seconds_per_step"] - tokens) <= 1e-6 * tokens, g
    # one pass after each timed round; the limit at their median, each step's ratio against its pass
    passes, ratios = g["seconds_per_pass"], g["step_ratios"]
    assert len(passes) == j["steps"] == len(ratios), g
    assert g["seconds_per_step"] == statistics.median(passes) and g["ratio"] == statistics.median(ratios), g
    windows = [p / q for p, q in zip(passes, ratios)]  # each step's window, as its ratio implies
    assert abs(sum(windows) - r["seconds"]) <= 1e-6 * r["seconds"], (windows, r["seconds"])
    s = r["shape"]
    V, T, C, L, H = s["vocab_size"], s["n_ctx"], s["n_embd"], s["n_layer"], s["n_head"]
    N, hs = j["micro_batch"] * T, C // H
    linear = 3 * 2 * N * (L * (C * 3 * C + C * C + C * 4 * C + 4 * C * C) + C * V)  # forward, input and weight gradients
    blocks = [(min(64, T - i0), i0) for i0 in range(0, T, 64)]  # (query rows, first row) of the kernel's blocks
    attention = j["micro_batch"] * H * L * sum(2 * 2 * m * (i0 + m) * hs * 2 + 2 * 2 * m * hs * (T - i0) for m, i0 in blocks)
    assert g["flops_per_rank_step"] == linear + attention, (g["flops_per_rank_step"], linear, attention)
print("breakdown ok:", [(r["stage"], round(r["breakdown_ms"]["matmul"], 1), round(r["breakdown_ms"]["rest"], 1)) for r in j["results"]])
PY
