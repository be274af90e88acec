"""Forward kernels whose stores write an address more than once (racy forwards,
whose gradient was silently N times too large) and kernels that look alike but
write each address once.

Written more than once, each writer would receive the whole upstream gradient:
  - ``lanes_share_an_address``: a row's sum stored by every lane of the row to
    one address (``y + pid + offs * 0``, no mask): refused at the store;
  - ``programs_share_addresses``: every program stores its block to the same
    addresses (the address and the mask ignore tl.program_id(0)): refused at a
    launch of more than one program.

Written once (derived and launched as before):
  - ``first_lane_stores``: the same address, masked to lane 0;
  - ``first_program_stores``: the shared addresses under ``if pid == 0``;
  - ``grid_stride_rows``: a persistent loop ``for row in range(pid, M, nprog)``
    (the row's program id comes through the loop's bounds).

``run(name, device)`` launches one through ``tritonad.autograd`` on fresh random
inputs and returns the largest error of its gradient against fp64 torch,
relative to its magnitude (or raises what tritonad raises).
"""

import torch
import triton
import triton.language as tl

import tritonad

BLOCK, PROGRAMS = 16, 4


@triton.jit
def lanes_share_an_address(X, Y, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    total = tl.sum(tl.load(X + pid * BLOCK + offs), axis=0)
    tl.store(Y + pid + offs * 0, total + offs * 0.0)


@triton.jit
def first_lane_stores(X, Y, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    total = tl.sum(tl.load(X + pid * BLOCK + offs), axis=0)
    tl.store(Y + pid + offs * 0, total + offs * 0.0, mask=offs == 0)


@triton.jit
def programs_share_addresses(X, Y, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + pid * BLOCK + offs, mask=pid * BLOCK + offs < n)
    tl.store(Y + offs, x * 2.0, mask=offs < n)


@triton.jit
def first_program_stores(X, Y, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + pid * BLOCK + offs, mask=pid * BLOCK + offs < n)
    if pid == 0:
        tl.store(Y + offs, x * 2.0, mask=offs < n)


@triton.jit
def grid_stride_rows(X, Y, M, N, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    for row in range(tl.program_id(0), M, tl.num_programs(0)):
        x = tl.load(X + row * N + offs, mask=offs < N)
        tl.store(Y + row * N + offs, tl.exp(x), mask=offs < N)


def _error(got, want):
    return ((got.double() - want).abs().max() / want.abs().max().clamp_min(1e-30)).item()


def run(name, device):
    """The largest relative error of X's gradient (raises what tritonad raises)."""
    n = BLOCK * PROGRAMS
    x = torch.randn(n, device=device, requires_grad=True)
    x64 = x.detach().double()
    if name in ("lanes_share_an_address", "first_lane_stores"):
        kernel = globals()[name]
        y = tritonad.autograd(kernel, outputs=("Y",))[(PROGRAMS,)](
            x, torch.empty(PROGRAMS, device=device), BLOCK=BLOCK)
        want = torch.ones(n, dtype=torch.float64, device=device)  # (upstream of ones)
        y.backward(torch.ones(PROGRAMS, device=device))
    elif name in ("programs_share_addresses", "first_program_stores"):
        kernel = globals()[name]
        y = tritonad.autograd(kernel, outputs=("Y",))[(PROGRAMS,)](
            x, torch.empty(BLOCK, device=device), n, BLOCK=BLOCK)
        upstream = torch.randn(BLOCK, device=device)
        y.backward(upstream)
        # (program 0 writes Y last... or first: only its block has a gradient)
        want = torch.zeros(n, dtype=torch.float64, device=device)
        want[:BLOCK] = 2.0 * upstream.double()
    else:
        rows, cols, programs = 37, 13, 5
        x = torch.randn(rows, cols, device=device, requires_grad=True)
        y = tritonad.autograd(grid_stride_rows, outputs=("Y",))[(programs,)](
            x, torch.empty_like(x), rows, cols, BLOCK=BLOCK)
        upstream = torch.randn(rows, cols, device=device)
        y.backward(upstream)
        want = torch.exp(x.detach().double()) * upstream.double()
    del x64
    return _error(x.grad, want)


CASES = ("lanes_share_an_address", "first_lane_stores", "programs_share_addresses",
         "first_program_stores", "grid_stride_rows")
