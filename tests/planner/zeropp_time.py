#!/usr/bin/env python3
"""zeropp_time.py ZERO: the step-time model's ZeRO++ terms (planner/step_time.h, docs/estimate.md
"ZeRO++"), recomputed here from the rows' JSON by the rules the docs state, not by zero's code.
A GPT of 4 units on 2 nodes of 2 ranks, stage 3, fp16, 2 micro-batches a step, no persistent units:
  - qgZ's bytes from its own formula: per unit slice of k elements, Q(k) = 4 ceil(k/64) + ceil(k/2),
    (M-1) Q(k) to the other nodes and (L-1) M Q(k) inside the node, every micro-batch;
  - hpZ's backward gathers never cross: with it, half of qwZ's across bytes;
  - the links: the forward gathers' bytes = across x (N-1)/(N-L), through the node's network whole;
    hpZ's backward gathers (the rest) through the intra-node link alone; the reductions' node bytes
    = L x across (an all-to-all), device bytes all but the across; each part max(device / intra,
    node / inter), + latency steps (2 a pair exchange);
  - the quantisation passes at the device's memory bandwidth;
  - with nothing overlapping (--comm-on-compute-cores), the whole step."""
import atexit, math, shutil, sys, tempfile

import rule_checks
from rule_checks import check, close, failures

zero = sys.argv[1]
work = tempfile.mkdtemp(prefix="zeropp_time.")
atexit.register(shutil.rmtree, work, True)
V, T, C, NL, N, L, G = 256, 64, 64, 2, 4, 2, 2
M = N // L
GPT = ["--vocab", str(V), "--seq-len", str(T), "--n-embd", str(C), "--n-layer", str(NL), "--n-head", "4"]
PEAK, FRACTION, INTRA, INTER, LATENCY, HBM = 0.01e12, 0.5, 1e9, 0.1e9, 1e-6, 2e9
MACHINE = ["--peak-tflops", "0.01", "--achieved-fraction", "0.5", "--intra-node-bandwidth", "1GB/s", "--inter-node-bandwidth",
           "0.1GB/s", "--latency", "1e-6", "--memory-bandwidth", "2GB/s", "--dtype", "fp16", "--comm", "threads",
           "--ranks", str(N), "--ranks-per-node", str(L), "--stage", "3"]


def estimate(name, zeropp, *flags):
    config = {"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": G, "fp16": {"enabled": True},
              "zero_optimization": {"stage": 3, "stage3_param_persistence_threshold": 0, **zeropp}}
    return rule_checks.estimate(zero, work, name, config, *GPT, *MACHINE, *flags)[1]


units = [V * C + T * C] + [12 * C * C + 13 * C] * NL + [2 * C]
slices = [-(-u // N) for u in units]
P = N * sum(slices)  # padded elements
Q = lambda k: 4 * -(-k // 64) + -(-k // 2)
ring = 2 * math.ceil(math.log2(N))

qwz = estimate("qwz", {"zero_quantized_weights": True})
full = estimate("full", {"zero_quantized_weights": True, "zero_hpz_partition_size": L, "zero_quantized_gradients": True},
                "--comm-on-compute-cores")
check(full["label"] == f"3+qwZ+hpZ{L}+qgz", f"label {full['label']}")
check(full["padded_parameters"] == P, f"padded {full['padded_parameters']}, the units' {P}")
sent, across, calls = full["traffic_bytes_per_step"], full["traffic_across_bytes_per_step"], full["collective_calls_per_step"]

# qgZ's bytes by its formula; hpZ's gathers inside the node.
check(across["reduce_scatter"] == G * sum((M - 1) * Q(k) for k in slices), f"qgZ across {across['reduce_scatter']}")
check(sent["reduce_scatter"] - across["reduce_scatter"] == G * sum((L - 1) * M * Q(k) for k in slices), f"qgZ inside {sent}")
# (to the scales' few bytes: a packet's f32 scales fall per block of 2048 over its own run)
check(abs(2 * across["all_gather"] - qwz["traffic_across_bytes_per_step"]["all_gather"]) <= 1e-4 * across["all_gather"] > 0,
      f"hpZ: {across['all_gather']} across, qwZ alone {qwz['traffic_across_bytes_per_step']['all_gather']}")
check(sent["all_gather"] > across["all_gather"] * (N - 1) / (N - L), "hpZ: some gathers stay inside the node")

# The links, each class as alone, then the quantisation passes.
spanning = across["all_gather"] * (N - 1) / (N - L)  # the forward gathers; hpZ's backward ones stay inside
gather = max(spanning / INTRA, spanning / INTER) + (sent["all_gather"] - spanning) / INTRA + calls["all_gather"] * ring * LATENCY
reduce = max((sent["reduce_scatter"] - across["reduce_scatter"]) / INTRA, L * across["reduce_scatter"] / INTER) + calls["reduce_scatter"] * 2 * LATENCY
t = full["step_time"]
close(t["comm"], gather + reduce, "comm: the gathers and the all-to-all")
check(calls["all_reduce"] == sent["all_reduce"] == 0, f"stage 3 all-reduces nothing here: {calls}")
e, q = 2, 0.5625
quantize = G * (P * (1 + e) * (1 + 1 / N) + P * ((e + q) + (q + 4) + 2 * (4 + q) / L)) / HBM
close(t["quantize"], quantize, "quantisation passes")
# Nothing overlaps: the whole step, from the shape (6Ψ + 12 L C T FLOPs a token) and device Adam.
psi = sum(units)
flops = 6 * psi + 12 * NL * C * T
close(t["flops_per_token"], flops, "FLOPs per token")
compute = flops * N * T * G / N / (PEAK * FRACTION)
close(t["compute"], compute, "compute")
close(t["comm_exposed"], t["comm"], "nothing overlaps")
close(t["optimizer"], full["shard_parameters"] * 28 / HBM, "device Adam")
close(t["step"], compute + t["comm"] + t["optimizer"] + quantize, "step")
# qwZ alone: both gathers quantised, a ring over every rank (node bytes = all a rank sends).
tq, sq = qwz["step_time"], qwz["traffic_bytes_per_step"]
close(tq["quantize"], G * 2 * P * (1 + e) * (1 + 1 / N) / HBM, "qwZ alone: two quantised gathers")
check(sq["all_gather"] * (N - L) == qwz["traffic_across_bytes_per_step"]["all_gather"] * (N - 1), f"qwZ alone: every gather spans the ranks")
close(tq["step"], tq["compute"] + tq["tensor_parallel"] + tq["comm_exposed"] + tq["optimizer"] + tq["disk_exposed"] + tq["quantize"], "qwZ: step")

if failures:
    sys.exit("zeropp_time: " + "\n  ".join(failures))
print("zeropp_time: ZeRO++'s bytes, links and quantisation passes as docs/estimate.md says")
