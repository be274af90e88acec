"""Minimized fuzz cases that once gave a silently wrong gradient, kept as regression tests.

Each entry is the complete module text `run.py` printed for a minimized case (the kernel,
its torch `reference` and META); test_fuzz.py runs every entry on the GPU and expects
`match`. To add one: copy the module text printed after "=== minimizing seed ..."
into CASES under a name saying what went wrong, e.g.

    CASES["loop_max_running_store_dx_zero"] = '''<module text>'''

Run them alone with `python3 test/fuzz/run.py --regressions`.
"""

CASES = {}
