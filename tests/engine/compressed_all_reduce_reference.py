#!/usr/bin/env python3
"""An independent NumPy model of 1-bit Adam's error-compensated compressed all-reduce
(DeepSpeed's NcclBackend.compressed_allreduce, as documented in src/engine/compressed_all_reduce.h),
run on the inputs zero's test wrote, compared with zero's outputs.

Usage: compressed_all_reduce_reference.py DIR
DIR/meta.txt: "ranks N", "calls K", "sizes n_0 n_1 ...";
DIR/inputs.f32, DIR/outputs.f32: float32, [call][rank][tensor elements laid end to end].
Exit status 0 when every output equals the reference exactly (the same float32 operations in
the same order), 1 otherwise; prints the largest difference.
"""
import math
import sys

import numpy as np


def padded(n, ranks):
    quantum = ranks * (ranks * 8 // math.gcd(ranks, 8))
    return -(-n // quantum) * quantum


def sign(x):
    return np.where(x < 0, np.float32(-1), np.float32(1)).astype(np.float32)


def rms(x):
    # the sum of squares in float64, left to right (cumsum is sequential), then sqrt and the division
    acc = np.cumsum(x.astype(np.float64) ** 2)[-1]
    return np.float32(math.sqrt(acc) / math.sqrt(x.size))


def compressed_average(xs, worker_err, server_err, ranks):
    """xs[r]: rank r's tensor; worker_err[r] (C), server_err[r] (C / N) updated in place."""
    n = xs[0].size
    c_all = worker_err[0].size
    c = c_all // ranks
    signs, scales = [], []
    for r in range(ranks):
        b = worker_err[r].copy()
        b[:n] = xs[r] + b[:n]
        scale = rms(b)
        s = sign(b)
        worker_err[r][:] = b - scale * s
        signs.append(s)
        scales.append(scale)
    inv_n = np.float32(1.0) / np.float32(ranks)
    out_sign, out_scale = [], []
    for j in range(ranks):
        total = np.zeros(c, dtype=np.float32)
        for r in range(ranks):
            total = total + signs[r][j * c:(j + 1) * c] * np.float32(scales[r] * inv_n)
        y = total + server_err[j]
        scale = rms(y)
        s = sign(y)
        server_err[j][:] = y - scale * s
        out_sign.append(s)
        out_scale.append(scale)
    full = np.concatenate([out_scale[j] * out_sign[j] for j in range(ranks)]).astype(np.float32)
    return full[:n]


def main():
    d = sys.argv[1]
    meta = {}
    with open(f"{d}/meta.txt") as f:
        for line in f:
            key, *values = line.split()
            meta[key] = [int(v) for v in values]
    ranks, calls, sizes = meta["ranks"][0], meta["calls"][0], meta["sizes"]
    total = sum(sizes)
    inputs = np.fromfile(f"{d}/inputs.f32", dtype=np.float32).reshape(calls, ranks, total)
    outputs = np.fromfile(f"{d}/outputs.f32", dtype=np.float32).reshape(calls, ranks, total)
    worker = [[np.zeros(padded(n, ranks), np.float32) for _ in range(ranks)] for n in sizes]
    server = [[np.zeros(padded(n, ranks) // ranks, np.float32) for _ in range(ranks)] for n in sizes]
    worst = 0.0
    for k in range(calls):
        at = 0
        for t, n in enumerate(sizes):
            ref = compressed_average([inputs[k, r, at:at + n] for r in range(ranks)], worker[t], server[t], ranks)
            for r in range(ranks):
                worst = max(worst, float(np.max(np.abs(outputs[k, r, at:at + n] - ref))))
            at += n
    print(f"[ measured ] ranks {ranks}, sizes {sizes}, {calls} calls: max |zero - numpy| = {worst:.3g}")
    return 0 if worst == 0.0 else 1


if __name__ == "__main__":
    sys.exit(main())
