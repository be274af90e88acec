#ifndef TRITONAD_TRITON_DIALECT
#define TRITONAD_TRITON_DIALECT

include "mlir/IR/OpBase.td"

// tritonad's own definition of Triton 3.6's `tt` dialect: enough of it, with
// the same names, integer enum values and assembly formats, that TTIR printed
// by Triton parses here and what we print parses back in Triton.
def Triton_Dialect : Dialect {
  let name = "tt";
  let cppNamespace = "::mlir::triton";
  let summary = "Triton's tt dialect as seen by tritonad";
  let dependentDialects = [
    "arith::ArithDialect",
    "math::MathDialect",
    "scf::SCFDialect",
    "cf::ControlFlowDialect",
    "ub::UBDialect",
  ];
  let useDefaultTypePrinterParser = 1;
}

#endif
