// tritonad's definition of Triton's `tt` dialect.
#ifndef TRITONAD_DIALECT_TRITON_DIALECT_H
#define TRITONAD_DIALECT_TRITON_DIALECT_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::triton {

/// The memory that tt.load/tt.store/atomics touch.
struct GlobalMemory : public SideEffects::Resource::Base<GlobalMemory> {
  StringRef getName() final { return "<GlobalMemory>"; }
};

/// `!tt.ptr<T>` -> T, `tensor<NxPtr<T>>` -> tensor<NxT>; other types unchanged.
Type getPointeeType(Type type);
/// A type of i1 with the shape of `type` (i1 for scalars).
Type getI1SameShape(Type type);
/// `T` -> `!tt.ptr<T>`, `tensor<NxT>` -> `tensor<Nx!tt.ptr<T>>`.
Type getPointerTypeSameShape(Type type);
/// `!tt.ptr<tensor<...xT>, as>` -> `!tt.ptr<T, as>`.
Type getScalarPointerOfBlockPointer(Type type);

} // namespace mlir::triton

#include "tritonad/Dialect/Triton/TritonDialect.h.inc"
#include "tritonad/Dialect/Triton/TritonEnums.h.inc"
#define GET_TYPEDEF_CLASSES
#include "tritonad/Dialect/Triton/TritonTypes.h.inc"
#define GET_OP_CLASSES
#include "tritonad/Dialect/Triton/TritonOps.h.inc"

#endif
