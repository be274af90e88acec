"""Memory as tritonad reads a launch: the storage a tensor addresses, the elements
its view spans, whether two views share an element."""

from __future__ import annotations


def storage_id(t) -> int:
    """The storage a tensor addresses (its views share it; fake tensors too)."""
    return t.untyped_storage()._cdata


def _extent(t):
    """[first, last + 1) element offsets t addresses in its storage."""
    last = t.storage_offset() + sum((n - 1) * s for n, s in zip(t.shape, t.stride()))
    return t.storage_offset(), last + 1


def _byte_extent(t):
    first, end = _extent(t)
    return first * t.element_size(), end * t.element_size()


def views_overlap(a, b) -> bool:
    """Whether two views of one storage share an element (exact)."""
    import torch

    if a.numel() == 0 or b.numel() == 0:
        return False
    (a0, a1), (b0, b1) = _byte_extent(a), _byte_extent(b)
    if a1 <= b0 or b1 <= a0:
        return False
    if a.element_size() != b.element_size():
        return True  # (reinterpreted memory: treat any byte overlap as sharing)
    size = a.element_size()
    first = min(a0, b0) // size
    span = max(a1, b1) // size - first
    # Mark a's elements, look at b's (on the CPU; only for views whose ranges meet).
    marks = torch.zeros(span, dtype=torch.bool)
    marks.as_strided(a.shape, a.stride(), a.storage_offset() - first).fill_(True)
    return bool(marks.as_strided(b.shape, b.stride(), b.storage_offset() - first).any())
