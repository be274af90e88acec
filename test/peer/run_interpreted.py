"""Runs the peer cases that Triton's CPU interpreter can run, in float32:

    TRITON_INTERPRET=1 python test/peer/run_interpreted.py out.json [case ...]

Writes {case: result} as JSON (oracle.Result fields) and prints one line per
case. test_peer_interpret.py runs it in a fresh Python (Triton reads
TRITON_INTERPRET when the libraries' kernels are defined, at import).
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]

import oracle  # noqa: E402
from cases import interpreted_cases  # noqa: E402

if __name__ == "__main__":
    if os.environ.get("TRITON_INTERPRET") != "1":
        sys.exit("set TRITON_INTERPRET=1 (before Python starts)")
    oracle.main_interpreted(sys.argv[1:], interpreted_cases())
