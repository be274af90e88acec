// Reverse-mode rules of the math dialect, all declared.
#include "ElementwiseRules.h"

#include "mlir/Dialect/Math/IR/Math.h"

#include <cmath>

using namespace mlir;
using namespace tritonad;
using namespace tritonad::rules;

namespace {

const RuleTable &mathRules() {
  static const RuleTable table = [] {
    const double ln2 = std::log(2.0);
    const double twoOverSqrtPi = 2.0 / std::sqrt(M_PI);
    RuleTable t;
    declare<math::ExpOp>(t, {G * Y});
    declare<math::Exp2Op>(t, {G * Y * ln2});
    declare<math::ExpM1Op>(t, {G * (Y + 1.0)});
    declare<math::LogOp>(t, {safe(G / X(0), 0)});
    declare<math::Log2Op>(t, {safe(G / (X(0) * ln2), 0)});
    declare<math::Log1pOp>(t, {safe(G / (X(0) + 1.0), 0)});
    declare<math::SqrtOp>(t, {safe(G * 0.5 / Y, 0)});
    declare<math::RsqrtOp>(t, {safe(G * -0.5 * Y * Y * Y, 0)});
    declare<math::SinOp>(t, {G * cos(X(0))});
    declare<math::CosOp>(t, {-G * sin(X(0))});
    declare<math::TanOp>(t, {G * (Y * Y + 1.0)});
    declare<math::TanhOp>(t, {G * (1.0 - Y * Y)});
    declare<math::ErfOp>(t, {G * twoOverSqrtPi * exp(-(X(0) * X(0)))});
    // |x|' = sign(x), 0 at 0 (as torch).
    declare<math::AbsFOp>(t, {select(X(0) > 0.0, G, select(X(0) < 0.0, -G, 0.0))});
    declare<math::PowFOp>(t, {safe(G * X(1) * self(X(0), X(1) - 1.0), 0),
                              select(X(0) == 0.0, 0.0, safe(G * Y * log(X(0)), 0))});
    declare<math::FmaOp>(t, {G * X(1), G * X(0), G});
    declare<math::FloorOp>(t, {0.0});
    declare<math::CeilOp>(t, {0.0});
    declare<math::TruncOp>(t, {0.0});
    declare<math::RoundOp>(t, {0.0});
    declare<math::RoundEvenOp>(t, {0.0});
    declare<math::CopySignOp>(t, {G * select(X(0) == Y, 1.0, -1.0), std::nullopt});
    return t;
  }();
  return table;
}

} // namespace

void tritonad::registerMathReverseModeRules(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, math::MathDialect *) {
    attachElementwiseModels<mathRules, math::ExpOp, math::Exp2Op, math::ExpM1Op, math::LogOp,
                            math::Log2Op, math::Log1pOp, math::SqrtOp, math::RsqrtOp,
                            math::SinOp, math::CosOp, math::TanOp, math::TanhOp, math::ErfOp,
                            math::AbsFOp, math::PowFOp, math::FmaOp, math::FloorOp,
                            math::CeilOp, math::TruncOp, math::RoundOp, math::RoundEvenOp,
                            math::CopySignOp>(context);
  });
}
