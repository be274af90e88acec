"""Torch helpers used by the reference functions of generated fuzz cases.

Every value of a reference function is a float64 tensor of the kernel's *logical* shape
([n] for 1-D layouts, [M, N] for 2-D ones): a value that the kernel holds per program
(a row scalar, a tile's partial reduction) is stored expanded over the elements of its
block. So elementwise math in the reference is plain torch, and only reductions, scans and
loop-carried running values need the block structure, which these helpers provide by
padding the logical tensor to whole blocks, reshaping and reducing inside each block.

Also here: `view` (the logical view of a kernel buffer), written masks, the `Ctx` that
records selection margins (how far every max/min/where/if decision is from a tie) and the
load sites, `load` (one load site of an input), `dot` (a matrix product, recorded), and
`libdevice_shim` (libdevice.pow / tanh for Triton's interpreter, which lacks libdevice).

Load sites: every tl.load (or block-pointer load) of an input pointer in the kernel is a
separate accumulation into that input's shadow in the backward. The reference mirrors this:
each site reads its input through `load`, which returns a *copy* of the data (a function of
the leaf, so the leaf's gradient stays the sum over sites) and records it in ctx, together
with the buffer element each of its entries reads. run.py differentiates per program with
respect to these site tensors to bound the rounding of the shadow's accumulation.
"""

import math

import torch
import torch.nn.functional as F

NEUTRAL = {"sum": 0.0, "max": -math.inf, "min": math.inf, "lse": -math.inf}


def cdiv(a, b):
    return -(-a // b)


def view(base, spec):
    """The logical tensor a kernel buffer holds: spec is META's view spec."""
    kind = spec[0]
    if kind == "full":
        return base
    if kind == "cols":          # column slice of a wider buffer: row stride > N
        return base[:, :spec[1]]
    if kind == "col0":          # 1-D view with element stride base.shape[1]
        return base[:, 0]
    if kind == "t":             # transposed: base is [N, M]
        return base.t()
    if kind == "overlap":       # [M, N] rows at a stride < N: rows share elements
        _, m, n, st = spec
        idx = (torch.arange(m, device=base.device)[:, None] * st
               + torch.arange(n, device=base.device)[None, :])
        return base.reshape(-1)[idx]
    raise ValueError(f"unknown view {spec!r}")


class Ctx:
    """Collects margins: (label, smallest distance of a selection from its tie), the load
    sites (`load`) and the matrix products (`dot`) of one reference evaluation."""

    def __init__(self):
        self.gaps = []
        self.sites = []   # (input name, site tensor, flat buffer index of each entry)
        self.dots = []    # (a, b, a @ b)

    def gap(self, label, g, exact_ok=False):
        """g: distances from a tie. exact_ok: an exact tie (0) is not ambiguous (the tied
        values are equal in the kernel too, and the rule -- the first extremal element
        of the group gets the gradient, like torch.max(x, dim) -- is defined), only a
        near tie is."""
        if g is None:
            return
        g = g.detach().reshape(-1)
        g = g[torch.isfinite(g)]
        if exact_ok:
            g = g[g != 0]
        if g.numel():
            self.gaps.append((label, float(g.min())))

    def min_gap(self):
        return min((g for _, g in self.gaps), default=math.inf)


def load(ctx, T, name, spec=("full",)):
    """One load site of input `name`: the view `spec` of its buffer as the kernel's lanes
    read it, as a fresh tensor (a differentiable copy) recorded in ctx with the buffer
    element each of its entries reads.

    Granularity: one entry per addition the backward makes into the shadow per program.
    Full-shape inputs are loaded one lane per logical element, so their sites have the
    logical shape (two lanes of one tile reading one element, rows overlapping in memory,
    are two additions). A row / column vector or a scalar is loaded once per program and
    broadcast in registers (its adjoint is reduced in float32 before one addition), so its
    site is the buffer itself: call `load` without a view and broadcast the result."""
    base = T[name]
    site = view(base, spec).clone()
    if ctx is not None:
        with torch.no_grad():
            index = view(torch.arange(base.numel(), device=base.device).reshape(base.shape),
                         spec).clone()
        ctx.sites.append((name, site, index))
    return site


def dot(ctx, a, b):
    """a @ b (a [M, K], b [K, N] logical tensors), recorded in ctx: a low-precision tl.dot's
    backward rounds the output's adjoint to the operand dtype (see run.py)."""
    out = a @ b
    if ctx is not None:
        ctx.dots.append((a, b, out))
    return out


def _tile(v, bs, value):
    """Pads v to whole blocks (with `value`) and reshapes: [nb, b] or [nbm, bm, nbn, bn]."""
    if v.dim() == 1:
        (b,) = bs
        n = v.shape[0]
        nb = cdiv(n, b)
        return F.pad(v, (0, nb * b - n), value=value).reshape(nb, b)
    m, n = v.shape
    bm, bn = bs
    nbm, nbn = cdiv(m, bm), cdiv(n, bn)
    return F.pad(v, (0, nbn * bn - n, 0, nbm * bm - m), value=value).reshape(nbm, bm, nbn, bn)


def _untile(t, shape):
    if len(shape) == 1:
        return t.reshape(-1)[:shape[0]]
    nbm, bm, nbn, bn = t.shape
    return t.reshape(nbm * bm, nbn * bn)[:shape[0], :shape[1]]


def _inner(dims):
    return tuple(2 * d + 1 for d in dims)   # logical dim d -> its within-block tile dim


def _top2_gap(t, inner):
    """top1 - top2 within every group (inf where a group has one finite element)."""
    outer = [d for d in range(t.dim()) if d not in inner]
    s = t.detach().permute(*outer, *inner)
    s = s.reshape(*s.shape[:len(outer)], -1)
    if s.shape[-1] < 2:
        return None
    top = s.topk(2, dim=-1).values
    return top[..., 0] - top[..., 1]


def _first_extremum(t, inner, largest):
    """max (min) over the `inner` dims of t, kept as size-1 dims, whose gradient
    goes to the first extremal element in row-major order of those dims (as
    tl.max's rule: one (value, index) reduction over the flattened tile)."""
    outer = [d for d in range(t.dim()) if d not in inner]
    s = t.permute(*outer, *inner)
    flat = s.reshape(*s.shape[:len(outer)], -1)
    chosen = flat.argmax(-1, keepdim=True) if largest else flat.argmin(-1, keepdim=True)
    r = flat.gather(-1, chosen).reshape(*s.shape[:len(outer)], *([1] * len(inner)))
    inverse = [0] * t.dim()
    for position, d in enumerate((*outer, *inner)):
        inverse[d] = position
    return r.permute(*inverse)


def reduce(v, bs, dims, op, ctx=None, label="reduce"):
    """Reduction over `dims` (logical dims) inside each block of shape bs, expanded back."""
    return _reduce_tiles(_tile(v, bs, NEUTRAL[op]), v.shape, dims, op, ctx, label)


def reduce_filled(v, fill, bs, dims, op, ctx=None, label="reduce"):
    """`reduce` where the lanes past the logical shape hold `fill` (a masked load's
    differentiated `other`) instead of the neutral element. fill: its value on the
    logical elements, constant along each direction the padding extends in (a value per
    program, per row, per column), so replicating the edge fills the padding."""
    fill = fill.expand(v.shape)
    valid = _tile(torch.ones_like(v), bs, 0.0) > 0
    t = torch.where(valid, _tile(v, bs, 0.0), _tile_replicated(fill, bs))
    if ctx is not None and op in ("max", "min"):
        # (all padding lanes are equal: the tie among them is exact and not recorded, so
        # record how far the real lanes' extremum is from the padding's)
        sign = 1.0 if op == "max" else -1.0
        real = _tile(sign * v, bs, -math.inf).amax(_inner(dims))
        pad = torch.where(valid, -math.inf, sign * t).amax(_inner(dims))
        both = torch.isfinite(real) & torch.isfinite(pad)
        ctx.gap(label, (real - pad).abs()[both])
    return _reduce_tiles(t, v.shape, dims, op, ctx, label)


def _tile_replicated(v, bs):
    """`_tile` padding with each row's (column's) last element."""
    if v.dim() == 1:
        (b,) = bs
        n = v.shape[0]
        nb = cdiv(n, b)
        return F.pad(v[None, None], (0, nb * b - n), mode="replicate").reshape(nb, b)
    m, n = v.shape
    bm, bn = bs
    nbm, nbn = cdiv(m, bm), cdiv(n, bn)
    padded = F.pad(v[None, None], (0, nbn * bn - n, 0, nbm * bm - m), mode="replicate")
    return padded.reshape(nbm, bm, nbn, bn)


def _reduce_tiles(t, shape, dims, op, ctx, label):
    inner = _inner(dims)
    if op == "sum":
        r = t.sum(inner, keepdim=True)
    elif op in ("max", "min"):
        r = _first_extremum(t, inner, largest=op == "max")
    elif op == "lse":
        r = torch.logsumexp(t, dim=inner, keepdim=True)
    else:
        raise ValueError(op)
    if ctx is not None and op in ("max", "min"):
        ctx.gap(label, _top2_gap(t if op == "max" else -t, inner), exact_ok=True)
    return _untile(r.expand(t.shape), shape)


def cumsum(v, bs, dim):
    """Inclusive cumulative sum along logical dim `dim`, restarting at every block."""
    t = _tile(v, bs, 0.0)
    return _untile(t.cumsum(2 * dim + 1), v.shape)


def index(shape, dim, like):
    """The logical (global) index along `dim`, expanded to `shape`."""
    i = torch.arange(shape[dim], device=like.device)
    if len(shape) == 2:
        i = i[:, None] if dim == 0 else i[None, :]
    return i.expand(shape)


def lt(shape, dim, limit, like):
    """Written mask: elements whose index along `dim` is < limit."""
    return index(shape, dim, like) < limit


def pids(shape, bs, like):
    """The id of the program owning each element, for blocks of shape bs."""
    if len(shape) == 1:
        return torch.arange(shape[0], device=like.device) // bs[0]
    nbn = cdiv(shape[1], bs[1])
    return (index(shape, 0, like) // bs[0]) * nbn + index(shape, 1, like) // bs[1]


def by_table(index, table):
    """The table slot (program) handling each row (row block) `index`, where slot p
    handles row table[p] (row_table); entries past the last row are sentinels."""
    count = int(index.max()) + 1
    t = torch.as_tensor(table, device=index.device)
    assert sorted(t[t < count].tolist()) == list(range(count)), "not a permutation"
    slot = torch.empty(count, dtype=torch.long, device=index.device)
    valid = t < count
    slot[t[valid]] = torch.arange(len(table), device=index.device)[valid]
    return slot[index]


def ones(shape, like):
    return torch.ones(shape, dtype=torch.bool, device=like.device)


def running(v, block, op, ctx=None, label="running", scale=1.0, decay=None,
            prefix_gaps=False):
    """Loop-carried value of a row loop (rows layout, v is [M, N], chunks of `block`
    columns) after each iteration, expanded over the lanes of that iteration's chunk:
    sum (times scale), max, min, lse (running logsumexp), decay (acc = decay*acc + chunk,
    summed over lanes, times scale)."""
    m, n = v.shape
    t = _tile(v, (1, block), NEUTRAL.get(op, 0.0))          # [M, 1, nch, block]
    nch = t.shape[2]
    if op in ("sum", "decay"):
        c = t.sum(3).reshape(m, nch)
        if op == "sum":
            r = c.cumsum(1)
        else:
            acc, cols = None, []
            for j in range(nch):
                acc = c[:, j] if acc is None else acc * decay + c[:, j]
                cols.append(acc)
            r = torch.stack(cols, 1)
        r = r * scale
    elif op in ("max", "min"):
        s = t if op == "max" else -t
        c = s.amax(3).reshape(m, nch)
        r = torch.cummax(c, 1).values
        r = r if op == "max" else -r
        if ctx is not None:
            flat = (v if op == "max" else -v).detach()
            ends = range(1, nch + 1) if prefix_gaps else (nch,)
            for j in ends:
                part = flat[:, :min(j * block, n)]
                if part.shape[1] >= 2:
                    top = part.topk(2, dim=1).values
                    ctx.gap(label, top[:, 0] - top[:, 1])
    elif op == "lse":
        c = torch.logsumexp(t, dim=3).reshape(m, nch)
        r = torch.logcumsumexp(c, 1)
    else:
        raise ValueError(op)
    return r[:, :, None].expand(m, nch, block).reshape(m, nch * block)[:, :n]


def shift(v, fill):
    """v[..., i + 1] (along the last dim), `fill` past the end."""
    pad = torch.full((*v.shape[:-1], 1), fill, dtype=v.dtype, device=v.device)
    return torch.cat([v[..., 1:], pad], dim=-1)


def shift_back(v, fill):
    """v[..., i - 1] (along the last dim), `fill` before the start."""
    pad = torch.full((*v.shape[:-1], 1), fill, dtype=v.dtype, device=v.device)
    return torch.cat([pad, v[..., :-1]], dim=-1)


def last(v):
    """The value of the last column, expanded over the row (a loop's final value)."""
    return v[:, -1:].expand(v.shape)


class libdevice_shim:
    """libdevice.pow / tanh in terms of tl ops, for Triton's interpreter only."""

    @staticmethod
    def pow(a, b):
        import triton.language as tl
        if isinstance(b, (int, float)) and float(b).is_integer():
            k = int(b)
            r = a
            for _ in range(abs(k) - 1):
                r = r * a
            return 1.0 / r if k < 0 else r
        if isinstance(b, (int, float)):
            return tl.exp(tl.log(a) * b)
        return tl.exp(b * tl.log(a))

    @staticmethod
    def tanh(a):
        import triton.language as tl
        return 2.0 * tl.sigmoid(2.0 * a) - 1.0
