// Reverse-mode rules of the math dialect, all declared.
#include "ElementwiseRules.h"

#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;
using namespace tritonad;
using namespace tritonad::rules;

namespace {

const RuleTable &mathRules() {
  static const RuleTable table = [] {
    RuleTable t;
    t.declare<math::ExpOp>(formulas::exp());
    t.declare<math::Exp2Op>(formulas::exp2());
    t.declare<math::ExpM1Op>(formulas::expm1());
    t.declare<math::LogOp>(formulas::log());
    t.declare<math::Log2Op>(formulas::log2());
    t.declare<math::Log1pOp>(formulas::log1p());
    t.declare<math::SqrtOp>(formulas::sqrt());
    t.declare<math::RsqrtOp>(formulas::rsqrt());
    t.declare<math::SinOp>(formulas::sin());
    t.declare<math::CosOp>(formulas::cos());
    t.declare<math::TanOp>(formulas::tan());
    t.declare<math::TanhOp>(formulas::tanh());
    t.declare<math::ErfOp>(formulas::erf());
    t.declare<math::AbsFOp>(formulas::abs());
    t.declare<math::PowFOp>(formulas::pow());
    t.declare<math::FmaOp>(formulas::fma());
    t.declare<math::FloorOp>(formulas::stepFunction());
    t.declare<math::CeilOp>(formulas::stepFunction());
    t.declare<math::TruncOp>(formulas::stepFunction());
    t.declare<math::RoundOp>(formulas::stepFunction());
    t.declare<math::RoundEvenOp>(formulas::stepFunction());
    t.declare<math::CopySignOp>({G * select(X(0) == Y, 1.0, -1.0), std::nullopt});
    return t;
  }();
  return table;
}

} // namespace

void tritonad::registerMathReverseModeRules(DialectRegistry &registry) {
  registry.addExtension(
      +[](MLIRContext *context, math::MathDialect *) { mathRules().attach(context); });
}
