#!/usr/bin/env bash
# init_from_bench.sh [DIR]: zero train --init-from's load speed beside the disk's read speed, in the
# same run. Writes a LLaMA-shaped Hugging Face directory (random bf16 weights, 2 shards with an
# index; ~1.0B parameters: V=32000 C=2048 F=5632 H=16 KV=4, LAYERS=19 layers, untied), then:
#  - evicts the files from the page cache (posix_fadvise DONTNEED, no root needed; also
#    drop_caches where allowed) and runs one step of `zero train --init-from` on 2 MPI ranks at
#    stage 3: each rank reads its half of the weights; the bytes and rank 0's load time are
#    printed in the summary;
#  - evicts again and reads the same files with dd (16 MiB blocks) to /dev/null: the disk's speed.
# Memory: stage 3 holds 16 bytes per parameter over the ranks (~16 GiB at 1B); LAYERS=4 (~0.3B)
# fits a small machine. KEEP=1 keeps DIR.
set -euo pipefail
zero=${ZERO:-build/zero}
dir=${1:-/tmp/zero_init_from_bench}
layers=${LAYERS:-19}
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$dir"; mkdir -p "$dir/hf"
/usr/bin/python3 - "$dir/hf" "$layers" <<'PY'
import json, os, struct, sys
import numpy as np
d, L = sys.argv[1], int(sys.argv[2])
c = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "vocab_size": 32000, "hidden_size": 2048,
     "intermediate_size": 5632, "num_attention_heads": 16, "num_key_value_heads": 4, "num_hidden_layers": L,
     "max_position_embeddings": 64, "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "tie_word_embeddings": False,
     "hidden_act": "silu", "torch_dtype": "bfloat16"}
json.dump(c, open(os.path.join(d, "config.json"), "w"), indent=2)
V, C, F, KV = 32000, 2048, 5632, 4 * 2048 // 16
shapes = {"model.embed_tokens.weight": (V, C)}
for l in range(L):
    a = f"model.layers.{l}."
    shapes.update({a + "input_layernorm.weight": (C,), a + "self_attn.q_proj.weight": (C, C), a + "self_attn.k_proj.weight": (KV, C),
                   a + "self_attn.v_proj.weight": (KV, C), a + "self_attn.o_proj.weight": (C, C),
                   a + "post_attention_layernorm.weight": (C,), a + "mlp.gate_proj.weight": (F, C),
                   a + "mlp.up_proj.weight": (F, C), a + "mlp.down_proj.weight": (C, F)})
shapes.update({"model.norm.weight": (C,), "lm_head.weight": (V, C)})
names = list(shapes)
rng = np.random.default_rng(0)
weight_map, total = {}, 0
for k, part in enumerate([names[:len(names) // 2], names[len(names) // 2:]]):
    file = f"model-{k + 1:05d}-of-00002.safetensors"
    header, at = {}, 0
    for n in part:
        size = int(np.prod(shapes[n])) * 2
        header[n] = {"dtype": "BF16", "shape": list(shapes[n]), "data_offsets": [at, at + size]}
        at += size
        weight_map[n] = file
    header["__metadata__"] = {"format": "pt"}
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(os.path.join(d, file), "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for n in part:
            numel = int(np.prod(shapes[n]))
            if len(shapes[n]) == 1:
                f.write(np.full(numel, 0x3F80, "<u2").tobytes())  # norms: 1.0
            else:  # bf16 of magnitude in [2^-7, 2^-6), random sign and mantissa: finite, cheap to make
                bits = rng.integers(0, 1 << 8, numel, dtype=np.uint16)
                f.write(((bits & 0x80) << 8 | 0x3C00 | (bits & 0x7F)).astype("<u2").tobytes())
    total += at
json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, open(os.path.join(d, "model.safetensors.index.json"), "w"))
print(f"wrote {d}: {total / 1e9:.2f} GB of bf16 weights, {total // 2 / 1e9:.2f}B parameters, 2 shards")
PY
evict() {
  sync
  /usr/bin/python3 -c 'import os, sys
for p in sys.argv[1:]:
    fd = os.open(p, os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED); os.close(fd)' "$dir"/hf/*.safetensors
  echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || true
}
head -c 100000 /usr/share/common-licenses/GPL-3 >"$dir/data.txt"
evict
"$zero" train --init-from "$dir/hf" --ranks 2 --stage 3 --steps 1 --sample 0 --data "$dir/data.txt" \
  --set train_micro_batch_size_per_gpu=1 --set data.val_fraction=0 2>&1 | tee "$dir/train.txt" | grep -E "^zero train|^init-from|^summary"
line=$(grep -E "^init-from .*bytes read per rank" "$dir/train.txt")
total=$(sed -E 's/.*total ([0-9]+).*/\1/' <<<"$line")
ms=$(sed -E 's/.*loaded in ([0-9.]+) ms.*/\1/' <<<"$line")
evict
start=$(date +%s.%N)
for f in "$dir"/hf/*.safetensors; do dd if="$f" of=/dev/null bs=16M status=none; done
end=$(date +%s.%N)
disk=$(du -cb "$dir"/hf/*.safetensors | tail -1 | cut -f1)
/usr/bin/python3 -c "import sys
t, ms, disk, secs = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
print(f'--init-from on 2 ranks, stage 3: {t / 1e9:.2f} GB read in {ms / 1e3:.2f} s (rank 0), {t / ms / 1e6:.2f} GB/s')
print(f'dd of the same files, page cache evicted: {disk / 1e9:.2f} GB in {secs:.2f} s, {disk / secs / 1e9:.2f} GB/s')" "$total" "$ms" "$disk" "$(echo "$end - $start" | bc)"
[ -n "${KEEP-}" ] || rm -rf "$dir"
