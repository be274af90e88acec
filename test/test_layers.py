"""The Python package's layers: every import between tritonad's modules (function-
local ones included) goes from a higher layer to a lower one, so there is no cycle.
A new module gets a layer here; an import that goes up fails this test, naming it."""

import ast
import os

PACKAGE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python", "tritonad")

# Lowest first. Within a layer, modules import each other only downward in this list.
LAYERS = [
    # contract: the core's face, the stage hook, records the core writes
    ["_C", "_contract", "_core", "_hook", "_schedule", "_coverage", "_masks", "_order", "_regrid",
     "_forward_config", "_tuning", "_interpreter_mends"],
    # launch runtime primitives and the launch signature
    ["_launch_plan", "_signature", "_twin", "_render", "_source", "_memory", "_owners"],
    # launch runtime
    ["_residuals", "_partial"],
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
LAYER = {module: i for i, layer in enumerate(LAYERS) for module in layer}


def _imports(module):
    tree = ast.parse(open(os.path.join(PACKAGE, module + ".py")).read())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and \
                node.module.split(".")[0] == "tritonad":
            parts = node.module.split(".")
            if len(parts) > 1:
                found.add((parts[1], node.lineno))
            else:
                found.update((alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update((alias.name.split(".")[1], node.lineno) for alias in node.names
                         if alias.name.startswith("tritonad."))
    return found


def _modules():
    return sorted(f[:-3] for f in os.listdir(PACKAGE) if f.endswith(".py"))


def test_every_module_has_a_layer():
    assert [m for m in _modules() if m not in LAYER] == []


def test_imports_go_down():
    upward = []
    for module in _modules():
        for imported, line in _imports(module):
            if imported == module:
                continue
            if LAYER[imported] > LAYER[module] or (
                    LAYER[imported] == LAYER[module] and not _below_in_layer(imported, module)):
                upward.append(f"{module}.py:{line} imports {imported} (layer "
                              f"{LAYER[imported]}, {module}'s is {LAYER[module]})")
    assert upward == []


def _below_in_layer(imported, module):
    """Within one layer, a module may import those listed before it."""
    layer = LAYERS[LAYER[module]]
    return layer.index(imported) < layer.index(module)
