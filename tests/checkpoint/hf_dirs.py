#!/usr/bin/python3
"""hf_dirs.py: writes small Hugging Face model directories as transformers' save_pretrained
does (config.json; model.safetensors, or model-0000K-of-0000N.safetensors shards with
model.safetensors.index.json), with random weights, and reads safetensors files back, in NumPy
alone (no torch, no transformers). Also an independent NumPy GPT-2 forward (GPT2LMHeadModel:
Conv1D weights (in, out), LayerNorm eps 1e-5, GELU's tanh form, tied head), float64.

A model is a dict of parameters in the file's dtype already rounded: every reference computes
with exactly the values the file holds."""
import json
import math
import os
import struct

import numpy as np

GPT2 = {"vocab_size": 256, "n_positions": 16, "n_embd": 32, "n_layer": 2, "n_head": 4}
LLAMA = {"vocab_size": 256, "max_position_embeddings": 16, "hidden_size": 32, "intermediate_size": 64,
         "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 2, "rms_norm_eps": 1e-5,
         "rope_theta": 10000.0, "tie_word_embeddings": False}


def round_to(a, dtype):
    """float32 array -> (the raw little-endian bytes in dtype, the values as float64)."""
    a = np.ascontiguousarray(a, dtype=np.float32)
    if dtype == "F32":
        return a.tobytes(), a.astype(np.float64)
    if dtype == "F16":
        h = a.astype("<f2")
        return h.tobytes(), h.astype(np.float64)
    u = a.view(np.uint32).astype(np.uint64)
    b = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype("<u2")  # round to nearest even
    return b.tobytes(), (b.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def gpt2_tensors(c, rng, prefix="transformer."):
    V, T, C, L = c["vocab_size"], c["n_positions"], c["n_embd"], c["n_layer"]
    w = lambda *s: rng.normal(0, 0.1, s)
    p = {prefix + "wte.weight": w(V, C), prefix + "wpe.weight": w(T, C)}
    for l in range(L):
        a = f"{prefix}h.{l}."
        p.update({a + "ln_1.weight": 1 + w(C), a + "ln_1.bias": w(C), a + "attn.c_attn.weight": w(C, 3 * C),
                  a + "attn.c_attn.bias": w(3 * C), a + "attn.c_proj.weight": w(C, C), a + "attn.c_proj.bias": w(C),
                  a + "ln_2.weight": 1 + w(C), a + "ln_2.bias": w(C), a + "mlp.c_fc.weight": w(C, 4 * C),
                  a + "mlp.c_fc.bias": w(4 * C), a + "mlp.c_proj.weight": w(4 * C, C), a + "mlp.c_proj.bias": w(C)})
    p.update({prefix + "ln_f.weight": 1 + w(C), prefix + "ln_f.bias": w(C)})
    return p


def llama_tensors(c, rng):
    V, C, F, L = c["vocab_size"], c["hidden_size"], c["intermediate_size"], c["num_hidden_layers"]
    KV = c["num_key_value_heads"] * C // c["num_attention_heads"]
    w = lambda *s: rng.normal(0, 0.1, s)
    p = {"model.embed_tokens.weight": w(V, C)}
    for l in range(L):
        a = f"model.layers.{l}."
        p.update({a + "input_layernorm.weight": 1 + w(C), a + "self_attn.q_proj.weight": w(C, C),
                  a + "self_attn.k_proj.weight": w(KV, C), a + "self_attn.v_proj.weight": w(KV, C),
                  a + "self_attn.o_proj.weight": w(C, C), a + "post_attention_layernorm.weight": 1 + w(C),
                  a + "mlp.gate_proj.weight": w(F, C), a + "mlp.up_proj.weight": w(F, C), a + "mlp.down_proj.weight": w(C, F)})
    p["model.norm.weight"] = 1 + w(C)
    if not c["tie_word_embeddings"]:
        p["lm_head.weight"] = w(V, C)
    return p


def safetensors_bytes(tensors):
    """{name: (dtype, shape, raw bytes)} -> a safetensors file's bytes (header padded to 8)."""
    header, at, blobs = {}, 0, []
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [at, at + len(raw)]}
        at += len(raw)
        blobs.append(raw)
    header["__metadata__"] = {"format": "pt"}
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


def write_dir(d, config, tensors, dtype, shards=1, extra=None):
    """Writes config.json and the weights; returns {name: float64 values as stored}."""
    os.makedirs(d, exist_ok=True)
    json.dump(config, open(os.path.join(d, "config.json"), "w"), indent=2)
    stored, entries = {}, {}
    for name, a in tensors.items():
        raw, values = round_to(a, dtype)
        entries[name] = (dtype, a.shape, raw)
        stored[name] = values.reshape(a.shape)
    entries.update(extra or {})
    names = list(entries)
    if shards == 1:
        open(os.path.join(d, "model.safetensors"), "wb").write(safetensors_bytes(entries))
        return stored
    weight_map, total = {}, 0
    for k in range(shards):
        part = names[k * len(names) // shards:(k + 1) * len(names) // shards]
        file = f"model-{k + 1:05d}-of-{shards:05d}.safetensors"
        open(os.path.join(d, file), "wb").write(safetensors_bytes({n: entries[n] for n in part}))
        for n in part:
            weight_map[n] = file
            total += len(entries[n][2])
    json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, open(os.path.join(d, "model.safetensors.index.json"), "w"), indent=2)
    return stored


def gpt2_config(c):
    return {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "n_ctx": c["n_positions"], "layer_norm_epsilon": 1e-5,
            "activation_function": "gelu_new", "resid_pdrop": 0.1, "embd_pdrop": 0.1, "attn_pdrop": 0.1, **c}


def llama_config(c):
    return {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_act": "silu", "rope_scaling": None,
            "attention_bias": False, "torch_dtype": "float32", **c}


def read_safetensors(path):
    """{name: (dtype, shape, raw bytes)} of a safetensors file."""
    blob = open(path, "rb").read()
    (n,) = struct.unpack_from("<Q", blob, 0)
    header = json.loads(blob[8:8 + n])
    header.pop("__metadata__", None)
    return {k: (v["dtype"], v["shape"], blob[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]]) for k, v in header.items()}


def layer_norm(x, w, b):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * w + b


def gpt2_loss(c, p, inputs, targets, prefix="transformer."):
    """GPT2LMHeadModel's mean cross-entropy, float64."""
    B, T = inputs.shape
    C, H = c["n_embd"], c["n_head"]
    hd = C // H
    g = lambda k: p[prefix + k]
    x = g("wte.weight")[inputs] + g("wpe.weight")[:T]
    mask = np.triu(np.full((T, T), -np.inf), 1)
    for l in range(c["n_layer"]):
        a = f"h.{l}."
        h = layer_norm(x, g(a + "ln_1.weight"), g(a + "ln_1.bias"))
        qkv = h @ g(a + "attn.c_attn.weight") + g(a + "attn.c_attn.bias")
        q, k, v = (qkv[..., i * C:(i + 1) * C].reshape(B, T, H, hd).transpose(0, 2, 1, 3) for i in range(3))
        att = q @ k.transpose(0, 1, 3, 2) / math.sqrt(hd) + mask
        att = np.exp(att - att.max(-1, keepdims=True))
        att /= att.sum(-1, keepdims=True)
        y = (att @ v).transpose(0, 2, 1, 3).reshape(B, T, C)
        x = x + y @ g(a + "attn.c_proj.weight") + g(a + "attn.c_proj.bias")
        h = layer_norm(x, g(a + "ln_2.weight"), g(a + "ln_2.bias"))
        f = h @ g(a + "mlp.c_fc.weight") + g(a + "mlp.c_fc.bias")
        f = 0.5 * f * (1 + np.tanh(math.sqrt(2 / math.pi) * (f + 0.044715 * f ** 3)))
        x = x + f @ g(a + "mlp.c_proj.weight") + g(a + "mlp.c_proj.bias")
    x = layer_norm(x, g("ln_f.weight"), g("ln_f.bias"))
    logits = x @ g("wte.weight").T
    logits -= logits.max(-1, keepdims=True)
    logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    return -np.take_along_axis(logp, targets[..., None], -1).mean()
