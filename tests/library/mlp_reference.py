#!/usr/bin/env python3
"""mlp_reference.py DIR STEPS: examples/mlp's training, written again in NumPy from its initial
weights (DIR/initial.f32, saved by `mlp_classifier --save DIR`): the same data (the same counter
hash), the classifier's forward and backward with the head tied to the embedding's weight, the
gradient of the global batch's mean loss, and Adam (lr 0.03, betas 0.9 and 0.999, eps 1e-8, bias
correction, no weight decay). Exit 0 when DIR/final.f32, the engine's weights after STEPS steps,
matches the reference within the tolerance; prints the largest difference either way."""
import sys

import numpy as np

D, H, ROWS, SEED, LR = 8, 16, 64, 7, 0.03
M64 = (1 << 64) - 1


def splitmix64(z):
    z = (z + 0x9E3779B97F4A7C15) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def batch(step):
    x = np.empty((ROWS, D))
    for r in range(ROWS):
        for i in range(D):
            key = splitmix64(SEED ^ splitmix64(step ^ splitmix64(r * D + i)))
            x[r, i] = (key >> 40) / float(1 << 23) - 1.0
    return x, np.argmax(x, axis=1)


def split(flat):
    """The weights in the units' declaration order: embed.w, embed.b, hidden.w, hidden.b, head.b."""
    shapes = [(H, D), (H,), (H, H), (H,), (D,)]
    out, at = [], 0
    for s in shapes:
        n = int(np.prod(s))
        out.append(flat[at:at + n].reshape(s))
        at += n
    assert at == flat.size, f"{flat.size} weights, expected {at}"
    return out


def gradients(params, x, labels):
    w_in, b_in, w_h, b_h, b_out = params
    h1 = np.tanh(x @ w_in.T + b_in)
    h2 = np.tanh(h1 @ w_h.T + b_h)
    logits = h2 @ w_in + b_out  # the head: the embedding's weight, transposed
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    d = p.copy()
    d[np.arange(ROWS), labels] -= 1.0
    d /= ROWS
    dw_in = h2.T @ d  # the head's part of the tied weight's gradient
    dz2 = (d @ w_in.T) * (1 - h2 ** 2)
    dz1 = (dz2 @ w_h) * (1 - h1 ** 2)
    dw_in = dw_in + dz1.T @ x  # ... and the embedding's
    return [dw_in, dz1.sum(0), dz2.T @ h1, dz2.sum(0), d.sum(0)]


def main():
    folder, steps = sys.argv[1], int(sys.argv[2])
    params = [p.astype(np.float64) for p in split(np.fromfile(f"{folder}/initial.f32", dtype=np.float32))]
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    for t in range(1, steps + 1):
        x, labels = batch(t - 1)
        for p, g, mi, vi in zip(params, gradients(params, x, labels), m, v):
            mi[...] = 0.9 * mi + 0.1 * g
            vi[...] = 0.999 * vi + 0.001 * g * g
            p -= LR / (1 - 0.9 ** t) * mi / (np.sqrt(vi) / np.sqrt(1 - 0.999 ** t) + 1e-8)
    got = np.fromfile(f"{folder}/final.f32", dtype=np.float32).astype(np.float64)
    want = np.concatenate([p.ravel() for p in params])
    diff = np.abs(got - want).max()
    moved = np.abs(want - np.fromfile(f"{folder}/initial.f32", dtype=np.float32)).max()
    tolerance = 1e-5  # measured: 3.5e-7 (f32 engine against f64 NumPy, 60 steps)
    print(f"NumPy reference: largest difference {diff:.3g} over {got.size} weights (tolerance {tolerance}; "
          f"the weights moved by up to {moved:.3g})")
    return 0 if diff <= tolerance else 1


if __name__ == "__main__":
    sys.exit(main())
