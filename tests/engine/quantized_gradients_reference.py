#!/usr/bin/env python3
"""An independent NumPy model of qgZ (src/engine/gradient_quantize.h, quantized_reduce_scatter.h):
the 4-bit block quantiser and the hierarchical all-to-all reduce-scatter, run on the inputs
zero's test wrote, compared with zero's outputs.

Usage: quantized_gradients_reference.py DIR
DIR/quantiser.txt: the run lengths n, one a line; DIR/quantiser_in.f32 (the runs end to end),
  DIR/quantiser_bytes.u8 (zero's quantised runs end to end), DIR/quantiser_out.f32 (zero's
  dequantised runs).
DIR/reduce.txt: one line per world, "N L k_0 k_1 ..."; DIR/reduce_in.f32: for each world and k, for
  each rank, its N*k inputs; DIR/reduce_out.f32: for each world and k, for each rank, its k outputs.
Exit status 0 when every byte and value equals the model's exactly (the same float32 operations
in the same order) and every dequantised element is within s/2 of its input; 1 otherwise.
"""
import math
import sys

import numpy as np

BLOCK = 64
LEVELS = 7


def quantize(x):
    """x: float32 run -> (scales float32, q int8)."""
    n = x.size
    blocks = -(-n // BLOCK)
    scales = np.zeros(blocks, dtype=np.float32)
    q = np.zeros(n, dtype=np.int8)
    for b in range(blocks):
        part = x[b * BLOCK:(b + 1) * BLOCK]
        if not np.all(np.isfinite(part)):
            scales[b] = np.float32(np.nan)
            continue
        s = np.float32(np.max(np.abs(part))) / np.float32(LEVELS)
        scales[b] = s
        if s > 0:
            q[b * BLOCK:(b + 1) * BLOCK] = np.clip(np.rint(part / s), -LEVELS, LEVELS).astype(np.int8)
    return scales, q


def to_bytes(scales, q):
    n = q.size
    nibbles = (q.astype(np.int16) & 0xF).astype(np.uint8)
    if n % 2:
        nibbles = np.append(nibbles, np.uint8(0))
    packed = nibbles[0::2] | (nibbles[1::2] << 4)
    return scales.tobytes() + packed.astype(np.uint8).tobytes()


def dequantize(scales, q):
    return q.astype(np.float32) * np.repeat(scales, BLOCK)[:q.size]


def roundtrip(x):
    return dequantize(*quantize(x))


def sum_in_order(runs):
    acc = runs[0].copy()
    for r in runs[1:]:
        acc = (acc + r).astype(np.float32)
    return acc


def reduce_scatter(inputs, n, per_node, k):
    """inputs[r]: rank r's N*k gradient; returns each rank's k: quantised, summed inside each node
    in local order, quantised again, summed across nodes in node order (ranks r = node*L + local)."""
    nodes = n // per_node
    slices = [[roundtrip(inputs[r][d * k:(d + 1) * k]) for d in range(n)] for r in range(n)]
    out = []
    for d in range(n):
        node_sums = []
        for m in range(nodes):
            local = [slices[m * per_node + i][d] for i in range(per_node)]
            node_sums.append(roundtrip(sum_in_order(local)))
        out.append(sum_in_order(node_sums))
    return out


def check_quantiser(d):
    sizes = [int(v) for v in open(f"{d}/quantiser.txt").read().split()]
    x_all = np.fromfile(f"{d}/quantiser_in.f32", dtype=np.float32)
    bytes_all = np.fromfile(f"{d}/quantiser_bytes.u8", dtype=np.uint8).tobytes()
    out_all = np.fromfile(f"{d}/quantiser_out.f32", dtype=np.float32)
    at = byte_at = 0
    ok = True
    worst = 0.0
    for n in sizes:
        x = x_all[at:at + n]
        scales, q = quantize(x)
        expected = to_bytes(scales, q)
        got = bytes_all[byte_at:byte_at + len(expected)]
        deq = dequantize(scales, q)
        finite = np.isfinite(np.repeat(scales, BLOCK)[:n])
        if got != expected:
            print(f"quantiser n={n}: the bytes differ from NumPy's"); ok = False
        if not np.array_equal(out_all[at:at + n], deq, equal_nan=True):
            print(f"quantiser n={n}: the dequantised values differ from NumPy's"); ok = False
        bound = np.repeat(scales, BLOCK)[:n] / 2
        err = np.abs(deq - x)
        if np.any(err[finite] > bound[finite]):
            print(f"quantiser n={n}: an element is further than s/2 from its input"); ok = False
        if np.any(finite):
            worst = max(worst, float(np.max(err[finite] / np.maximum(bound[finite], 1e-38))))
        if not np.all(np.isnan(deq[~finite])):
            print(f"quantiser n={n}: a block with Inf or NaN did not come back NaN"); ok = False
        at += n
        byte_at += len(expected)
    print(f"quantiser: {len(sizes)} runs, largest error {worst:.3f} of s/2")
    return ok and byte_at == len(bytes_all) and at == x_all.size


def check_reduce(d):
    inputs = np.fromfile(f"{d}/reduce_in.f32", dtype=np.float32)
    outputs = np.fromfile(f"{d}/reduce_out.f32", dtype=np.float32)
    at = out_at = 0
    ok = True
    for line in open(f"{d}/reduce.txt").read().splitlines():
        n, per_node, *ks = (int(v) for v in line.split())
        for k in ks:
            ins = [inputs[at + r * n * k:at + (r + 1) * n * k] for r in range(n)]
            expected = reduce_scatter(ins, n, per_node, k)
            exact = np.sum(np.stack(ins).astype(np.float64), axis=0)
            rel = 0.0
            for r in range(n):
                got = outputs[out_at + r * k:out_at + (r + 1) * k]
                if not np.array_equal(got, expected[r]):
                    print(f"reduce N={n} L={per_node} k={k} rank {r}: differs from NumPy's by {np.max(np.abs(got - expected[r]))}")
                    ok = False
                rel = max(rel, float(np.max(np.abs(got - exact[r * k:(r + 1) * k])) / max(np.max(np.abs(exact)), 1e-30)))
            print(f"reduce N={n} L={per_node} k={k}: worst error against the exact sum {rel:.3g} of its largest element")
            at += n * n * k
            out_at += n * k
    return ok and at == inputs.size and out_at == outputs.size


def main():
    d = sys.argv[1]
    ok = check_quantiser(d)
    ok = check_reduce(d) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
