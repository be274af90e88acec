"""The Python package's layers: every import between tritonad's modules (function-
local ones, relative ones and ``importlib.import_module`` of a constant name
included) goes from a higher layer to a lower one, so there is no cycle.
A new module gets a layer here; an import that goes up, or a cycle, fails this
test, naming the import."""

import ast
import os

PACKAGE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python", "tritonad")

# Lowest first. Within a layer, modules import each other only downward in this list.
LAYERS = [
    # contract: the core's face, the stage hook, records the core writes
    ["_C", "_caches", "_contract", "_core", "_hook", "_schedule", "_coverage", "_masks", "_order",
     "_regrid", "_forward_config", "_tuning", "_interpreter_mends"],
    # launch runtime primitives and the launch signature
    ["_launch_plan", "_signature", "_twin", "_render", "_source", "_memory", "_owners"],
    # launch runtime
    ["_residuals", "_scatter", "_partial", "_tuned_for_backward"],
    # interpreter
    ["_interpret"],
    # derivation
    ["_kernel_grad", "_grad"],
    # torch integration
    ["_call_plan", "_torch", "_launcher_plan", "_launcher"],
    # torch.compile
    ["_compile"],
    # public API
    ["__init__", "demo"],
]


def _modules(package):
    return sorted(f[:-3] for f in os.listdir(package) if f.endswith(".py"))


def _imports(package, module):
    """{(imported module, line)}: every module of the package `module` imports,
    anywhere in its file; a name imported from the package itself that is no
    module of it is the package's (__init__)."""
    modules = set(_modules(package)) | {"_C"}
    tree = ast.parse(open(os.path.join(package, module + ".py")).read())
    found = set()

    def named(name, line):  # (a name of the package, or a dotted path inside it)
        first = name.split(".")[0]
        found.add((first if first in modules else "__init__", line))

    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            parts = (node.module or "").split(".") if node.module else []
            if node.level == 0 and (not parts or parts[0] != "tritonad"):
                continue
            inside = parts[1:] if node.level == 0 else parts
            if inside:
                named(inside[0], node.lineno)
            else:
                for alias in node.names:
                    named(alias.name, node.lineno)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "tritonad":
                    named(parts[1] if len(parts) > 1 else "__init__", node.lineno)
        elif isinstance(node, ast.Call) and node.args and \
                isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str) \
                and getattr(node.func, "attr", getattr(node.func, "id", None)) in (
                    "import_module", "__import__"):
            parts = node.args[0].value.split(".")
            if parts[0] == "tritonad":
                named(parts[1] if len(parts) > 1 else "__init__", node.lineno)
    return {(imported, line) for imported, line in found if imported != module}


def _graph(package):
    return {module: _imports(package, module) for module in _modules(package)}


def upward_imports(package, layers):
    """Each import that goes up a layer, or sideways to a module listed after
    the importer in its layer, or to a module with no layer, as a line of text."""
    layer = {module: i for i, modules in enumerate(layers) for module in modules}
    found = []
    for module, imports in sorted(_graph(package).items()):
        for imported, line in sorted(imports):
            where = f"{module}.py:{line} imports {imported}"
            if module not in layer or imported not in layer:
                missing = module if module not in layer else imported
                found.append(f"{where} ({missing} has no layer)")
            elif layer[imported] > layer[module]:
                found.append(f"{where} (layer {layer[imported]}, {module}'s is {layer[module]})")
            elif layer[imported] == layer[module] and \
                    layers[layer[module]].index(imported) > layers[layer[module]].index(module):
                found.append(f"{where} (listed after {module} in layer {layer[module]})")
    return found


def import_cycles(package):
    """The cycles of the import graph (Tarjan's strongly connected components
    with more than one module), each sorted."""
    graph = {module: {i for i, _ in imports} for module, imports in _graph(package).items()}
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def visit(module):
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in graph.get(module, ()):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return sorted(cycles)


def test_every_module_has_a_layer():
    layered = {module for modules in LAYERS for module in modules}
    assert [m for m in _modules(PACKAGE) if m not in layered] == []


def test_imports_go_down():
    assert upward_imports(PACKAGE, LAYERS) == []


def test_no_import_cycle():
    assert import_cycles(PACKAGE) == []


def test_the_check_fails_on_an_upward_import_and_a_cycle(tmp_path):
    """A package with a function-local upward import (a cycle with the
    module-level import the other way), a relative one, an import_module of a
    constant name and a name taken from the package's __init__: each is found,
    with its line."""
    files = {
        "__init__.py": "from tritonad import _high\ngrad = None\n",
        "_low.py": "import os\n\n\ndef later():\n    from tritonad import _high\n"
                   "    return _high\n",
        "_relative.py": "from ._high import value\n",
        "_dynamic.py": "import importlib\n\nmodule = importlib.import_module('tritonad._high')\n",
        "_public.py": "from tritonad import grad\n",
        "_high.py": "from tritonad import _low\nvalue = 1\n",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    layers = [["_low", "_relative", "_dynamic", "_public"], ["_high"], ["__init__"]]
    assert upward_imports(str(tmp_path), layers) == [
        "_dynamic.py:3 imports _high (layer 1, _dynamic's is 0)",
        "_low.py:5 imports _high (layer 1, _low's is 0)",
        "_public.py:1 imports __init__ (layer 2, _public's is 0)",
        "_relative.py:1 imports _high (layer 1, _relative's is 0)",
    ]
    assert import_cycles(str(tmp_path)) == [["_high", "_low"]]
    # (sideways within a layer: only to a module listed before the importer)
    assert upward_imports(str(tmp_path), [["_low", "_high", "_relative", "_dynamic", "_public"],
                                          ["__init__"]]) == [
        "_low.py:5 imports _high (listed after _low in layer 0)",
        "_public.py:1 imports __init__ (layer 1, _public's is 0)",
    ]
    assert upward_imports(str(tmp_path), layers[1:]) == [
        "_dynamic.py:3 imports _high (_dynamic has no layer)",
        "_high.py:1 imports _low (_low has no layer)",
        "_low.py:5 imports _high (_low has no layer)",
        "_public.py:1 imports __init__ (_public has no layer)",
        "_relative.py:1 imports _high (_relative has no layer)",
    ]
