"""Differentiable launchers on the CPU without derived backwards: the forward kernels
run in Triton's interpreter and each derived backward kernel is replaced by a torch
stand-in (STAND_INS) that addresses memory exactly as the kernel does (through the
pointer it is given, with the strides passed as arguments). The ``interpreted``
fixture installs them and returns the log of backward launches; import it into a
test module to use it (test_launcher.py, test_compile.py).
"""

import pytest
import torch
from triton.runtime.jit import JITFunction

import tritonad._launcher as launcher_module
from corpus.kernels import gelu_kernel
from corpus.launchers import (bias_add_kernel, layer_norm_kernel, matmul_kernel,
                              mul_heuristic_kernel, mul_kernel, rows_scale_kernel, scale_kernel)
from tritonad._kernel_grad import unwrap



def _flat(t, n):
    """What `ptr + offs` (offs < n) addresses: n elements from t's first one."""
    return t.as_strided((n,), (1,), t.storage_offset())


def _mat(t, rows, cols, s0, s1):
    return t.as_strided((rows, cols), (s0, s1), t.storage_offset())


def _scale_vjp(a):
    if a["dx_ptr"] is not None:
        _flat(a["dx_ptr"], a["n"]).add_(a["alpha"] * _flat(a["dy_ptr"], a["n"]))


def _mul_vjp(a):
    n = a["n"]
    dy = _flat(a["dy_ptr"], n)
    if a["dx_ptr"] is not None:
        _flat(a["dx_ptr"], n).add_(dy * _flat(a["w_ptr"], n))
    if a["dw_ptr"] is not None:
        _flat(a["dw_ptr"], n).add_(dy * _flat(a["x_ptr"], n))


def _rows_scale_vjp(a):
    rows = a["_grid"][0]
    if a["dx_ptr"] is not None:
        _mat(a["dx_ptr"], rows, a["N"], a["stride_x"], 1).add_(
            a["alpha"] * _mat(a["dy_ptr"], rows, a["N"], a["stride_y"], 1))


def _matmul_vjp(a):
    M, N, K = a["M"], a["N"], a["K"]
    dc = _mat(a["dc_ptr"], M, N, a["stride_cm"], a["stride_cn"])
    A = _mat(a["a_ptr"], M, K, a["stride_am"], a["stride_ak"])
    B = _mat(a["b_ptr"], K, N, a["stride_bk"], a["stride_bn"])
    if a["da_ptr"] is not None:
        _mat(a["da_ptr"], M, K, a["stride_am"], a["stride_ak"]).add_(dc @ B.T)
    if a["db_ptr"] is not None:
        _mat(a["db_ptr"], K, N, a["stride_bk"], a["stride_bn"]).add_(A.T @ dc)


def _bias_add_vjp(a):
    M, N = a["_grid"][0], a["N"]
    dy = _mat(a["dy_ptr"], M, N, a["stride_y"], 1)
    if a["dt_ptr"] is not None:
        _mat(a["dt_ptr"], M, N, a["stride_t"], 1).add_(dy)
    if a["db_ptr"] is not None:
        _flat(a["db_ptr"], N).add_(dy.sum(0))


def _gelu_vjp(a):
    n = a["n"]
    if a["dx_ptr"] is not None:
        x = _flat(a["x_ptr"], n)
        cdf = 0.5 * (1 + torch.erf(x / 2 ** 0.5))
        pdf = torch.exp(-0.5 * x * x) / (2 * torch.pi) ** 0.5
        _flat(a["dx_ptr"], n).add_(_flat(a["dy_ptr"], n) * (cdf + x * pdf))


def _layer_norm_vjp(a):
    rows, N, s = a["_grid"][0], a["N"], a["stride"]
    x = _mat(a["x_ptr"], rows, N, s, 1).detach().requires_grad_()
    w = _flat(a["w_ptr"], N).detach().requires_grad_()
    b = _flat(a["b_ptr"], N).detach().requires_grad_()
    with torch.enable_grad():
        y = torch.nn.functional.layer_norm(x, (N,), w, b, a["eps"])
        gx, gw, gb = torch.autograd.grad(y, (x, w, b), _mat(a["dy_ptr"], rows, N, s, 1))
    for name, g, view in (("dx_ptr", gx, lambda t: _mat(t, rows, N, s, 1)),
                          ("dw_ptr", gw, lambda t: _flat(t, N)),
                          ("db_ptr", gb, lambda t: _flat(t, N))):
        if a[name] is not None:
            view(a[name]).add_(g)


STAND_INS = {scale_kernel: _scale_vjp, mul_kernel: _mul_vjp, rows_scale_kernel: _rows_scale_vjp,
             matmul_kernel: _matmul_vjp, bias_add_kernel: _bias_add_vjp,
             gelu_kernel: _gelu_vjp, layer_norm_kernel: _layer_norm_vjp}
STAND_INS[unwrap(mul_heuristic_kernel)[0]] = _mul_vjp


class StandIn:
    """A derived backward kernel's interface (shadows, pointer_roles, bwd[grid](**args))
    whose launch runs a torch body. The body gets the grid as ``_grid``."""

    def __init__(self, real, body, log):
        self.real, self.body, self.log = real, body, log
        self.shadows = real.shadows
        self.pointer_roles = real.pointer_roles

    def written_shadows(self):
        """The shadows the body writes: those of the pointers it loads through (it
        adds their gradients there; it only reads an output's)."""
        return {s for p, s in self.shadows.items() if "load" in self.pointer_roles[p]}

    def __getitem__(self, grid):
        def launch(**kwargs):
            arguments = dict(kwargs)
            try:  # (an autotuned kernel's grid needs its config: not for the stand-in)
                arguments["_grid"] = tuple(grid(arguments) if callable(grid) else grid)
            except KeyError:
                arguments["_grid"] = None
            self.log.append((self.real.tritonad_primal.__name__, arguments))
            self.body(arguments)
        return launch


_INTERPRETED = {}


@pytest.fixture
def interpreted(monkeypatch):
    """Forward kernels run in Triton's interpreter; the backward kernels tritonad
    derives are replaced by STAND_INS. Returns the log of backward launches."""
    from triton.runtime.interpreter import InterpretedFunction

    def run(self, *args, grid, warmup, **kwargs):
        assert getattr(self, "tritonad_primal", None) is None, \
            "a derived backward kernel reached the interpreter"
        if id(self) not in _INTERPRETED:
            _INTERPRETED[id(self)] = (self, InterpretedFunction(self.fn))
        kwargs = {k: v for k, v in kwargs.items() if k not in ("num_warps", "num_stages")}
        return _INTERPRETED[id(self)][1].run(*args, grid=grid, warmup=warmup, **kwargs)

    import numpy as np
    import triton.runtime.interpreter as interpreter

    def call(self, *args, **kwargs):
        # A @triton.jit helper (tl.cdiv, tl.sum, ...) called inside an interpreted
        # kernel: interpret it too (Triton made it a JITFunction at import). Not
        # through InterpretedFunction.__call__, which leaves triton.language
        # patched for the interpreter (and later real compiles broken).
        if id(self) not in _INTERPRETED:
            _INTERPRETED[id(self)] = (self, InterpretedFunction(self.fn))
        scope = interpreter._patch_lang(self.fn)
        try:
            return _INTERPRETED[id(self)][1].rewrite()(*args, **kwargs)
        finally:
            scope.restore()

    patch_tensor = interpreter._patch_lang_tensor

    def patch_tensor_index(tensor, scope):
        # (Triton 3.6 does int() of a 1-element array, e.g. a loop bound
        # tl.cdiv(K, BLOCK_K); NumPy 2 refuses that for non-0-d arrays)
        patch_tensor(tensor, scope)
        scope.set_attr(tensor, "__index__",
                       lambda self: int(np.asarray(self.handle.data).reshape(-1)[0]))

    monkeypatch.setattr(interpreter, "_patch_lang_tensor", patch_tensor_index)
    monkeypatch.setattr(JITFunction, "run", run)
    monkeypatch.setattr(JITFunction, "__call__", call)
    real = launcher_module.backward_kernel
    log = []

    def stand_in(kernel, mode, tune=False, accumulate=True):
        # (a stand-in adds into its shadows: they arrive holding zeros, either way)
        return StandIn(real(kernel, mode, tune, accumulate), STAND_INS[unwrap(kernel)[0]], log)

    monkeypatch.setattr(launcher_module, "backward_kernel", stand_in)
    return log
