// Rules of the tt dialect defined beside TritonRules.cpp (which registers
// them): tt.gather (GatherRule.cpp) and the adjoint of tt.reduce with any
// associative combiner (CombinerRules.cpp).
#ifndef TRITONAD_LIB_AUTODIFF_RULES_TRITONRULES_H
#define TRITONAD_LIB_AUTODIFF_RULES_TRITONRULES_H

#include "tritonad/AutoDiff/GradientUtils.h"
#include "tritonad/Dialect/Triton/Dialect.h"

namespace tritonad {

/// Attaches the reverse-mode model of tt.gather.
void attachGatherRule(mlir::MLIRContext *context);

/// The adjoint of a tt.reduce whose combine region f is any associative
/// combiner of elementwise ops (Welford's (mean, m2, count), logsumexp's
/// (max, sum), ...): element i's contribution to the result R is
/// r_i = f(f(P_{i-1}, x_i), S_{i+1}) = R with P and S the inclusive scans of f
/// from either end, and dx_i is the reverse-mode derivative of that
/// expression (f cloned onto tensors, differentiated by the ordinary rules)
/// times R's adjoint. Located errors for combiners with ops that have no
/// elementwise form or no rule.
mlir::LogicalResult emitCombinerReduceAdjoint(mlir::triton::ReduceOp reduce,
                                              mlir::OpBuilder &builder, GradientUtils &state);

} // namespace tritonad

#endif
