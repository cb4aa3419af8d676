"""safetensors_read.py: an independent reader (json, struct and NumPy; no torch, no transformers)
of safetensors files and of Hugging Face model directories as from_pretrained finds their weights:
model.safetensors.index.json's weight_map when it is there, else model.safetensors."""
import json
import os
import struct

import numpy as np


def read_file(path):
    """(header, metadata, data): the tensors' header entries in file order, the __metadata__, and
    the bytes after the header."""
    blob = open(path, "rb").read()
    (n,) = struct.unpack_from("<Q", blob, 0)
    header = json.loads(blob[8:8 + n])
    meta = header.pop("__metadata__", None)
    ordered = dict(sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]))
    return ordered, meta, blob[8 + n:]


def raw(entry, data):
    b, e = entry["data_offsets"]
    return data[b:e]


def as_float64(entry, data):
    """A tensor's values (F32 or BF16) as float64, in its shape."""
    bytes_ = raw(entry, data)
    if entry["dtype"] == "F32":
        x = np.frombuffer(bytes_, dtype="<f4")
    elif entry["dtype"] == "BF16":
        x = (np.frombuffer(bytes_, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
    else:
        raise ValueError("dtype %s" % entry["dtype"])
    return x.astype(np.float64).reshape(entry["shape"])


def shard_files(path):
    """The weight files of a model directory (or [path] for one file), in from_pretrained's order."""
    if not os.path.isdir(path):
        return [path]
    index = os.path.join(path, "model.safetensors.index.json")
    if os.path.exists(index):
        names = json.load(open(index))["weight_map"].values()
        return [os.path.join(path, f) for f in sorted(set(names))]
    return [os.path.join(path, "model.safetensors")]


def read_weights(path):
    """{name: (entry, float64 array)} of a safetensors file or a model directory."""
    out = {}
    for f in shard_files(path):
        header, _, data = read_file(f)
        for name, entry in header.items():
            assert name not in out, "%s is in two shards" % name
            out[name] = (entry, as_float64(entry, data))
    return out
