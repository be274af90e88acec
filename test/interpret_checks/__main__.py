"""TRITON_INTERPRET=1 python test/interpret_checks [out.json [seed [name ...]]]"""

import os
import sys

_TEST = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _TEST not in sys.path:
    sys.path.insert(0, _TEST)

from interpret_checks import CHECKS  # noqa: E402
from interpreter_util import main  # noqa: E402

main(sys.argv[1:], CHECKS)
