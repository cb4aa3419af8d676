#!/usr/bin/python3
"""Can this PyTorch's FSDP train bench/pytorch_ddp_gpt.py's GPT on CPU over gloo? Prints why not.

bench/compare_train.sh has no FSDP beside zero stage 3 because Debian 12's torch 1.13.1 cannot run
it on CPU (bench/README.md, "Why not FSDP"). This re-checks that in a few seconds, on a tiny model
(V=256 T=32 C=64 L=2 H=2, 2 processes): FSDP's import, then its constructor, forward and backward
in each documented variant (full shard, each Block its own unit), then the two gloo collectives
that full sharding calls. Each failure is printed with the torch source line it came from.
On torch 1.13 with Python 3.11 the import fails on a dataclass in torch's sharded-tensor metadata;
to see what lies behind it, the probe then loads that one module with the line fixed, in memory
only (and says so): a probe's workaround, never used to time anything.
Exit status: 0 if FSDP trains here without the workaround, 2 if it does not.
"""
import functools
import importlib.abc
import importlib.machinery
import os
import sys
import traceback
import warnings

os.environ.setdefault("OMP_NUM_THREADS", "1")
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pytorch_ddp_gpt as gpt  # noqa: E402

METADATA = "torch.distributed._shard.sharded_tensor.metadata"
PORT = 29531


class MetadataFix(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Loads METADATA with `field(default=TensorProperties())` (refused by Python 3.11) as a factory."""

    def find_spec(self, name, path, target=None):
        if name != METADATA:
            return None
        self.origin = importlib.machinery.PathFinder.find_spec(name, path).origin
        return importlib.machinery.ModuleSpec(name, self, origin=self.origin)

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        with open(self.origin) as f:
            src = f.read().replace("field(default=TensorProperties())", "field(default_factory=TensorProperties)")
        module.__file__ = self.origin
        exec(compile(src, self.origin, "exec"), module.__dict__)


def where(e):
    """Where in torch it was raised, and from which line of FSDP when that is deeper in torch."""
    frames = [f for f in traceback.extract_tb(e.__traceback__) if "/torch/" in f.filename]
    if not frames:
        return "at the call"

    def short(f):
        return f"{f.filename[f.filename.rfind('/torch/') + 1:]}:{f.lineno}"
    fsdp = [f for f in frames if "/fsdp/" in f.filename]
    if fsdp and fsdp[-1] is not frames[-1]:
        return f"{short(frames[-1])}, called from {short(fsdp[-1])}"
    return short(frames[-1])


def failure(e):
    return f"{type(e).__name__}: {e} [{where(e)}]"


def import_fsdp(say):
    """(fsdp module, wrap module, patched?): FSDP's import, with the metadata fix only if it needs it."""
    try:
        import torch.distributed.fsdp as fsdp
        patched = False
    except Exception as e:  # noqa: BLE001 - the probe reports whatever the import raises
        say(f"import torch.distributed.fsdp: {failure(e)}")
        for name in [m for m in sys.modules if m.startswith("torch.distributed._shard") or m.startswith("torch.distributed.fsdp")]:
            del sys.modules[name]
        sys.meta_path.insert(0, MetadataFix())
        import torch.distributed.fsdp as fsdp
        patched = True
        say(f"  (going on with {METADATA} loaded with default_factory, in memory only)")
    import torch.distributed.fsdp.wrap as wrap
    return fsdp, wrap, patched


def variants(fsdp):
    shard = {"sharding_strategy": fsdp.ShardingStrategy.FULL_SHARD}
    return {"default": shard,
            "device_id=cpu": {**shard, "device_id": torch.device("cpu")},
            "sync_module_states": {**shard, "sync_module_states": True},
            "use_orig_params": {**shard, "use_orig_params": True},
            "CPUOffload(offload_params)": {**shard, "cpu_offload": fsdp.CPUOffload(offload_params=True)},
            "NO_SHARD": {"sharding_strategy": fsdp.ShardingStrategy.NO_SHARD}}  # not ZeRO-3: is it the device?


def try_variant(fsdp, wrap, kwargs):
    """'trains' or the first failure of one FSDP training step on the tiny GPT."""
    torch.manual_seed(1234)
    policy = functools.partial(wrap.transformer_auto_wrap_policy, transformer_layer_cls={gpt.Block})
    try:
        model = fsdp.FullyShardedDataParallel(gpt.Gpt(gpt.VOCAB, 32, 64, 2, 2), auto_wrap_policy=policy, **kwargs)
        tokens = torch.randint(0, gpt.VOCAB, (2, 33))
        model(tokens[:, :-1], tokens[:, 1:]).backward()
        return "trains"
    except Exception as e:  # noqa: BLE001
        return failure(e)


def try_collectives():
    """Each collective FSDP's full sharding calls (parameters gathered, gradients reduce-scattered)."""
    x, out, full = torch.ones(4), torch.empty(2), torch.empty(8)
    calls = {"_all_gather_base": lambda: dist._all_gather_base(full, x),
             "_reduce_scatter_base": lambda: dist._reduce_scatter_base(out, x)}
    results = {}
    for name, call in calls.items():
        try:
            call()
            results[name] = "works"
        except Exception as e:  # noqa: BLE001
            results[name] = failure(e)
        dist.barrier()
    return results


def worker(rank, world, verdict):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{PORT}", rank=rank, world_size=world)
    warnings.simplefilter("ignore")  # FSDP's advice on CPU modules; the failures are what counts

    def say(line):
        if rank == 0:
            print(line, flush=True)
    fsdp, wrap, patched = import_fsdp(say)
    trains = False
    for name, kwargs in variants(fsdp).items():
        result = try_variant(fsdp, wrap, kwargs)
        full_shard = kwargs["sharding_strategy"] == fsdp.ShardingStrategy.FULL_SHARD  # NO_SHARD is DDP: not the verdict
        trains |= result == "trains" and not patched and full_shard
        say(f"FSDP({name}): {result}")
        dist.barrier()
    for name, result in try_collectives().items():
        say(f"gloo {name}: {result}")
    if rank == 0:
        verdict.value = 1 if trains else 0
    dist.destroy_process_group()


def main():
    print(f"torch {torch.__version__}, Python {sys.version.split()[0]}, CUDA available: {torch.cuda.is_available()}")
    verdict = mp.get_context("spawn").Value("i", 0)
    mp.spawn(worker, args=(2, verdict), nprocs=2, join=True)
    print(f"verdict: FSDP {'trains' if verdict.value else 'does not train'} this GPT on CPU over gloo with torch {torch.__version__}")
    return 0 if verdict.value else 2


if __name__ == "__main__":
    sys.exit(main())
