"""A DistributedDataParallel training step with tritonad ops on two GPUs gives the
gradients of the same step on one GPU (needs two CUDA GPUs; skipped otherwise)."""

import os
import sys

import pytest
import torch
import triton
import triton.language as tl

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import tritonad  # noqa: E402

WORLD = 2
BATCH, WIDTH, HIDDEN = 24, 40, 130


@triton.jit
def _scaled_tanh(x_ptr, w_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # y = tanh(x) * w[0]: w's gradient sums over every program
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    e = tl.exp(-2.0 * tl.abs(x))
    t = (1.0 - e) / (1.0 + e)
    tl.store(y_ptr + offs, tl.where(x < 0, -t, t) * tl.load(w_ptr), mask=mask)


_TANH = tritonad.autograd(_scaled_tanh, outputs=("y_ptr",))


class _Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        generator = torch.Generator().manual_seed(0)
        self.w1 = torch.nn.Parameter(torch.randn(WIDTH, HIDDEN, generator=generator) * 0.2)
        self.scale = torch.nn.Parameter(torch.tensor([1.3]))
        self.w2 = torch.nn.Parameter(torch.randn(HIDDEN, 3, generator=generator) * 0.2)

    def forward(self, x):
        h = (x @ self.w1).contiguous()
        y = _TANH[(triton.cdiv(h.numel(), 128),)](h, self.scale, torch.empty_like(h), h.numel(),
                                                  BLOCK=128)
        return (y @ self.w2).pow(2).mean()


def _batch():
    return torch.randn(BATCH, WIDTH, generator=torch.Generator().manual_seed(1))


def _worker(rank, init_file, out_dir):
    import torch.distributed as dist

    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method=f"file://{init_file}", rank=rank,
                            world_size=WORLD)
    model = torch.nn.parallel.DistributedDataParallel(_Model().cuda(rank), device_ids=[rank])
    shard = _batch().chunk(WORLD)[rank].cuda(rank)
    for _ in range(2):  # (a decided launch, then a replayed one)
        model.zero_grad(set_to_none=True)
        model(shard).backward()
    torch.save({n: p.grad.cpu() for n, p in model.module.named_parameters()},
               os.path.join(out_dir, f"{rank}.pt"))
    dist.destroy_process_group()


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.device_count() < WORLD,
                    reason="needs two CUDA GPUs")
def test_ddp_step_matches_one_gpu(tmp_path):
    import torch.multiprocessing as mp

    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    mp.spawn(_worker, args=(str(tmp_path / "init"), str(tmp_path)), nprocs=WORLD, join=True)
    model = _Model().cuda(0)
    # DDP averages the ranks' gradients of their shards' mean losses
    losses = [model(shard.cuda(0)) for shard in _batch().chunk(WORLD)]
    (sum(losses) / WORLD).backward()
    for rank in range(WORLD):
        grads = torch.load(os.path.join(tmp_path, f"{rank}.pt"))
        for name, parameter in model.named_parameters():
            want = parameter.grad.cpu()
            error = (grads[name] - want).abs().max().item() / (want.abs().max().item() + 1e-12)
            assert error < 1e-5, (rank, name, error)
