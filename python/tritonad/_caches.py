"""Bounded caches, shared by every layer (it imports nothing of tritonad's): a
training loop uses a handful of layouts, a sweep over many must not grow a
cache without end."""


def keep_newest(cache: dict, key, value, limit: int) -> None:
    """cache[key] = value, dropping the oldest entries beyond `limit`."""
    cache[key] = value
    while len(cache) > limit:
        cache.pop(next(iter(cache)))
