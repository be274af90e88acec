"""tritonad.run_pipeline on malformed and invalid input: it must raise, never die.

MLIR is built with assertions on: an input that reaches an MLIR assert aborts the
whole Python process. Every input here must instead raise tritonad.MLIRError (a
ValueError) whose message carries MLIR's diagnostics as `<file>:<line>:<col>: error: ...`,
or TypeError for non-str input.

How this file is organised:
* CASES: hand-written malformed / invalid inputs (truncated text, garbage bytes, bad
  types, unknown ops, bad attribute values, region/terminator errors, bad pass
  pipelines, deep nesting, very long input, ...), several with the expected line.
* INVALID_MLIR_CASES: every split of test/lit/Dialect/invalid.mlir (one per verifier /
  type constraint of every tt op), fed alone, with the line of its `expected-error`.
* test_no_input_kills_the_process runs the whole list in a CHILD process first; if
  an input aborts it, that test fails naming the input, and the in-process tests skip
  (so pytest itself survives and reports).
* Then every case runs in this process, and test_all_cases_then_valid_input runs the
  whole list again in one go (plus from several threads) and checks the process still
  gives the same output on valid input.

Inputs that DO abort the process today are kept out of CASES and listed in
KNOWN_ABORTS (checked in a subprocess only, see test_known_aborts).
"""

import os
import re
import subprocess
import sys
import textwrap
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

tritonad = pytest.importorskip("tritonad")

TEST_DIR = Path(__file__).resolve().parent
REPO_ROOT = TEST_DIR.parent
INVALID_MLIR = TEST_DIR / "lit" / "Dialect" / "invalid.mlir"
OPS_MLIR = TEST_DIR / "lit" / "Dialect" / "ops.mlir"
TRITON_OPS_TD = REPO_ROOT / "cpp" / "include" / "tritonad" / "Dialect" / "Triton" / "TritonOps.td"

# (no leading file group: a backtracking `[^:]*` is quadratic on 1 MB messages)
ERROR_LOC = re.compile(r":(?P<line>\d+):(?P<col>\d+): error: ")


@dataclass(frozen=True)
class Case:
    id: str
    text: str
    pipeline: str = ""
    line: int = None      # expected line of the first error (in `text`)
    match: str = None     # substring expected in the message
    located: bool = True  # message must have `:line:col: error:` (False: see FORMAT_XFAIL)


def F(body, args="", ret=""):
    """A tt.func wrapping `body` (one op per line, starting at line 2)."""
    lines = [f"tt.func @f({args}){ret} {{"]
    lines += ["  " + line for line in textwrap.dedent(body).strip("\n").split("\n")]
    lines += ["  tt.return", "}"]
    return "\n".join(lines) + "\n"


VECTOR_ADD = '''#loc = loc("/work/main/test/corpus/kernels.py":52:0)
module {
  tt.func public @vector_add_kernel(%x_ptr: !tt.ptr<f32> loc("x_ptr"(#loc)), %y_ptr: !tt.ptr<f32> loc("y_ptr"(#loc)), %out_ptr: !tt.ptr<f32> loc("out_ptr"(#loc)), %n: i32 loc("n"(#loc))) attributes {noinline = false} {
    %c256_i32 = arith.constant 256 : i32 loc(#loc1)
    %pid = tt.get_program_id x : i32 loc(#loc19)
    %offs = arith.muli %pid, %c256_i32 : i32 loc(#loc20)
    %offs_0 = tt.make_range {end = 256 : i32, start = 0 : i32} : tensor<256xi32> loc(#loc21)
    %offs_1 = tt.splat %offs : i32 -> tensor<256xi32> loc(#loc22)
    %offs_2 = arith.addi %offs_1, %offs_0 : tensor<256xi32> loc(#loc22)
    %mask = tt.splat %n : i32 -> tensor<256xi32> loc(#loc23)
    %mask_3 = arith.cmpi slt, %offs_2, %mask : tensor<256xi32> loc(#loc23)
    %x = tt.splat %x_ptr : !tt.ptr<f32> -> tensor<256x!tt.ptr<f32>> loc(#loc24)
    %x_4 = tt.addptr %x, %offs_2 : tensor<256x!tt.ptr<f32>>, tensor<256xi32> loc(#loc24)
    %x_5 = tt.load %x_4, %mask_3 : tensor<256x!tt.ptr<f32>> loc(#loc25)
    %y = tt.splat %y_ptr : !tt.ptr<f32> -> tensor<256x!tt.ptr<f32>> loc(#loc26)
    %y_6 = tt.addptr %y, %offs_2 : tensor<256x!tt.ptr<f32>>, tensor<256xi32> loc(#loc26)
    %y_7 = tt.load %y_6, %mask_3 : tensor<256x!tt.ptr<f32>> loc(#loc27)
    %0 = tt.splat %out_ptr : !tt.ptr<f32> -> tensor<256x!tt.ptr<f32>> loc(#loc11)
    %1 = tt.addptr %0, %offs_2 : tensor<256x!tt.ptr<f32>>, tensor<256xi32> loc(#loc11)
    %2 = arith.addf %x_5, %y_7 : tensor<256xf32> loc(#loc12)
    tt.store %1, %2, %mask_3 : tensor<256x!tt.ptr<f32>> loc(#loc13)
    tt.return loc(#loc14)
  } loc(#loc)
} loc(#loc)
#loc1 = loc(unknown)
#loc2 = loc("/work/main/test/corpus/kernels.py":53:24)
#loc3 = loc("/work/main/test/corpus/kernels.py":54:17)
#loc4 = loc("/work/main/test/corpus/kernels.py":54:38)
#loc5 = loc("/work/main/test/corpus/kernels.py":54:25)
#loc6 = loc("/work/main/test/corpus/kernels.py":55:18)
#loc7 = loc("/work/main/test/corpus/kernels.py":56:24)
#loc8 = loc("/work/main/test/corpus/kernels.py":56:16)
#loc9 = loc("/work/main/test/corpus/kernels.py":57:24)
#loc10 = loc("/work/main/test/corpus/kernels.py":57:16)
#loc11 = loc("/work/main/test/corpus/kernels.py":58:23)
#loc12 = loc("/work/main/test/corpus/kernels.py":58:33)
#loc13 = loc("/work/main/test/corpus/kernels.py":58:29)
#loc14 = loc("/work/main/test/corpus/kernels.py":58:4)
#loc19 = loc("pid"(#loc2))
#loc20 = loc("offs"(#loc3))
#loc21 = loc("offs"(#loc4))
#loc22 = loc("offs"(#loc5))
#loc23 = loc("mask"(#loc6))
#loc24 = loc("x"(#loc7))
#loc25 = loc("x"(#loc8))
#loc26 = loc("y"(#loc9))
#loc27 = loc("y"(#loc10))
'''

# 20000 valid lines, then one bad line (line numbers must still be exact).
_LONG_BODY = "\n".join(f"  %v{i} = arith.addi %n, %n : i32" for i in range(20000))
LONG_INPUT = ("tt.func @f(%n: i32) {\n" + _LONG_BODY +
              "\n  %bad = tt.splat %v0 : i32 -> i32\n  tt.return\n}\n")

CASES = [
    # ---- malformed text: truncation, garbage, unbalanced braces ----------------------
    Case("truncated_module", "module {", line=1),
    Case("truncated_func", "module {\n  tt.func @f() {\n", line=2),
    Case("truncated_mid_op", F("%0 = arith.addf %x,", args="%x: f32").split("\n  tt.return")[0], line=2),
    Case("truncated_type", "tt.func @f(%x: tensor<4x", line=1),
    Case("truncated_string", 'tt.func @f() {\n  tt.print "abc', line=2),
    Case("truncated_vector_add", VECTOR_ADD[: VECTOR_ADD.index("    %2 = arith.addf")], line=19),
    Case("lone_close_brace", "}", line=1),
    Case("extra_close_brace", "module {\n}\n}", line=2),
    Case("unbalanced_parens", "tt.func @f((%x: f32) { tt.return }", line=1),
    Case("trailing_garbage", "module { tt.func @f() { tt.return } } extra_stuff",
         match="extra_stuff"),
    Case("unclosed_named_module", 'module @m attributes {"ttg.num-warps" = 4 : i32} {\n'
         '  tt.func @f() { tt.return }\n', line=2),
    Case("control_bytes", "\x01\x02\x03", line=1, match="unexpected character"),
    Case("latin1_bytes", "\xff\xfe\xfd", line=1, match="unexpected character"),
    Case("non_ascii_keyword", "modul\u00e9 {}", line=1, match="unexpected character"),
    Case("punctuation", "@@@ ### $$$", line=1),
    Case("nul_bytes_then_garbage", "\x00\x00\x00 garbage", match="garbage"),
    Case("nul_inside_keyword", "mod\x00ule {}", line=1),
    Case("nul_in_unclosed_module", "module {\x00\n\x00", line=1),
    Case("bare_percent", "%", line=1, match="invalid SSA name"),
    Case("bare_block_label", "^bb0:", line=1),
    Case("bare_number", "42", line=1),
    Case("json", '{"a": 1}', line=1),
    Case("python_source", "def f(x):\n    return x\n", line=1),
    Case("ptx_text", ".version 8.0\n.target sm_90\n", line=1),
    Case("long_garbage_line", "x" * 1_000_000, line=1),
    Case("long_identifier_undefined", F("%" + "a" * 100_000 + " = arith.addi %nope, %nope : i32"),
         line=2, match="undeclared SSA value"),
    Case("long_input_error_at_end", LONG_INPUT, line=20002, match="invalid kind of type"),
    # ---- SSA / symbols / blocks ------------------------------------------------------
    Case("use_before_def", F("%0 = arith.addi %1, %1 : i32\n%1 = arith.constant 0 : i32"),
         line=2, match="does not dominate"),
    Case("undefined_value", "tt.func @f() {\n  tt.return %undefined : i32\n}", line=2,
         match="undeclared SSA value"),
    Case("ssa_redefinition", F("%0 = arith.constant 1 : i32\n%0 = arith.constant 2 : i32"),
         line=3, match="redefinition of SSA value"),
    Case("duplicate_argument", "tt.func @f(%x: f32, %x: f32) { tt.return }", line=1,
         match="already in use"),
    Case("undefined_block", "tt.func @f() {\n ^bb0:\n  cf.br ^bb7\n}", line=3,
         match="undefined block"),
    Case("duplicate_tt_func", "tt.func @f() {\n  tt.return\n}\ntt.func @f() {\n  tt.return\n}",
         line=4, match="redefinition of symbol"),
    Case("duplicate_func_func", "module {\n  func.func @g() { return }\n  func.func @g() { return }\n}",
         line=3, match="redefinition of symbol"),
    Case("public_declaration", "tt.func @f() -> f32", line=1, match="public visibility"),
    Case("entry_block_args", "tt.func @f(f32) { tt.return }", line=1, match="entry block"),
    Case("bad_symbol_name", "tt.func nonsense @f() { tt.return }", line=1),
    Case("call_missing_function", F("%0 = tt.call @nowhere(%x) : (f32) -> f32", args="%x: f32"),
         line=2, match="does not reference a valid tt.func"),
    Case("call_wrong_types", "tt.func private @g(f32) -> f32\n" +
         F("%0 = tt.call @g(%x) : (i32) -> f32", args="%x: i32"), line=3,
         match="operand type mismatch"),
    # ---- types ---------------------------------------------------------------------------
    Case("ptr_empty", "tt.func @f(%p: !tt.ptr<>) { tt.return }", line=1),
    Case("ptr_no_params", "tt.func @f(%p: !tt.ptr) { tt.return }", line=1, match="expected '<'"),
    Case("ptr_bad_address_space", "tt.func @f(%p: !tt.ptr<f32, x>) { tt.return }", line=1),
    Case("ptr_address_space_too_large", "tt.func @f(%p: !tt.ptr<f32, 99999999999>) { tt.return }",
         line=1),
    Case("ptr_unclosed", "tt.func @f(%p: !tt.ptr<f32) { tt.return }", line=1),
    Case("unknown_tt_type", "tt.func @f(%p: !tt.nosuchtype<f32>) { tt.return }", line=1,
         match="nosuchtype"),
    Case("tensor_negative_dim", "tt.func @f(%x: tensor<-1xf32>) { tt.return }", line=1),
    Case("tensor_fractional_dim", "tt.func @f(%x: tensor<0.5xf32>) { tt.return }", line=1),
    Case("tensor_bad_element", "tt.func @f(%x: tensor<4xnotatype>) { tt.return }", line=1),
    Case("tensor_dim_too_large", F("%0 = arith.constant dense<1.0> : tensor<9223372036854775808xf32>"),
         line=2, match="more than 2^62 elements"),
    Case("tensor_undefined_encoding", "tt.func @f(%x: tensor<4xf32, #foo>) { tt.return }", line=1),
    Case("dense_shape_mismatch", F("%0 = arith.constant dense<[1.0, 2.0]> : tensor<4xf32>"), line=2),
    Case("operand_type_vs_prior_use", F("%0 = arith.addf %x, %x : tensor<8xf32>",
                                        args="%x: tensor<4xf32>"), line=2,
         match="expects different type than prior uses"),
    # ---- unknown ops and dialects --------------------------------------------------------
    Case("tt_frobnicate", "module {\n  tt.frobnicate\n}", line=2, match="tt.frobnicate"),
    Case("foo_bar_custom", "module { %0 = foo.bar : i32 }", line=1, match="foo"),
    Case("foo_bar_generic", '"foo.bar"() : () -> ()', line=1, match="unregistered dialect"),
    Case("arith_unknown_op", F("%0 = arith.nosuchop %x : i32", args="%x: i32"), line=2),
    # gpu (tl.debug_barrier) and llvm (tl.assume) are loaded; other dialects are not.
    Case("nvvm_not_loaded", F("nvvm.barrier0"), line=2, match="nvvm"),
    # ---- attribute values ----------------------------------------------------------------
    Case("cache_modifier_xyz", F("%0 = tt.load %p cacheModifier = xyz : !tt.ptr<f32>",
                                 args="%p: !tt.ptr<f32>"), line=2, match="cache"),
    Case("eviction_policy_bad", F("%0 = tt.load %p evictionPolicy = evict_sometimes : !tt.ptr<f32>",
                                  args="%p: !tt.ptr<f32>"), line=2),
    Case("program_id_w", F("%0 = tt.get_program_id w : i32"), line=2, match="[x, y, z]"),
    Case("atomic_rmw_fmul", F("%0 = tt.atomic_rmw fmul, acq_rel, gpu, %p, %v : (!tt.ptr<f32>, f32) -> f32",
                              args="%p: !tt.ptr<f32>, %v: f32"), line=2),
    Case("atomic_sem_seq_cst", F("%0 = tt.atomic_rmw fadd, seq_cst, gpu, %p, %v : (!tt.ptr<f32>, f32) -> f32",
                                 args="%p: !tt.ptr<f32>, %v: f32"), line=2),
    Case("dot_precision_fp64", F("%0 = tt.dot %a, %a, %a, inputPrecision = fp64 : tensor<16x16xf32> * "
                                 "tensor<16x16xf32> -> tensor<16x16xf32>", args="%a: tensor<16x16xf32>"),
         line=2),
    Case("make_range_float_attr", F("%0 = tt.make_range {end = 64.0 : f32, start = 0 : i32} : tensor<64xi32>"),
         line=2, match="32-bit signless integer"),
    Case("reduce_axis_string", F('%0 = "tt.reduce"(%x) <{axis = "x"}> ({\n'
                                 '^bb0(%a: f32, %b: f32):\n  tt.reduce.return %a : f32\n'
                                 '}) : (tensor<4xf32>) -> f32', args="%x: tensor<4xf32>"),
         line=2, match="axis"),
    Case("missing_attribute_value", "tt.func @f() attributes {noinline = } { tt.return }", line=1,
         match="expected attribute value"),
    Case("module_attribute_missing_value", "module attributes {tt.x = } {}", line=1),
    Case("loc_unclosed", '#loc = loc("x.py":1:1)\nmodule {} loc(#loc', line=2),
    Case("loc_alias_undefined", "tt.func @f(%x: f32) {\n  tt.return\n} loc(#loc9)", line=3,
         match="never defined"),
    # ---- regions and terminators ---------------------------------------------------------
    Case("func_without_terminator", "tt.func @f() {\n  %0 = tt.get_program_id x : i32\n}", line=2,
         match="block with no terminator"),
    Case("top_level_tt_return", "tt.return", line=1, match="expects parent op 'tt.func'"),
    Case("top_level_scf_yield", "scf.yield", line=1, match="expects parent op"),
    Case("tt_return_in_scf_if", "tt.func @f(%c: i1) {\n  scf.if %c {\n    tt.return\n  }\n  tt.return\n}",
         line=3, match="expects parent op 'tt.func'"),
    Case("tt_func_in_tt_func", "tt.func @f() {\n  tt.func @g() {\n    tt.return\n  }\n  tt.return\n}",
         line=2, match="expects parent op 'builtin.module'"),
    Case("scf_for_yield_count", F("%0 = scf.for %i = %lb to %lb step %lb iter_args(%a = %lb) -> (i32) : i32 {\n"
                                  "  scf.yield\n}", args="%lb: i32"), line=2),
    Case("scf_if_result_without_else", F("%0 = scf.if %c -> (i32) {\n  %1 = arith.constant 1 : i32\n"
                                         "  scf.yield %1 : i32\n}", args="%c: i1"), line=2,
         match="else"),
    Case("reduce_without_terminator", F('%0 = "tt.reduce"(%x) <{axis = 0 : i32}> ({\n'
                                        '^bb0(%a: f32, %b: f32):\n  %s = arith.addf %a, %b : f32\n'
                                        '}) : (tensor<4xf32>) -> f32', args="%x: tensor<4xf32>"),
         line=4, match="block with no terminator"),
    Case("reduce_two_blocks", F('%0 = "tt.reduce"(%x) <{axis = 0 : i32}> ({\n'
                                '^bb0(%a: f32, %b: f32):\n  tt.reduce.return %a : f32\n'
                                '^bb1:\n  tt.reduce.return %a : f32\n'
                                '}) : (tensor<4xf32>) -> f32', args="%x: tensor<4xf32>"), line=2),
    Case("reduce_tt_return_terminator", F('%0 = "tt.reduce"(%x) <{axis = 0 : i32}> ({\n'
                                          '^bb0(%a: f32, %b: f32):\n  tt.return\n'
                                          '}) : (tensor<4xf32>) -> f32', args="%x: tensor<4xf32>"),
         line=4, match="expects parent op 'tt.func'"),
    # ---- verifier failures inside realistic TTIR (locations are Triton's) -----------------
    Case("verifier_error_line_5", F("%0 = arith.addf %x, %x : f32\n%1 = arith.mulf %0, %x : f32\n"
                                    "%2 = tt.splat %1 : f32 -> tensor<4xf32>\n"
                                    "%3 = tt.expand_dims %2 {axis = 3 : i32} : tensor<4xf32> -> tensor<4x1xf32>",
                                    args="%x: f32"), line=5, match="axis 3 out of range"),
    Case("vector_add_bad_store_python_loc",
         VECTOR_ADD.replace("tt.store %1, %2, %mask_3 : tensor<256x!tt.ptr<f32>> loc(#loc13)",
                            '"tt.store"(%1, %2, %mask) <{boundaryCheck = array<i32>, cache = 1 : i32, '
                            'evict = 1 : i32}> : (tensor<256x!tt.ptr<f32>>, tensor<256xf32>, '
                            'tensor<256xi32>) -> () loc(#loc13)'),
         match="kernels.py:58:29: error: 'tt.store' op"),
    Case("vector_add_return_value_python_loc",
         VECTOR_ADD.replace("tt.return loc(#loc14)", "tt.return %pid : i32 loc(#loc14)"),
         match="kernels.py:58:4: error: 'tt.return' op has 1 operands"),
    # ---- deep nesting (well below the depth that overflows the stack, see KNOWN_ABORTS) ---
    Case("nested_modules_300", "module {\n" * 300, line=300),
    Case("nested_parens_1000", "(" * 1000, line=1),
    Case("nested_array_attr_300", "module attributes {a = " + "[" * 300, line=1),
    Case("nested_ptr_types_200", "tt.func @f(%x: " + "!tt.ptr<" * 200 + "f32" + ">" * 199 + ") {}",
         line=1),
    Case("nested_regions_unclosed", "tt.func @f() {\n" + "scf.execute_region {\n" * 200, line=201),
    # Deep enough to overflow MLIR's recursive parser: refused before parsing.
    Case("nested_regions_20000", "tt.func @f() {\n" + "scf.execute_region {\n" * 20000,
         line=513, match="nesting deeper"),
    Case("nested_ptr_types_20000", "tt.func @f(%x: " + "!tt.ptr<" * 20000 + "f32" + ">" * 20000 +
         ") { tt.return }", line=1, match="nesting deeper"),
    # ---- shapes MLIR's element count would assert on ----------------------------------------
    Case("reshape_dynamic_shape", "tt.func @f(%x: tensor<?xf32>) {\n"
         "  %0 = tt.reshape %x : tensor<?xf32> -> tensor<4x?xf32>\n  tt.return\n}", line=2,
         match="statically shaped"),
    # refused before parsing, at the first such type (the verifier's own check, which
    # this used to reach, fires on the reshape's line).
    Case("reshape_overflowing_shape", "tt.func @f(%x: tensor<4294967296x4294967296xf32>) {\n"
         "  %0 = tt.reshape %x : tensor<4294967296x4294967296xf32> -> tensor<16xf32>\n"
         "  tt.return\n}", line=1, match="more than 2^62 elements"),
    # ---- pass pipelines ------------------------------------------------------------------
    Case("pipeline_unknown_pass", "module {}", "builtin.module(no-such-pass)", line=1,
         match="no-such-pass"),
    Case("pipeline_unbalanced", "module {}", "builtin.module(cse", line=1, match="unbalanced"),
    Case("pipeline_extra_close", "module {}", ")))", line=1),
    Case("pipeline_trailing_garbage", "module {}", "builtin.module(cse)!!!", line=1),
    Case("pipeline_empty_element", "module {}", "builtin.module(cse,)", line=1),
    Case("pipeline_unclosed_options", "module {}", "builtin.module(cse{)", line=1),
    Case("pipeline_blank", "module {}", "   ", line=1),
    Case("pipeline_bad_option_value", "module {}", "builtin.module(canonicalize{max-iterations=abc})",
         match="canonicalize", located=False),
    Case("pipeline_unknown_option", "module {}", "builtin.module(canonicalize{no-such-option=1})",
         match="no-such-option", located=False),
    Case("bad_input_good_pipeline", "tt.func @f() {\n  tt.frobnicate\n}", "builtin.module(cse)", line=2),
]

# Bad pipelines whose message today has neither `error:` nor `:line:col` (the pass
# option parser writes straight to the error stream); test_pipeline_option_errors_are_located
# is a strict xfail on them.
FORMAT_XFAIL = [c for c in CASES if not c.located]

NON_STR_INPUTS = [None, b"module {}", bytearray(b"module {}"), 42, 4.2, ["module {}"],
                  {"ir": "module {}"}, object()]

# Inputs that used to abort (SIGABRT, MLIR assertion) or crash (SIGSEGV, stack
# overflow) the process: the fuzz target of the C++ side's validation. They run in a
# subprocess only (a regression must not take pytest down) and must raise a located
# MLIRError; tritonad-opt must refuse them too (test_known_aborts_opt).
KNOWN_ABORTS = {
    # ShapedType::getNumElements asserts on dynamic dims (tt.reshape's verifier).
    "reshape_dynamic_source": F("%0 = tt.reshape %x : tensor<?xf32> -> tensor<4xf32>",
                                args="%x: tensor<?xf32>"),
    "reshape_dynamic_result": F("%0 = tt.reshape %x : tensor<4xf32> -> tensor<?xf32>",
                                args="%x: tensor<4xf32>"),
    # element count overflows int64 -> same assertion (tt.reshape verifier, or plain MLIR
    # DenseElementsAttr parsing of arith.constant).
    "reshape_overflowing_shape": F("%0 = tt.reshape %x : tensor<3037000500x3037000500xf32> -> tensor<4xf32>",
                                   args="%x: tensor<3037000500x3037000500xf32>"),
    "dense_overflowing_shape": F("%0 = arith.constant dense<1.0> : tensor<3037000500x3037000500xf32>"),
    # a load through a tensor of pointers to non-scalars: its result would be a tensor of
    # memrefs or tensors (RankedTensorType's assertion while the parser infers it).
    "load_pointers_to_memrefs": F("%0 = tt.load %p : tensor<4x!tt.ptr<memref<4xf32>>>",
                                  args="%p: tensor<4x!tt.ptr<memref<4xf32>>>"),
    "load_tensor_of_block_pointers": F("%0 = tt.load %p : tensor<4x!tt.ptr<tensor<4xf32>>>",
                                       args="%p: tensor<4x!tt.ptr<tensor<4xf32>>>"),
    # recursive-descent parser overflows the 8 MB stack (SIGSEGV).
    "nested_modules_10000": "module {" * 10000 + "}" * 10000,
    "nested_tt_funcs_3000": "tt.func @f() {" * 3000,
    "nested_array_attr_10000": "module attributes {a = " + "[" * 10000 + "]" * 10000 + "} {}",
    # alias chains: flat text, types / attributes / locations nested as deep as the chain.
    "type_alias_chain_30000": "\n".join(["!t0 = !tt.ptr<f32>"] + [
        f"!t{i} = !tt.ptr<!t{i - 1}>" for i in range(1, 30000)]) + "\ntt.func @f(%p: !t29999) { tt.return }",
    "attr_alias_chain_30000": "\n".join(["#a0 = 1 : i32"] + [
        f"#a{i} = [#a{i - 1}]" for i in range(1, 30000)]) + "\nmodule attributes {tt.x = #a29999} {}",
    "loc_alias_chain_30000": "\n".join(['#l0 = loc("a":1:1)'] + [
        f"#l{i} = loc(callsite(#l{i - 1} at #l0))" for i in range(1, 30000)]) + "\nmodule {} loc(#l29999)",
    # pointers to non-scalar element types
    "ptr_to_memref": "tt.func @f(%p: !tt.ptr<memref<4xf32>>) {\n  %v = tt.load %p : !tt.ptr<memref<4xf32>>\n  tt.return\n}",
    "ptr_to_none": "tt.func @f(%p: !tt.ptr<none>) {\n  %v = tt.load %p : !tt.ptr<none>\n  tt.return\n}",
}


def _invalid_mlir_cases():
    """Each split of invalid.mlir with the line and text of its expected-error."""
    if not INVALID_MLIR.exists():
        return []
    cases = []
    chunks = re.split(r"(?m)^// -----\s*$", INVALID_MLIR.read_text())
    annotation = re.compile(r"//\s*expected-error\s*@\+(\d+)\s*\{\{(.*)\}\}")
    for chunk in chunks:
        lines = chunk.split("\n")
        for number, text in enumerate(lines, start=1):
            found = annotation.search(text)
            if found:
                # named after the last function header at or above the annotation
                names = re.findall(r"tt\.func\s+(?:private\s+)?@(\w+)",
                                   "\n".join(lines[:number + 1]))
                cases.append(Case(f"invalid.mlir:{names[-1] if names else number}", chunk,
                                  line=number + int(found.group(1)), match=found.group(2)))
                break
    return cases


INVALID_MLIR_CASES = _invalid_mlir_cases()
ALL_CASES = CASES + INVALID_MLIR_CASES


def check_case(case):
    """Run one case; return the message (raises AssertionError on a wrong outcome)."""
    with pytest.raises(tritonad.MLIRError) as info:
        tritonad.run_pipeline(case.text, case.pipeline)
    assert isinstance(info.value, ValueError)
    message = str(info.value)
    assert message.strip(), f"{case.id}: empty message"
    if case.match is not None:
        assert case.match in message, f"{case.id}: {case.match!r} not in:\n{message}"
    if not case.located:
        return message
    assert "error:" in message, f"{case.id}: no 'error:' in:\n{message}"
    first = ERROR_LOC.search(message)
    assert first, f"{case.id}: no '<file>:<line>:<col>: error:' in:\n{message}"
    if case.line is not None:
        lines = [int(m.group("line")) for m in ERROR_LOC.finditer(message)]
        assert case.line in lines, f"{case.id}: expected an error on line {case.line}, got:\n{message}"
    return message


def valid_outputs():
    """Outputs on valid input, to compare before and after the error barrage."""
    outputs = [tritonad.run_pipeline(VECTOR_ADD, "builtin.module(canonicalize,cse)")]
    if OPS_MLIR.exists():
        outputs.append(tritonad.run_pipeline(OPS_MLIR.read_text(), "builtin.module(cse)",
                                             debug_info=False))
    assert "tt.store" in outputs[0] and "kernels.py" in outputs[0]
    return outputs


# ---- the child-process guard ---------------------------------------------------------------

_CHILD = r"""
import sys, threading
sys.path.insert(0, sys.argv[1])
import test_errors as t
for case in t.ALL_CASES:
    print("CASE", case.id, flush=True)
    try:
        t.check_case(case)
    except AssertionError as e:
        print("WRONG", case.id, str(e)[:300].replace("\n", " | "), flush=True)
print("CASE <threads>", flush=True)
errors = []
def worker():
    try:
        for case in t.CASES:
            try:
                t.tritonad.run_pipeline(case.text, case.pipeline)
                errors.append(case.id)
            except t.tritonad.MLIRError:
                pass
    except BaseException as e:
        errors.append(repr(e))
threads = [threading.Thread(target=worker) for _ in range(4)]
[th.start() for th in threads]
[th.join() for th in threads]
print("THREAD-ERRORS", errors, flush=True)
t.valid_outputs()
print("ALIVE", flush=True)
"""


@pytest.fixture(scope="module")
def child_run():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(Path(tritonad.__file__).resolve().parent.parent)] +
        ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(TEST_DIR)], capture_output=True,
                          text=True, env=env, timeout=900)
    return proc


def test_case_list_is_big_enough():
    assert len(CASES) >= 60
    assert len({c.id for c in ALL_CASES}) == len(ALL_CASES), "case ids must be distinct"
    assert len({(c.text, c.pipeline) for c in CASES}) == len(CASES), "inputs must be distinct"
    assert len(INVALID_MLIR_CASES) >= 60, "invalid.mlir was not found or not parsed"


def test_no_input_kills_the_process(child_run):
    proc = child_run
    if proc.returncode != 0 or "ALIVE" not in proc.stdout:
        started = re.findall(r"^CASE (.*)$", proc.stdout, re.M)
        last = started[-1] if started else "<before the first case>"
        pytest.fail(f"the child process died (exit {proc.returncode}) while running case "
                    f"{last!r}; stderr tail:\n{proc.stderr[-3000:]}", pytrace=False)
    assert "THREAD-ERRORS []" in proc.stdout, proc.stdout[-2000:]


def _skip_if_child_died(child_run):
    if child_run.returncode != 0 or "ALIVE" not in child_run.stdout:
        pytest.skip("an input kills the process (see test_no_input_kills_the_process)")


@pytest.mark.parametrize("case", ALL_CASES, ids=lambda c: c.id)
def test_raises_located_error(case, child_run):
    _skip_if_child_died(child_run)
    check_case(case)


@pytest.mark.parametrize("value", NON_STR_INPUTS, ids=lambda v: type(v).__name__)
def test_non_str_raises_type_error(value):
    with pytest.raises(TypeError):
        tritonad.run_pipeline(value)


def test_non_str_pipeline_raises_type_error():
    with pytest.raises(TypeError):
        tritonad.run_pipeline("module {}", 123)
    with pytest.raises(TypeError):
        tritonad.run_pipeline("module {}", None)


def test_buffer_name_is_used_in_locations(child_run):
    _skip_if_child_died(child_run)
    with pytest.raises(tritonad.MLIRError, match=r"kernel\.ttir:2:3: error: "):
        tritonad.run_pipeline("tt.func @f() {\n  tt.frobnicate\n}", name="kernel.ttir")


def test_every_tt_op_has_an_invalid_case():
    """invalid.mlir (fed here one split at a time) has a case for every op of TritonOps.td."""
    if not TRITON_OPS_TD.exists():
        pytest.skip("TritonOps.td not in this checkout")
    ops = set(re.findall(r'TT_(?:Cast)?Op<"([a-z_.]+)"', TRITON_OPS_TD.read_text()))
    assert len(ops) > 30
    covered = {op for op in ops for c in INVALID_MLIR_CASES
               if re.search(r'(^|[\s"(])tt\.' + re.escape(op) + r'[\s"(]', c.text)}
    assert ops - covered == set(), f"no invalid case for: {sorted(ops - covered)}"


@pytest.mark.xfail(strict=True, reason="pass-option parse errors are not reported as "
                   "'<file>:<line>:<col>: error:' (C++ side: parsePassPipeline's error stream)")
@pytest.mark.parametrize("case", FORMAT_XFAIL, ids=lambda c: c.id)
def test_pipeline_option_errors_are_located(case, child_run):
    _skip_if_child_died(child_run)
    check_case(Case(case.id, case.text, case.pipeline, match=case.match, located=True))


def test_all_cases_then_valid_input(child_run):
    """The whole list in this one process, then the process still works on valid input."""
    _skip_if_child_died(child_run)
    before = valid_outputs()
    for case in ALL_CASES:
        check_case(case)
    for value in NON_STR_INPUTS:
        with pytest.raises(TypeError):
            tritonad.run_pipeline(value)
    # several threads at once (run_pipeline releases the GIL)
    failures = []

    def worker():
        for case in CASES:
            try:
                tritonad.run_pipeline(case.text, case.pipeline)
                failures.append(case.id)
            except tritonad.MLIRError:
                pass

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    after = valid_outputs()
    assert after == before
    assert tritonad.run_pipeline("module {}", "builtin.module(cse)").startswith("module {")


@pytest.mark.parametrize("name", sorted(KNOWN_ABORTS))
def test_known_aborts(name):
    """Inputs that used to kill the process now raise a located MLIRError (in a child)."""
    code = ("import sys, tritonad\n"
            "try:\n"
            "    tritonad.run_pipeline(sys.stdin.read())\n"
            "    print('ACCEPTED')\n"
            "except tritonad.MLIRError as e:\n"
            "    print('MLIRError', 'error:' in str(e))\n")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(Path(tritonad.__file__).resolve().parent.parent)] +
        ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    proc = subprocess.run([sys.executable, "-c", code], input=KNOWN_ABORTS[name], text=True,
                          capture_output=True, env=env, timeout=300)
    assert proc.returncode == 0, (name, proc.returncode, proc.stderr[-2000:])
    assert "MLIRError True" in proc.stdout, (name, proc.stdout[-500:])


def _tritonad_opt():
    import shutil
    found = shutil.which("tritonad-opt")
    in_tree = Path(__file__).resolve().parent.parent / "build/dev/cpp/tools/tritonad-opt/tritonad-opt"
    return found or (str(in_tree) if in_tree.exists() else None)


@pytest.mark.parametrize("name", ["nested_modules_10000", "type_alias_chain_30000",
                                  "loc_alias_chain_30000"])
def test_known_aborts_opt(name, tmp_path):
    """tritonad-opt refuses the same inputs with an error, from a file and from stdin."""
    opt = _tritonad_opt()
    if opt is None:
        pytest.skip("tritonad-opt not built or installed")
    path = tmp_path / "input.mlir"
    path.write_text(KNOWN_ABORTS[name])
    for args, stdin in (([str(path)], None), ([], KNOWN_ABORTS[name])):
        proc = subprocess.run([opt, *args], input=stdin, text=True, capture_output=True,
                              timeout=300)
        assert proc.returncode == 1, (name, proc.returncode, proc.stderr[-2000:])
        assert "error: nesting deeper than" in proc.stderr, proc.stderr[-2000:]
