#!/usr/bin/python3
"""llama_reference.py DIR: an independent NumPy reference of the LLaMA decoder (Hugging Face's
LlamaForCausalLM: RMSNorm, rotary embeddings in the rotate_half convention, grouped-query
attention with a causal mask, SwiGLU, tied or untied head), in float64, checked against what
zero computed in fp32 on the same weights and tokens.

DIR holds (written by llama_reference_test.cpp): shape.txt ("key value" lines), params.txt
("name dim0 [dim1]" lines, in zero's order), <name>.f32 (the weights), inputs.i32, targets.i32
(B, T), and zero's results: logits.f32 (B, T, V), loss.f32, grad.<name>.f32.

Checks: logits and loss within 1e-5 relative (max |zero - ref| / max |ref|); every tensor's
gradient against central finite differences of this reference's loss (float64, step 1e-6), on
every element of small tensors and a fixed sample of 48 elements of larger ones, within 2e-5 of
the tensor's largest gradient (measured: at most 1.3e-6 over the sweep). Prints the measured errors; exits 1 on a failure.
"""
import os
import sys

import numpy as np


def read_dir(d):
    shape = {}
    for line in open(os.path.join(d, "shape.txt")):
        k, v = line.split()
        shape[k] = float(v) if "." in v or "e" in v else int(v)
    params = {}
    order = []
    for line in open(os.path.join(d, "params.txt")):
        parts = line.split()
        name, dims = parts[0], [int(x) for x in parts[1:]]
        a = np.fromfile(os.path.join(d, name + ".f32"), dtype="<f4").astype(np.float64)
        params[name] = a.reshape(dims)
        order.append(name)
    B, T = shape["batch"], shape["max_position_embeddings"]
    inputs = np.fromfile(os.path.join(d, "inputs.i32"), dtype="<i4").reshape(B, T)
    targets = np.fromfile(os.path.join(d, "targets.i32"), dtype="<i4").reshape(B, T)
    return shape, params, order, inputs, targets


def rms_norm(x, w, eps):
    return w * (x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps))


def rotate_half(x):
    h = x.shape[-1] // 2
    return np.concatenate([-x[..., h:], x[..., :h]], axis=-1)


def rope(x, theta):  # x (B, heads, T, hd)
    T, hd = x.shape[2], x.shape[3]
    inv_freq = 1.0 / theta ** (np.arange(0, hd, 2, dtype=np.float64) / hd)
    freqs = np.outer(np.arange(T, dtype=np.float64), inv_freq)
    emb = np.concatenate([freqs, freqs], axis=-1)  # (T, hd)
    return x * np.cos(emb) + rotate_half(x) * np.sin(emb)


def forward(s, p, inputs, targets):
    B, T = inputs.shape
    C, NH, NKV, L = s["hidden_size"], s["num_attention_heads"], s["num_key_value_heads"], s["num_hidden_layers"]
    hd, eps, theta = C // NH, s["rms_norm_eps"], s["rope_theta"]
    x = p["model.embed_tokens.weight"][inputs]  # (B, T, C)
    mask = np.triu(np.full((T, T), -np.inf), 1)
    for l in range(L):
        a = f"model.layers.{l}."
        h = rms_norm(x, p[a + "input_layernorm.weight"], eps)
        q = (h @ p[a + "self_attn.q_proj.weight"].T).reshape(B, T, NH, hd).transpose(0, 2, 1, 3)
        k = (h @ p[a + "self_attn.k_proj.weight"].T).reshape(B, T, NKV, hd).transpose(0, 2, 1, 3)
        v = (h @ p[a + "self_attn.v_proj.weight"].T).reshape(B, T, NKV, hd).transpose(0, 2, 1, 3)
        q, k = rope(q, theta), rope(k, theta)
        k, v = np.repeat(k, NH // NKV, axis=1), np.repeat(v, NH // NKV, axis=1)  # repeat_kv
        att = q @ k.transpose(0, 1, 3, 2) / np.sqrt(hd) + mask
        att = np.exp(att - att.max(axis=-1, keepdims=True))
        att /= att.sum(axis=-1, keepdims=True)
        y = (att @ v).transpose(0, 2, 1, 3).reshape(B, T, C)
        x = x + y @ p[a + "self_attn.o_proj.weight"].T
        h = rms_norm(x, p[a + "post_attention_layernorm.weight"], eps)
        g, u = h @ p[a + "mlp.gate_proj.weight"].T, h @ p[a + "mlp.up_proj.weight"].T
        x = x + ((g / (1.0 + np.exp(-g))) * u) @ p[a + "mlp.down_proj.weight"].T
    x = rms_norm(x, p["model.norm.weight"], eps)
    head = p["model.embed_tokens.weight"] if s["tie_word_embeddings"] else p["lm_head.weight"]
    logits = x @ head.T
    z = logits - logits.max(axis=-1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
    loss = -np.take_along_axis(logp, targets[..., None], axis=-1).mean()
    return logits, loss


def rel_err(ours, ref):
    return float(np.max(np.abs(ours - ref)) / max(np.max(np.abs(ref)), 1e-30))


def main():
    d = sys.argv[1]
    s, p, order, inputs, targets = read_dir(d)
    logits, loss = forward(s, p, inputs, targets)
    z_logits = np.fromfile(os.path.join(d, "logits.f32"), dtype="<f4").reshape(logits.shape)
    z_loss = float(np.fromfile(os.path.join(d, "loss.f32"), dtype="<f4")[0])
    failures = []
    e = rel_err(z_logits, logits)
    print(f"logits: max rel err {e:.3e}")
    if not e <= 1e-5:
        failures.append(f"logits rel err {e:.3e} > 1e-5")
    e = abs(z_loss - loss) / abs(loss)
    print(f"loss: zero {z_loss:.8f} reference {loss:.8f} rel err {e:.3e}")
    if not e <= 1e-5:
        failures.append(f"loss rel err {e:.3e} > 1e-5")
    rng = np.random.default_rng(1)
    step = 1e-6
    worst = 0.0
    for name in order:
        w = p[name]
        grad = np.fromfile(os.path.join(d, "grad." + name + ".f32"), dtype="<f4").reshape(w.shape)
        flat = w.reshape(-1)
        idx = np.arange(flat.size) if flat.size <= 64 else rng.choice(flat.size, 48, replace=False)
        fd = np.empty(len(idx))
        for j, i in enumerate(idx):
            keep = flat[i]
            flat[i] = keep + step
            up = forward(s, p, inputs, targets)[1]
            flat[i] = keep - step
            down = forward(s, p, inputs, targets)[1]
            flat[i] = keep
            fd[j] = (up - down) / (2 * step)
        scale = max(np.max(np.abs(fd)), 1e-12)
        e = float(np.max(np.abs(grad.reshape(-1)[idx] - fd)) / scale)
        worst = max(worst, e)
        if not e <= 2e-5:
            failures.append(f"gradient of {name}: max err {e:.3e} of its largest element > 2e-5")
    print(f"gradients: {len(order)} tensors, worst max err / largest element {worst:.3e}")
    for f in failures:
        print("FAIL:", f)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
