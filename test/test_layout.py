"""The test tree's one layout rule (test/README.md): no module imports a test module.

A test module (test_*.py) holds tests; what several of them share lives in helper
modules (compile_util.py, gpu_util.py, interpreter_util.py, launcher_util.py) and
the kernels in the corpus (corpus/), which benchmarks use too. Importing a test
module runs its collection-time code and couples two files' tests; this checks every
Python file under test/ and benchmarks/, imports inside functions included.
"""

import ast
from pathlib import Path

TEST_DIR = Path(__file__).resolve().parent
REPO_ROOT = TEST_DIR.parent


def imported_modules(source: str):
    """(line, dotted name) of every module an import statement names, at any depth;
    ``from a import b`` gives both a and a.b (b may be a module)."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield node.lineno, node.module
            for alias in node.names:
                yield node.lineno, f"{node.module}.{alias.name}"


def test_modules_import_no_test_module():
    test_modules = {path.stem for path in TEST_DIR.rglob("test_*.py")}
    offenders = {}
    for path in sorted([*TEST_DIR.rglob("*.py"), *(REPO_ROOT / "benchmarks").rglob("*.py")]):
        for line, name in imported_modules(path.read_text()):
            imported = [part for part in name.split(".") if part in test_modules]
            if imported and imported != [path.stem]:
                where = f"{path.relative_to(REPO_ROOT)}:{line}"
                offenders.setdefault(where, f"{where}: imports {'.'.join(imported)}")
    offenders = list(offenders.values())
    assert not offenders, ("move what these share into a helper module or test/corpus/ "
                           "(test/README.md):\n" + "\n".join(offenders))


def test_imports_are_found_at_any_depth():
    source = ("import os\nfrom corpus import kernels\n\ndef f():\n"
              "    from test_x import y\n    import test_z as t\n")
    assert list(imported_modules(source)) == [
        (1, "os"), (2, "corpus"), (2, "corpus.kernels"), (5, "test_x"), (5, "test_x.y"),
        (6, "test_z")]
