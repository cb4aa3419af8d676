#!/usr/bin/python3
"""PyTorch's own CPU data-parallel training of the GPT that `zero bench train` times.

The comparison for `zero bench train` (see bench/compare_train.sh, which runs both): the same
GPT-2-style model (byte vocabulary V=256, learned position embeddings, pre-LayerNorm blocks of
causal multi-head attention and a 4C GELU-tanh MLP, final LayerNorm, LM head tied to the token
embedding), fp32, AdamW (betas 0.9/0.95, eps 1e-8, weight decay 0.1 on matrices and embeddings),
the same micro-batch and sequence length per rank, synthetic uniform byte tokens, trained with
DistributedDataParallel over gloo on 2 processes (torch.multiprocessing), each limited to one
intra-op and one inter-op thread, as each zero rank runs one OpenMP/OpenBLAS thread.

--zero-redundancy-optimizer: the same, with AdamW wrapped in torch's ZeroRedundancyOptimizer (ZeRO
stage 1: each rank keeps the AdamW state of its share of the parameter tensors, steps them, and
broadcasts them to the others), the comparison for zero stage 1. It is not FSDP: torch 1.13's
FullyShardedDataParallel cannot run on CPU over gloo (bench/README.md says why;
bench/pytorch_fsdp_probe.py re-checks it).

Timing, as zero does it: warm-up steps, then a barrier, the timed steps, a barrier; tokens/s is
(timed steps x micro-batch x T x ranks) / elapsed seconds.

One-time setup (Debian 12; the project's setup.sh does not install torch):
    apt-get update && apt-get install -y python3-torch     # PyTorch 1.13.1 (+dfsg)
Run with Debian's interpreter (/usr/bin/python3), which is where python3-torch installs.
"""
import argparse
import ctypes
import json
import math
import os
import sys
import time

# Before torch loads: one OpenMP / BLAS thread per process (2 processes on a 2-core machine).
for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(var, "1")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.distributed.optim import ZeroRedundancyOptimizer  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

# The shapes of src/cli/bench_train.cpp: name -> (C, L, H); V = 256, T = --seq-len.
MODELS = {"10m": (384, 6, 6), "50m": (768, 7, 12)}
VOCAB = 256


class Block(nn.Module):
    def __init__(self, C, H, T):
        super().__init__()
        self.H = H
        self.ln1 = nn.LayerNorm(C)
        self.qkv = nn.Linear(C, 3 * C)
        self.attn_proj = nn.Linear(C, C)
        self.ln2 = nn.LayerNorm(C)
        self.fc = nn.Linear(C, 4 * C)
        self.mlp_proj = nn.Linear(4 * C, C)
        # A plain attribute, not a buffer: DDP would broadcast a buffer, and gloo has no bool.
        self.mask = torch.tril(torch.ones(T, T, dtype=torch.bool)).view(1, 1, T, T)

    def attention(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        q = q.view(B, T, self.H, C // self.H).transpose(1, 2)  # (B, H, T, hs)
        k = k.view(B, T, self.H, C // self.H).transpose(1, 2)
        v = v.view(B, T, self.H, C // self.H).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))  # torch 1.13: no fused SDPA
        att = att.masked_fill(~self.mask[:, :, :T, :T], float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.attn_proj(y)

    def forward(self, x):
        x = x + self.attention(self.ln1(x))
        return x + self.mlp_proj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class Gpt(nn.Module):
    def __init__(self, V, T, C, L, H):
        super().__init__()
        self.wte = nn.Embedding(V, C)
        self.wpe = nn.Embedding(T, C)
        self.blocks = nn.ModuleList(Block(C, H, T) for _ in range(L))
        self.lnf = nn.LayerNorm(C)
        for name, p in self.named_parameters():  # GPT-2 initialisation, as zero's GptShape
            if p.dim() == 2:
                std = 0.02 / math.sqrt(2 * L) if name.endswith("proj.weight") else 0.02
                nn.init.normal_(p, 0.0, std)
            elif name.endswith("bias"):
                nn.init.zeros_(p)

    def forward(self, idx, targets):
        T = idx.size(1)
        x = self.wte(idx) + self.wpe(torch.arange(T, device=idx.device))
        for block in self.blocks:
            x = block(x)
        logits = F.linear(self.lnf(x), self.wte.weight)  # LM head tied to the token embedding
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1))


def optimizer_for(model, args):
    decay = [p for p in model.parameters() if p.dim() == 2]  # matrices and embeddings
    no_decay = [p for p in model.parameters() if p.dim() < 2]  # biases, LayerNorm
    groups = [{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}]
    hyper = {"lr": 3e-4, "betas": (0.9, 0.95), "eps": 1e-8, "foreach": args.foreach}
    if args.zero_redundancy_optimizer:
        # Whole tensors per rank (torch's sorted-greedy partition); the bucket view sends each rank's
        # stepped parameters in one broadcast, not one per tensor.
        return ZeroRedundancyOptimizer(groups, optimizer_class=torch.optim.AdamW,
                                       parameters_as_bucket_view=True, **hyper)
    return torch.optim.AdamW(groups, **hyper)


def tool_name(args):
    return "pytorch ddp + ZeroRedundancyOptimizer" if args.zero_redundancy_optimizer else "pytorch ddp"


def run_model(name, args, rank, world):
    C, L, H = MODELS[name]
    B, T = args.micro_batch, args.seq_len
    torch.manual_seed(1234)  # the same initial weights on every rank (DDP also broadcasts them)
    model = Gpt(VOCAB, T, C, L, H)
    params = sum(p.numel() for p in model.parameters())
    ddp = DDP(model, gradient_as_bucket_view=True)
    opt = optimizer_for(ddp.module, args)
    gen = torch.Generator().manual_seed(1000 + rank)
    losses, step_ms = [], []
    for s in range(args.warmup + args.steps):
        if s == args.warmup:
            dist.barrier()
            start = time.perf_counter()
        t0 = time.perf_counter()
        tokens = torch.randint(0, VOCAB, (B, T + 1), generator=gen)
        loss = ddp(tokens[:, :-1], tokens[:, 1:])
        opt.zero_grad(set_to_none=False)  # zero's engine also keeps (and zeroes) its gradients
        loss.backward()  # DDP all-reduces gradient buckets over gloo as backward produces them
        opt.step()  # ZeroRedundancyOptimizer: steps this rank's share, then broadcasts it
        losses.append(loss.item())
        if s >= args.warmup:
            step_ms.append((time.perf_counter() - t0) * 1e3)
    dist.barrier()
    seconds = time.perf_counter() - start
    worst = torch.tensor(step_ms, dtype=torch.float64)
    dist.all_reduce(worst, op=dist.ReduceOp.MAX)  # per step, the slowest rank
    return {"model": name, "parameters": params,
            "shape": {"vocab_size": VOCAB, "n_ctx": T, "n_embd": C, "n_layer": L, "n_head": H},
            "seconds": seconds, "step_ms": worst.tolist(),
            "tokens_per_second": args.steps * B * T * world / seconds,
            "first_loss": losses[0], "last_loss": losses[-1], "losses": losses}


def openblas_core():
    """The kernel set OpenBLAS picked (Haswell, SkylakeX, ...): torch's CPU matrix products run there."""
    try:
        lib = ctypes.CDLL("libopenblas.so.0")
        lib.openblas_get_corename.restype = ctypes.c_char_p
        return lib.openblas_get_corename().decode()
    except (OSError, AttributeError):
        return "unknown"


def worker(rank, world, args, port):
    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    if rank == 0:
        print(f"{tool_name(args)}: torch {torch.__version__}, {world} ranks (gloo), {torch.get_num_threads()} intra-op / "
              f"{torch.get_num_interop_threads()} inter-op thread per rank, OpenBLAS {openblas_core()}, micro-batch {args.micro_batch} x "
              f"T={args.seq_len} per rank, AdamW fp32 (foreach={args.foreach}), synthetic tokens; "
              f"{args.warmup} warm-up + {args.steps} timed steps", flush=True)
    results = []
    for name in (MODELS if args.model == "all" else [args.model]):
        r = run_model(name, args, rank, world)
        if rank == 0:
            C, L, H = MODELS[name]
            print(f"{name:<4} V={VOCAB} T={args.seq_len} C={C} L={L} H={H} ({r['parameters'] / 1e6:.1f}M parameters): "
                  f"{r['tokens_per_second']:9.0f} tokens/s | {r['seconds'] * 1e3 / args.steps:.0f} ms/step "
                  f"(best {min(r['step_ms']):.0f}) | loss {r['first_loss']:.3f} -> {r['last_loss']:.3f}", flush=True)
        results.append(r)
    if rank == 0 and args.json:
        doc = {"tool": tool_name(args), "torch": torch.__version__, "backend": "gloo", "ranks": world,
               "threads_per_rank": torch.get_num_threads(), "openblas_core": openblas_core(), "micro_batch": args.micro_batch, "seq_len": args.seq_len,
               "warmup": args.warmup, "steps": args.steps, "foreach": args.foreach, "results": results}
        with open(args.json + ".partial", "w") as f:
            json.dump(doc, f, indent=2)
        os.replace(args.json + ".partial", args.json)
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", choices=["10m", "50m", "all"], default="all")
    p.add_argument("--micro-batch", type=int, default=4, help="sequences per rank per step")
    p.add_argument("--seq-len", type=int, default=256)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--port", type=int, default=29517)
    p.add_argument("--foreach", action=argparse.BooleanOptionalAction, default=True,
                   help="AdamW's multi-tensor (foreach) implementation, PyTorch's faster one")
    p.add_argument("--zero-redundancy-optimizer", action="store_true",
                   help="shard AdamW's state over the ranks with torch's ZeroRedundancyOptimizer (ZeRO stage 1)")
    p.add_argument("--json", default="")
    args = p.parse_args()
    mp.spawn(worker, args=(args.ranks, args, args.port), nprocs=args.ranks, join=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
