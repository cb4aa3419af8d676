"""Causal attention in float64 NumPy against zero's CPU kernels (gpt_kernels_test.cpp writes them).

Usage: attention_reference.py DIR. DIR/cases.txt has one line per case, "NAME B T C NH"; each case
NAME has NAME.qkv, NAME.dout (inputs) and NAME.out, NAME.att, NAME.dqkv (the kernels' outputs), raw
little-endian f32. The reference: softmax(q k^T / sqrt(hs)) over keys 0..t for query t, out = att v,
and the backward by the chain rule. Prints each case's errors (max abs difference relative to the
reference's max abs) and exits 1 if any is over its bound, or att is not exactly 0 above the diagonal.
"""
import sys
from pathlib import Path

import numpy as np

# Bounds: f32 products and sums over at most T=130 keys of O(1) values; measured 1e-7 forward and
# 2e-7..6e-7 backward (tests/model/gpt_kernels_test.cpp prints the equivalent double-loop figures).
BOUND_ATT, BOUND_OUT, BOUND_DQKV = 2e-6, 2e-6, 1e-5


def reference(qkv, dout, B, T, C, NH):
    hs = C // NH
    x = qkv.reshape(B, T, 3, NH, hs).transpose(2, 0, 3, 1, 4)  # (3, B, NH, T, hs)
    q, k, v = x[0], x[1], x[2]
    scale = 1.0 / np.sqrt(hs)
    mask = np.tril(np.ones((T, T), dtype=bool))
    s = np.where(mask, q @ k.transpose(0, 1, 3, 2) * scale, -np.inf)
    a = np.exp(s - s.max(axis=-1, keepdims=True))
    a /= a.sum(axis=-1, keepdims=True)
    out = (a @ v).transpose(0, 2, 1, 3).reshape(B, T, C)
    d = dout.reshape(B, T, NH, hs).transpose(0, 2, 1, 3)
    da = d @ v.transpose(0, 1, 3, 2)
    dv = a.transpose(0, 1, 3, 2) @ d
    ds = a * (da - (a * da).sum(axis=-1, keepdims=True)) * scale
    dq, dk = ds @ k, ds.transpose(0, 1, 3, 2) @ q
    dqkv = np.stack([dq, dk, dv]).transpose(1, 3, 0, 2, 4).reshape(B, T, 3 * C)
    return a, out, dqkv


def rel(got, want):
    return np.abs(got - want).max() / max(np.abs(want).max(), 1e-30)


def main(folder):
    failed = False
    for line in (folder / "cases.txt").read_text().split("\n"):
        if not line.strip():
            continue
        name, *dims = line.split()
        B, T, C, NH = map(int, dims)
        load = lambda ext, shape: np.fromfile(folder / f"{name}.{ext}", dtype="<f4").astype(np.float64).reshape(shape)
        qkv, dout = load("qkv", (B, T, 3 * C)), load("dout", (B, T, C))
        att, out, dqkv = load("att", (B, NH, T, T)), load("out", (B, T, C)), load("dqkv", (B, T, 3 * C))
        a, ref_out, ref_dqkv = reference(qkv, dout, B, T, C, NH)
        errs = rel(att, a), rel(out, ref_out), rel(dqkv, ref_dqkv)
        upper_zero = not np.any(att[..., ~np.tril(np.ones((T, T), dtype=bool))])
        ok = errs[0] < BOUND_ATT and errs[1] < BOUND_OUT and errs[2] < BOUND_DQKV and upper_zero
        print(f"{name} B={B} T={T} C={C} NH={NH}: att {errs[0]:.3g} (< {BOUND_ATT}), out {errs[1]:.3g} (< {BOUND_OUT}), "
              f"dqkv {errs[2]:.3g} (< {BOUND_DQKV}), att zero above the diagonal: {upper_zero}"
              + ("" if ok else "  <-- FAILED"))
        failed = failed or not ok
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
