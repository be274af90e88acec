#ifndef TRITONAD_AUTODIFF_REVERSEMODEINTERFACE_H
#define TRITONAD_AUTODIFF_REVERSEMODEINTERFACE_H

#include "tritonad/AutoDiff/GradientUtils.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/OpDefinition.h"

#include "tritonad/AutoDiff/ReverseModeInterface.h.inc"

namespace tritonad {
/// Attaches the reverse-mode rules of arith, math, scf and tt to their ops.
void registerArithReverseModeRules(mlir::DialectRegistry &registry);
void registerMathReverseModeRules(mlir::DialectRegistry &registry);
void registerScfReverseModeRules(mlir::DialectRegistry &registry);
void registerTritonReverseModeRules(mlir::DialectRegistry &registry);

inline void registerReverseModeRules(mlir::DialectRegistry &registry) {
  registerArithReverseModeRules(registry);
  registerMathReverseModeRules(registry);
  registerScfReverseModeRules(registry);
  registerTritonReverseModeRules(registry);
}
} // namespace tritonad

#endif
