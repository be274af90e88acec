"""bf16 in Triton 3.6's CPU interpreter (TRITON_INTERPRET=1), for interpreter
scripts whose kernels take bf16 tensors: `install()` mends four gaps of
plain Triton, not of tritonad (python/tritonad/_interpreter_mends.py has
those). The interpreter holds bf16 as its raw uint16 bits: in three places
it computes on the bits, and it rounds fp32 to bf16 toward zero (a GPU
rounds to nearest even; the bias adds up in sums of rounded terms, 4x the
error of torch's own bf16 in attention's dQ and dK).
"""

import ctypes

import numpy as np
import triton
from triton.runtime import interpreter

_installed = False


def _widened(x):
    # bf16 bits to fp32 (exact)
    if x.dtype == triton.language.bfloat16:
        bits = x.data.astype(np.uint32) << 16
        return interpreter.TensorHandle(bits.view(np.float32), triton.language.float32)
    return x


def _rounded(fp32):
    # fp32 to bf16 bits, to nearest even
    bits = fp32.view(np.uint32).astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def install():
    global _installed
    if _installed:
        return
    _installed = True

    # The interpreter multiplies bf16 tiles as their raw uint16 bits in tl.dot:
    # widen them to fp32 first.
    dot = interpreter.InterpreterBuilder.create_dot

    def create_dot(self, a, b, d, input_precision, max_num_imprecise_acc):
        return dot(self, _widened(a), _widened(b), d, input_precision, max_num_imprecise_acc)
    interpreter.InterpreterBuilder.create_dot = create_dot

    # `x.to(tl.bfloat16)` of fp32: to nearest even, as on a GPU.
    cast = interpreter.InterpreterBuilder.cast_impl

    def cast_impl(self, src, dst_type):
        if src.dtype.scalar == triton.language.float32 and \
                dst_type.scalar == triton.language.bfloat16:
            return interpreter.TensorHandle(_rounded(np.ascontiguousarray(src.data)),
                                            triton.language.bfloat16)
        return cast(self, src, dst_type)
    interpreter.InterpreterBuilder.cast_impl = cast_impl

    # Nor in elementwise arithmetic (`a.to(tl.bfloat16) + b.to(tl.bfloat16)` adds
    # the bits): compute in fp32, rounded back to bf16 to nearest even.
    binary_op = interpreter.InterpreterBuilder.binary_op

    def bf16_binary_op(self, lhs, rhs, op):
        if lhs.dtype.scalar != triton.language.bfloat16:
            return binary_op(self, lhs, rhs, op)
        output = op(_widened(lhs).data, _widened(rhs).data)
        if output.dtype == np.bool_:
            return interpreter.TensorHandle(output, lhs.dtype.scalar)
        return interpreter.TensorHandle(_rounded(output.astype(np.float32)),
                                        triton.language.bfloat16)
    interpreter.InterpreterBuilder.binary_op = bf16_binary_op

    # Nor does it add bf16 atomically ("Unsupported data type", even where the
    # mask is false): add each masked element in fp32, rounded to nearest even.
    rmw = interpreter.InterpreterBuilder.create_atomic_rmw

    def create_atomic_rmw(self, op, ptr, val, mask, sem, scope):
        if val.dtype != triton.language.bfloat16:
            return rmw(self, op, ptr, val, mask, sem, scope)
        assert op == interpreter._ir.ATOMIC_OP.FADD, op
        addresses = np.ascontiguousarray(ptr.data).reshape(-1)
        values = np.ascontiguousarray(val.data).reshape(-1)
        enabled = np.ascontiguousarray(mask.data).reshape(-1)
        old = np.zeros_like(values)
        for i in np.flatnonzero(enabled):
            cell = ctypes.c_uint16.from_address(int(addresses[i]))
            old[i] = cell.value
            total = (np.array([cell.value], np.uint32) << 16).view(np.float32) + \
                (np.array([values[i]], np.uint32) << 16).view(np.float32)
            bits = int(total.view(np.uint32)[0])
            cell.value = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
        return interpreter.TensorHandle(old.reshape(val.data.shape), val.dtype.scalar)
    interpreter.InterpreterBuilder.create_atomic_rmw = create_atomic_rmw
