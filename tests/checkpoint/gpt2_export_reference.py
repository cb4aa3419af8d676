#!/usr/bin/python3
"""gpt2_export_reference.py OUTDIR TOKENS_BIN EVAL_JSON: an independent NumPy GPT2LMHeadModel (as
transformers' modeling_gpt2 computes it, in float64: learned positions, LayerNorm, Conv1D weights
stored (in, out), causal multi-head attention scaled by 1/sqrt(head size), the activation and
epsilon that OUTDIR/config.json names, the LM head tied to wte) built from the Hugging Face
directory `zero ckpt export` wrote, its weights read from its shards by its index
(safetensors_read.py). It computes the mean loss on TOKENS_BIN (llm.c's .bin: a 256-int32 header,
then uint16 tokens) in consecutive windows of n_ctx tokens, which must equal `zero eval`'s loss
(EVAL_JSON) on the same file within 1e-5 relative. Exits 1 on a failure."""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_read  # noqa: E402

out, tokens_bin, eval_json = sys.argv[1:4]
c = json.load(open(os.path.join(out, "config.json")))
assert c["architectures"] == ["GPT2LMHeadModel"] and c["model_type"] == "gpt2", c
assert c["activation_function"] == "gelu_new", c["activation_function"]
C, H, L, T, eps = c["n_embd"], c["n_head"], c["n_layer"], c["n_ctx"], c["layer_norm_epsilon"]
p = {name: x for name, (entry, x) in safetensors_read.read_weights(out).items()}
assert "lm_head.weight" not in p and c["tie_word_embeddings"], "GPT-2's head is wte, tied"


def layer_norm(x, w, b):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def gelu_new(x):
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))


def window_loss(ids, targets):
    n = len(ids)
    x = p["transformer.wte.weight"][ids] + p["transformer.wpe.weight"][:n]
    mask = np.triu(np.full((n, n), -np.inf), 1)
    hd = C // H
    for l in range(L):
        a = "transformer.h.%d." % l
        h = layer_norm(x, p[a + "ln_1.weight"], p[a + "ln_1.bias"])
        qkv = h @ p[a + "attn.c_attn.weight"] + p[a + "attn.c_attn.bias"]  # Conv1D: (in, out)
        q, k, v = (qkv[:, i * C:(i + 1) * C].reshape(n, H, hd).transpose(1, 0, 2) for i in range(3))
        att = q @ k.transpose(0, 2, 1) / np.sqrt(hd) + mask
        att = np.exp(att - att.max(axis=-1, keepdims=True))
        att /= att.sum(axis=-1, keepdims=True)
        y = (att @ v).transpose(1, 0, 2).reshape(n, C)
        x = x + y @ p[a + "attn.c_proj.weight"] + p[a + "attn.c_proj.bias"]
        h = layer_norm(x, p[a + "ln_2.weight"], p[a + "ln_2.bias"])
        x = x + gelu_new(h @ p[a + "mlp.c_fc.weight"] + p[a + "mlp.c_fc.bias"]) @ p[a + "mlp.c_proj.weight"] + p[a + "mlp.c_proj.bias"]
    logits = layer_norm(x, p["transformer.ln_f.weight"], p["transformer.ln_f.bias"]) @ p["transformer.wte.weight"].T
    m = logits.max(axis=-1, keepdims=True)
    logp = logits - m - np.log(np.exp(logits - m).sum(axis=-1, keepdims=True))
    return -logp[np.arange(n), targets].mean()


tokens = np.frombuffer(open(tokens_bin, "rb").read(), dtype="<u2", offset=256 * 4).astype(np.int64)
W = (len(tokens) - 1) // T
loss = np.mean([window_loss(tokens[w * T:w * T + T], tokens[w * T + 1:w * T + T + 1]) for w in range(W)])
zero = json.load(open(eval_json))["loss"]
err = abs(zero - loss) / abs(loss)
print(f"{len(p)} tensors; loss: zero eval {zero:.8f} reference {loss:.8f} rel err {err:.3e} ({W} windows of {T})")
sys.exit(0 if err <= 1e-5 else 1)
