"""TRITON_INTERPRET=1 python test/interpret_checks [out.json [seed [name ...]]]"""

import os
import sys

_PACKAGE = os.path.dirname(os.path.abspath(__file__))
_TEST = os.path.dirname(_PACKAGE)
# (run as a directory, the package's own folder leads sys.path: its modules are no
# top-level modules)
sys.path[:] = [_TEST] + [p for p in sys.path if p not in (_PACKAGE, _TEST)]

from interpret_checks import CHECKS  # noqa: E402
from interpreter_util import main  # noqa: E402

main(sys.argv[1:], CHECKS)
