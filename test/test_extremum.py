"""The gradient of tl.max / tl.min on the GPU goes to the first extremal element,
also where Triton flattens a 2-D tile (a full reduction) and where it computes
the reduced value twice in two layouts (a cumsum of a dot: fuzz seeds 90014,
91923 dropped the gradient when it was placed by `x == max(x)`)."""

import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")
tritonad = pytest.importorskip("tritonad")

import triton.language as tl  # noqa: E402

from gpu_util import requires_gpu  # noqa: E402


@triton.jit
def tile_extremum_kernel(a_ptr, b_ptr, y_ptr, SOURCE: tl.constexpr, IS_MAX: tl.constexpr):
    r = tl.arange(0, 32)
    a = tl.load(a_ptr + r[:, None] * 32 + r[None, :])
    if SOURCE == 0:
        x = a.to(tl.float32)
    elif SOURCE == 1:
        x = tl.cumsum(a.to(tl.float32), axis=1)
    else:
        b = tl.load(b_ptr + r[:, None] * 32 + r[None, :])
        x = tl.cumsum(tl.dot(a, b), axis=1)
    if IS_MAX:
        m = tl.max(x)
    else:
        m = tl.min(x)
    tl.store(y_ptr + r, m + 0.0 * r)


def _reference(a, b, source, is_max):
    x = a.float() if source == 0 else (a.float().cumsum(1) if source == 1 else
                                       (a.float() @ b.float()).cumsum(1))
    flat = x.flatten()
    return flat[flat.argmax() if is_max else flat.argmin()]


@pytest.mark.gpu
@requires_gpu
@pytest.mark.parametrize("source", [0, 1, 2])
@pytest.mark.parametrize("is_max", [True, False])
def test_gpu_full_reduction_gradient_goes_to_the_first_extremum(source, is_max):
    bwd = tritonad.grad(tile_extremum_kernel, wrt=["a_ptr", "b_ptr"])
    for seed in range(40):
        g = torch.Generator(device="cuda").manual_seed(seed)
        a = torch.randn(32, 32, device="cuda", generator=g).half()
        b = torch.randn(32, 32, device="cuda", generator=g).half()
        y = torch.empty(32, device="cuda")
        dy = torch.randn(32, device="cuda", generator=g)
        da, db = torch.zeros_like(a), torch.zeros_like(b)
        bwd[(1,)](a, b, y, da, db, dy, SOURCE=source, IS_MAX=is_max)
        ra, rb = (t.detach().float().requires_grad_() for t in (a, b))
        (_reference(ra, rb, source, is_max) * dy.sum()).backward()
        torch.testing.assert_close(da.float(), ra.grad, rtol=2e-2, atol=2e-2 * float(dy.abs().sum()),
                                   msg=lambda m: f"seed {seed}: {m}")
        if source == 2:
            torch.testing.assert_close(db.float(), rb.grad, rtol=2e-2,
                                       atol=2e-2 * float(dy.abs().sum()),
                                       msg=lambda m: f"seed {seed}: {m}")
