#!/usr/bin/python3
"""llama_export_reference.py PATH MANIFEST DATA EVAL_JSON: reads the safetensors file or the
Hugging Face directory (its shards, by its index) that `zero ckpt export` wrote of a LLaMA
checkpoint (safetensors_read.py: the header by json, the tensors by numpy.frombuffer; no
torch), checks that it holds exactly LlamaForCausalLM's tensor names and
shapes for the manifest's model, and computes with the NumPy reference (tests/model/
llama_reference.py, float64) the loss on DATA's bytes in consecutive windows of
max_position_embeddings tokens; it must equal `zero eval`'s loss (EVAL_JSON) within 1e-5
relative. Exits 1 on a failure."""
import json
import os
import sys

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "model"))
sys.path.insert(0, here)
import llama_reference  # noqa: E402
import safetensors_read  # noqa: E402

path, manifest, data, eval_json = sys.argv[1:5]
weights = safetensors_read.read_weights(path)
header = {k: entry for k, (entry, _) in weights.items()}
s = json.load(open(manifest))["info"]["model"]
C, F, V, L = s["hidden_size"], s["intermediate_size"], s["vocab_size"], s["num_hidden_layers"]
KV = s["num_key_value_heads"] * C // s["num_attention_heads"]
want = {"model.embed_tokens.weight": [V, C], "model.norm.weight": [C]}
if not s["tie_word_embeddings"]:
    want["lm_head.weight"] = [V, C]
for l in range(L):
    a = f"model.layers.{l}."
    want.update({a + "input_layernorm.weight": [C], a + "post_attention_layernorm.weight": [C],
                 a + "self_attn.q_proj.weight": [C, C], a + "self_attn.k_proj.weight": [KV, C],
                 a + "self_attn.v_proj.weight": [KV, C], a + "self_attn.o_proj.weight": [C, C],
                 a + "mlp.gate_proj.weight": [F, C], a + "mlp.up_proj.weight": [F, C], a + "mlp.down_proj.weight": [C, F]})
got = {k: v["shape"] for k, v in header.items()}
if got != want:
    print("FAIL: tensors differ from LlamaForCausalLM's:", sorted(k for k in set(got) | set(want) if got.get(k) != want.get(k)))
    sys.exit(1)
p = {}
for k, (entry, x) in weights.items():
    assert entry["dtype"] == "F32", entry
    p[k] = x
T = s["max_position_embeddings"]
tokens = np.frombuffer(open(data, "rb").read(), dtype=np.uint8).astype(np.int64)
W = (len(tokens) - 1) // T
inputs = np.stack([tokens[w * T:w * T + T] for w in range(W)])
targets = np.stack([tokens[w * T + 1:w * T + T + 1] for w in range(W)])
_, loss = llama_reference.forward(s, p, inputs, targets)
zero = json.load(open(eval_json))["loss"]
err = abs(zero - loss) / abs(loss)
print(f"{len(header)} tensors; loss: zero eval {zero:.8f} reference {loss:.8f} rel err {err:.3e} ({W} windows of {T})")
sys.exit(0 if err <= 1e-5 else 1)
