"""Derived backwards rendered as Triton Python and launched as the docs say
(docs/quickstart.md, "Reading the derived code"): ``bwd.source(<the backward's
launch arguments>)`` written to a file, imported, and its kernel launched on the
forward's grid with those arguments, less the constexprs.

``check(name, device)`` does that for one case (an elementwise GELU; a layer norm
whose shared weight and bias every program adds to, partial buffers on a GPU; a loop
whose carried state the launch path tapes; a matmul whose dA and dB the launch path
re-parallelizes), on fresh random inputs, and also launches the backward through
tritonad's launch path (``bwd[grid](...)``). It returns both gradients' errors
against fp64 torch.autograd (relative to the reference's largest magnitude) and what
the launch path's own rendering says about launching it alone. Used by
test_rendered_launch.py, in Triton's interpreter and on the GPU.
"""

import importlib.util
import pathlib
import tempfile

import torch
import triton
import torch.nn.functional as F

import tritonad
from corpus.kernels import gelu_kernel, matmul_kernel
from corpus.loops import tape_recurrence, tape_recurrence_reference
from corpus.norms import norm_kernel, norm_reference
from tritonad import _render

CASES = ("gelu", "layer_norm", "tape_loop", "matmul")


def _gelu(device):
    n, block = 1001, 128
    return dict(kernel=gelu_kernel, grid=(triton.cdiv(n, block),), constexprs=dict(BLOCK=block),
                inputs=dict(x_ptr=torch.randn(n, device=device)),
                outputs=dict(y_ptr=torch.empty(n, device=device)), scalars=dict(n=n),
                reference=lambda x_ptr: {"y_ptr": F.gelu(x_ptr)})


def _layer_norm(device):
    # (enough rows on a GPU that the launch path sums W's and B's gradients in
    # partial buffers)
    rows, cols, eps = (7, 37, 1e-5) if device == "cpu" else (300, 37, 1e-5)
    return dict(kernel=norm_kernel, grid=(rows,), constexprs=dict(HAS_MEAN=True, BLOCK_N=64),
                inputs=dict(X=torch.randn(rows, cols, device=device),
                            W=torch.randn(cols, device=device),
                            B=torch.randn(cols, device=device)),
                outputs=dict(Y=torch.empty(rows, cols, device=device)),
                scalars=dict(stride=cols, N=cols, eps=eps),
                reference=lambda X, W, B: {"Y": norm_reference(X, W, B, True, eps)})


def _tape_loop(device):
    rows, n, block = 3, 53, 16
    return dict(kernel=tape_recurrence, grid=(rows,), constexprs=dict(BLOCK=block),
                inputs=dict(X=torch.randn(rows, n, device=device)),
                outputs=dict(OUT=torch.empty(rows, device=device),
                             MX=torch.empty(rows, block, device=device)),
                scalars=dict(N=n), reference=lambda X: tape_recurrence_reference(X, block))


def _matmul(device):
    M, N, K = 33, 47, 40
    a, b = torch.randn(M, K, device=device), torch.randn(K, N, device=device)
    c = torch.empty(M, N, device=device)
    tiles = dict(BLOCK_M=16, BLOCK_N=32, BLOCK_K=16, GROUP_M=2)
    return dict(kernel=matmul_kernel, grid=(triton.cdiv(M, 16) * triton.cdiv(N, 32),),
                constexprs=tiles, inputs=dict(a_ptr=a, b_ptr=b), outputs=dict(c_ptr=c),
                scalars=dict(M=M, N=N, K=K, stride_am=a.stride(0), stride_ak=a.stride(1),
                             stride_bk=b.stride(0), stride_bn=b.stride(1),
                             stride_cm=c.stride(0), stride_cn=c.stride(1)),
                reference=lambda a_ptr, b_ptr: {"c_ptr": a_ptr @ b_ptr})


_CASES = {"gelu": _gelu, "layer_norm": _layer_norm, "tape_loop": _tape_loop, "matmul": _matmul}


def import_rendering(source: str, directory):
    """The rendered kernel, from `source` saved to a file and imported (Triton
    reads a kernel's source from its file)."""
    name = _render.function_name(source)
    path = pathlib.Path(directory) / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)


def _errors(shadows, case, upstream):
    """max |shadow - fp64 torch| / max |torch| for each input."""
    leaves = {k: v.detach().double().requires_grad_() for k, v in case["inputs"].items()}
    produced = case["reference"](**leaves)
    total = sum((produced[k] * upstream[k].double()).sum() for k in produced)
    want = torch.autograd.grad(total, list(leaves.values()))
    errors = {}
    for (name, leaf), grad in zip(leaves.items(), want):
        scale = max(grad.abs().max().item(), 1e-30)
        errors[name] = (shadows[name].double() - grad).abs().max().item() / scale
    return errors


def check(name, device):
    """{"rendered": errors of the rendering launched alone, "launch_path": errors of
    bwd[grid](...), "launch_path_alone": why the launch path's rendering does not
    launch on its own (None where it does), "launch_path_launched_alone": what
    launching that rendering with the documented arguments raised (None where it
    launches), "says_how_to_launch": whether the
    standalone rendering's header shows the launch that was made}."""
    case = _CASES[name](device)
    bwd = tritonad.grad(case["kernel"])
    upstream = {k: torch.randn_like(v) for k, v in case["outputs"].items()}
    values = {**case["inputs"], **case["outputs"], **case["scalars"]}
    runtime = [n for n in bwd.launch_signature if n not in case["constexprs"]]

    def arguments():
        """The backward's runtime arguments, with fresh zero input shadows."""
        shadows = {}
        for pointer, shadow in bwd.shadows.items():
            shadows[shadow] = (upstream[pointer].clone() if pointer in upstream
                               else torch.zeros_like(case["inputs"][pointer]))
        return [{**values, **shadows}[n] for n in runtime], shadows

    args, shadows = arguments()
    bwd[case["grid"]](*args, **case["constexprs"])
    by_input = {p: shadows[bwd.shadows[p]] for p in case["inputs"]}
    launch_path = _errors(by_input, case, upstream)
    # (the launch path's rendering, before source(...) derives another)
    record = list(bwd.source.records.values())[-1]
    try:
        _render.launchable_source(record)
        alone = refused = None
    except _render.NotLaunchableError as error:
        alone = str(error)
        # launched as its signature's documented part would be, it must refuse
        args, _ = arguments()
        with tempfile.TemporaryDirectory() as directory:
            kernel = import_rendering(_render.source_of(record), directory)
            try:
                kernel[case["grid"]](*args)
                refused = "launched"
            except Exception as error:  # noqa: BLE001  (Triton's or its interpreter's)
                refused = str(error)

    args, shadows = arguments()
    source = bwd.source(*args, **case["constexprs"])
    with tempfile.TemporaryDirectory() as directory:
        kernel = import_rendering(source, directory)
        kernel[case["grid"]](*args)
    by_input = {p: shadows[bwd.shadows[p]] for p in case["inputs"]}
    lines = source.splitlines()
    said = next((i for i, line in enumerate(lines) if "It launches as written" in line), None)
    launch = f"#     {_render.function_name(source)}[grid]({', '.join(runtime)})"
    return {"rendered": _errors(by_input, case, upstream), "launch_path": launch_path,
            "launch_path_alone": alone, "launch_path_launched_alone": refused,
            "says_how_to_launch": said is not None and lines[said + 1] == launch}
