"""Two mends to Triton 3.6's CPU interpreter, which tritonad runs user kernels and
derived backwards in (TRITON_INTERPRET=1). Everything else is Triton's own.

- numpy >= 2.4: a kernel scalar is a one-element array, and its ``__index__`` calls
  ``int()`` on it, which numpy 2.4 no longer allows for arrays of one dimension (a loop
  bound that is a runtime value, ``range(0, n_cols, BLOCK)``, failed with "only
  0-dimensional arrays can be converted to Python scalars").
- Atomics read their operands' buffers as contiguous: a value with negative strides
  (``tl.cumsum(x, reverse=True)`` is a reversed view) was added from the wrong memory,
  a silently wrong result (a reverse cumsum's adjoint, added with ``tl.atomic_add``).
"""


def install():
    try:
        from triton.runtime import interpreter
    except ImportError:  # pragma: no cover - a Triton without the interpreter
        return
    original = interpreter._patch_lang_tensor
    if getattr(original, "tritonad_mended", False):
        return

    def index(self):
        data = self.handle.data
        return int(data.reshape(-1)[0]) if data.size == 1 else int(data)

    def patch_lang_tensor(tensor, scope):
        original(tensor, scope)
        scope.set_attr(tensor, "__index__", index)  # (restored in reverse order)

    patch_lang_tensor.tritonad_mended = True
    interpreter._patch_lang_tensor = patch_lang_tensor

    import numpy as np

    def contiguous(handle):
        if handle is None or np.asarray(handle.data).flags["C_CONTIGUOUS"]:
            return handle
        return interpreter.TensorHandle(np.ascontiguousarray(handle.data), handle.dtype)

    builder = interpreter.InterpreterBuilder
    rmw, cas = builder.create_atomic_rmw, builder.create_atomic_cas

    def create_atomic_rmw(self, op, ptr, val, mask, sem, scope):
        return rmw(self, op, contiguous(ptr), contiguous(val), contiguous(mask), sem, scope)

    def create_atomic_cas(self, ptr, cmp, val, sem, scope):
        return cas(self, contiguous(ptr), contiguous(cmp), contiguous(val), sem, scope)

    builder.create_atomic_rmw = create_atomic_rmw
    builder.create_atomic_cas = create_atomic_cas
