"""Runs the peer cases that Triton's CPU interpreter can run, in float32:

    TRITON_INTERPRET=1 python test/peer/run_interpreted.py out.json [case ...]

Writes {case: result} as JSON (oracle.Result fields) and prints one line per
case. test_peer_interpret.py runs it in a fresh Python (Triton reads
TRITON_INTERPRET when the libraries' kernels are defined, at import).

tritonad is imported first: its mends to Triton's interpreter (a runtime loop
bound, `range(0, T)`, fails there under numpy 2.4) apply to the libraries' own
forward kernels too.

The interpreter cannot benchmark, so an autotuned kernel keeps only the first
of the configs its library lists (set before the libraries are imported; the
derived backward, wrapped in the same autotuner, gets the same).
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]



def first_config_only():
    from triton.runtime import autotuner

    original = autotuner.Autotuner.__init__

    def init(self, fn, arg_names, configs, *args, **kwargs):
        original(self, fn, arg_names, list(configs)[:1], *args, **kwargs)

    autotuner.Autotuner.__init__ = init


if __name__ == "__main__":
    if os.environ.get("TRITON_INTERPRET") != "1":
        sys.exit("set TRITON_INTERPRET=1 (before Python starts)")
    first_config_only()
    import tritonad  # noqa: F401  (its interpreter mends, for the libraries too)
    import oracle
    from cases import interpreted_cases

    oracle.main_interpreted(sys.argv[1:], interpreted_cases())
