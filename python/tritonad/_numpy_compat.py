"""Triton 3.6's interpreter under numpy >= 2.4: a scalar inside a kernel is a
one-element array, and its ``__index__`` calls ``int()`` on it, which numpy 2.4 no
longer allows for arrays of one dimension (a loop bound that is a runtime value,
``range(0, n_cols, BLOCK)``, fails with "only 0-dimensional arrays can be converted to
Python scalars"). tritonad runs user kernels there (the forward of
``tritonad.autograd`` on the CPU), so it mends that one conversion while the
interpreter patches ``triton.language``; everything else is Triton's own."""


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
