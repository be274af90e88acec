"""pytest configuration of the peer suite (library kernels nobody here wrote).

Puts this folder on sys.path (oracle.py, cases*.py) and, at the end of a run
with TRITONAD_PEER_TABLE=<path> set, writes the table of every case run:
kernel, variant, dtype, device, tritonad's error, the library's error, status,
schedule (or the refusal's cause). See oracle.py for the contract.
"""

import os
import sys

_PEER_DIR = os.path.dirname(os.path.abspath(__file__))
if _PEER_DIR not in sys.path:
    sys.path.insert(0, _PEER_DIR)


def pytest_sessionfinish(session, exitstatus):
    path = os.environ.get("TRITONAD_PEER_TABLE")
    if not path:
        return
    import oracle

    with open(path, "w") as f:
        f.write(oracle.format_table(oracle.RESULTS))


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    import oracle

    if oracle.RESULTS and os.environ.get("TRITONAD_PEER_TABLE"):
        terminalreporter.write_line(
            f"peer table ({len(oracle.RESULTS)} cases) written to "
            f"{os.environ['TRITONAD_PEER_TABLE']}")
