#!/usr/bin/env python3
"""An independent NumPy model of ZenFlow's selection and update rule, written from DeepSpeed's
runtime/zenflow/ (engine.py, zenflow_stage_1_and_2.py, ops/adam/zenflow_torch_adam.py), run on
the gradients zero's test fed one rank's optimizer, compared with the parameters it produced.

Usage: zenflow_reference.py DIR
DIR/meta.json: the matrix (rows, cols), the rank's slice of the unit [begin, begin + slice),
  the world size, Adam's settings and the zenflow keys;
DIR/initial.f32: the slice's parameters before step 0;
DIR/grads.f32: [step][slice] the summed (not yet averaged) gradient of the slice;
DIR/params.f32: [step][slice] zero's parameters after each step, then after synchronize().

The model, per step t (DeepSpeed's micro_step):
- the unit is a weight w (rows, cols), decayed, then a bias b (cols), not decayed;
- warm-up (t < full_warm_up_rounds): every step is an update boundary;
- selection boundary: t >= W and (t == W or (S and t % S == 0)) -- the masters take the device's
  parameters (sync_fp32_param_from_gpu, skipped at t == 0), the selective optimizer's moments
  are zeroed (its step count is kept), and the top int(topk_ratio * cols) columns by sum |g| over
  the whole rows of w in the rank's slice are selected, in those rows (DeepSpeed selects among the
  columns wholly in a rank's partition; zero's layout keeps rows together, so a row the slice
  cuts is left to the CPU, as DeepSpeed leaves a column its partition cuts);
- t >= W: the selected columns of w and all of b get the selective AdamW step with g (at once,
  or at an update boundary after the CPU's update has been applied, restored from temp_copy_param);
- update boundary: t < W, or (t + 1 - W) % U == 0, or (S and (t + 1) % S == 0): the CPU's AdamW at
  step t + 1 on the accumulated gradient (DeepSpeed scales the loss by 1/update_interval, its
  gradient accumulation; zero takes the mean over the steps accumulated, which Adam sees only
  through eps); its masters reach the device parameters, the selected ones restored after;
- overlap_step: the update submitted at one boundary is applied at the next (DeepSpeed's
  wait_last_update_and_copy before the next submit; the first after the warm-up has nothing to
  wait for). DeepSpeed's sync of the masters at the next selection would race with the update in
  flight, so here (as zero does) the masters take the device's parameters at each update, once
  the last update is applied and the step's selective update made, before the next is submitted.
- gradient_clipping C > 0, as DeepSpeed clips ZenFlow: in the warm-up, the step's gradient by
  min(1, C / (|g| + 1e-6)) (plain offload); at an update boundary after it, the CPU's mean
  gradient by min(1, C / (|mean| + 1e-6)) (unscale_and_clip_grads on the summed gradient); the
  selective step's gradient is never clipped. The norms here are the slice's own (the test's
  rank sums its norm alone).
Exit status 0 when every step's parameters agree within the tolerance (zero's Adam fuses
multiply-adds; NumPy rounds each operation), 1 otherwise.
"""
import json
import sys

import numpy as np

F = np.float32


def adamw(p, g, m, v, step, lr, b1, b2, eps, decay_factor):
    """torch.optim.AdamW's step (DeepSpeed's CPU Adam and ZenFlowSelectiveAdamW), float32."""
    bc1 = 1.0 - b1 ** step
    bc2 = 1.0 - b2 ** step
    p = p * decay_factor
    m[:] = F(b1) * m + F(1.0 - b1) * g
    v[:] = F(b2) * v + (F(1.0 - b2) * g) * g
    denom = np.sqrt(v) * F(1.0 / np.sqrt(bc2)) + F(eps)
    return (p - F(lr / bc1) * (m / denom)).astype(F)


def main(d):
    meta = json.load(open(f"{d}/meta.json"))
    rows, cols, begin, n = meta["rows"], meta["cols"], meta["begin"], meta["slice"]
    T, world = meta["steps"], meta["world"]
    W, U, S = meta["full_warm_up_rounds"], meta["update_interval"], meta["select_interval"]
    overlap, ratio = meta["overlap_step"], meta["topk_ratio"]
    clip = meta.get("gradient_clipping", 0.0)
    lr, b1, b2, eps, wd = meta["lr"], meta["beta1"], meta["beta2"], meta["eps"], meta["weight_decay"]
    grads = np.fromfile(f"{d}/grads.f32", dtype=F).reshape(T, n)
    got = np.fromfile(f"{d}/params.f32", dtype=F).reshape(T + 1, n)

    e = begin + np.arange(n)                      # each slice element's index in the unit
    in_w = e < rows * cols
    in_b = (e >= rows * cols) & (e < rows * cols + cols)
    row = e // cols
    whole = in_w & (row * cols >= begin) & ((row + 1) * cols <= begin + n)   # rows wholly in the slice
    col = np.where(in_w, e % cols, -1)
    decay = np.where(in_w, F(1.0 - lr * wd), F(1.0)).astype(F)
    k = int(ratio * cols)

    p_dev = np.fromfile(f"{d}/initial.f32", dtype=F).copy()  # the device's parameters
    fp32 = p_dev.copy()                                        # the CPU's masters
    m_cpu, v_cpu = np.zeros(n, F), np.zeros(n, F)
    sel_m, sel_v = np.zeros(n, F), np.zeros(n, F)              # the selective optimizer's state, by element
    sel_step = 0
    selected = np.zeros(n, bool)
    acc, count = np.zeros(n, F), 0
    pending = None            # overlap: the masters an update produced, not yet applied
    first_after_warm_up = True
    bad = 0
    largest = 0.0

    def select_boundary(t):
        return t >= W and (t == W or (S and t % S == 0))

    def update_boundary(t):
        return t < W or (t + 1 - W) % U == 0 or (S and (t + 1) % S == 0)

    def selective_step(g):
        nonlocal sel_step
        sel_step += 1
        idx = selected | in_b
        mm, vv = sel_m[idx].copy(), sel_v[idx].copy()
        p_dev[idx] = adamw(p_dev[idx], g[idx], mm, vv, sel_step, lr, b1, b2, eps, decay[idx])
        sel_m[idx], sel_v[idx] = mm, vv

    def cpu_update(t, g_mean):
        return adamw(fp32.copy(), g_mean, m_cpu, v_cpu, t + 1, lr, b1, b2, eps, decay)

    def clipped(x):
        """x scaled by min(1, clip / (its L2 norm + 1e-6)), the norm summed in float64."""
        if clip <= 0:
            return x
        coef = clip / (np.sqrt(np.sum(x.astype(np.float64) ** 2)) + 1e-6)
        return (x * F(coef)).astype(F) if coef < 1 else x

    def apply(masters):
        keep = selected | in_b
        temp = p_dev[keep].copy()          # temp_copy_param
        p_dev[:] = np.where(in_w | in_b, masters, p_dev)
        p_dev[keep] = temp

    for t in range(T):
        g = (grads[t] / F(world)).astype(F)
        if t < W:
            g = clipped(g)
        if select_boundary(t):
            if t != 0 and not overlap:
                fp32[:] = p_dev                # sync_fp32_param_from_gpu
            sel_m[:] = 0
            sel_v[:] = 0
            sums = np.zeros(cols)
            np.add.at(sums, col[whole], np.abs(g[whole].astype(np.float64)))
            order = sorted(range(cols), key=lambda c: (-sums[c], c))[:k]
            selected = whole & np.isin(col, order)
        boundary = update_boundary(t)
        if t >= W and not boundary:
            selective_step(g)
        acc = g.copy() if count == 0 else (acc + g).astype(F)
        count += 1
        if boundary:
            mean = (acc / F(count)).astype(F) if count > 1 else acc
            if t >= W:
                mean = clipped(mean)
            count = 0
            if not overlap or t < W:
                fp32[:] = cpu_update(t, mean)
                if t < W:
                    p_dev[in_w | in_b] = fp32[in_w | in_b]
                else:
                    apply(fp32)
                if t >= W:
                    selective_step(g)
            else:
                if not first_after_warm_up:
                    fp32[:] = pending
                    apply(fp32)
                first_after_warm_up = False
                selective_step(g)
                fp32[in_w | in_b] = p_dev[in_w | in_b]   # the masters take the device's parameters
                pending = cpu_update(t, mean)
        diff = np.abs(got[t] - p_dev).max()
        largest = max(largest, diff)
        if not diff <= 2e-6:
            print(f"step {t}: zero's parameters differ from the reference by {diff:.3g}")
            bad += 1
    if pending is not None:               # synchronize(): the update in flight is applied
        fp32[:] = pending
        apply(fp32)
    diff = np.abs(got[T] - p_dev).max()
    if not diff <= 2e-6:
        print(f"after synchronize: zero's parameters differ from the reference by {diff:.3g}")
        bad += 1
    moved = np.abs(got[T] - np.fromfile(f"{d}/initial.f32", dtype=F)).max()
    print(f"{T} steps, the slice at {begin}: largest difference {max(largest, diff):.3g}; parameters moved by up to {moved:.3g}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
