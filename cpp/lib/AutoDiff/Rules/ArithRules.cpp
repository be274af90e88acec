// Reverse-mode rules of the arith dialect.
#include "ElementwiseRules.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace tritonad;
using namespace tritonad::rules;

namespace {

const RuleTable &arithRules() {
  static const RuleTable table = [] {
    RuleTable t;
    t.declare<arith::AddFOp>({G, G});
    t.declare<arith::SubFOp>({G, -G});
    // (G * x is guarded where x may hold non-finite padding, as every partial)
    t.declare<arith::MulFOp>({G * X(1), G * X(0)});
    t.declare<arith::DivFOp>(formulas::div());
    t.declare<arith::NegFOp>({-G});
    // C fmod: y = a - trunc(a / b) * b, so trunc(a / b) = (a - y) / b (Triton
    // has no trunc op to lower).
    t.declare<arith::RemFOp>({G, safe(-G * (X(0) - Y) / X(1), 1)});
    // Ties split the gradient evenly, as torch.maximum / torch.minimum do.
    Expr onMax = select(X(0) > X(1), G, select(X(0) == X(1), G * 0.5, 0.0));
    Expr onMaxRhs = select(X(1) > X(0), G, select(X(0) == X(1), G * 0.5, 0.0));
    Expr onMin = select(X(0) < X(1), G, select(X(0) == X(1), G * 0.5, 0.0));
    Expr onMinRhs = select(X(1) < X(0), G, select(X(0) == X(1), G * 0.5, 0.0));
    // A NaN operand: maxnum/minnum return the other one (it gets G), maximum/
    // minimum propagate the NaN (the NaN operand gets G, as in torch).
    auto ignoringNaN = [](Expr mine, Expr other, Expr rule) {
      return select(isNaN(other), G, select(isNaN(mine), 0.0, rule));
    };
    auto propagatingNaN = [](Expr mine, Expr other, Expr rule) {
      return select(isNaN(mine), G, select(isNaN(other), 0.0, rule));
    };
    t.declare<arith::MaxNumFOp>(
        {ignoringNaN(X(0), X(1), onMax), ignoringNaN(X(1), X(0), onMaxRhs)});
    t.declare<arith::MaximumFOp>({propagatingNaN(X(0), X(1), onMax),
                                   propagatingNaN(X(1), X(0), onMaxRhs)});
    t.declare<arith::MinNumFOp>(
        {ignoringNaN(X(0), X(1), onMin), ignoringNaN(X(1), X(0), onMinRhs)});
    t.declare<arith::MinimumFOp>({propagatingNaN(X(0), X(1), onMin),
                                   propagatingNaN(X(1), X(0), onMinRhs)});
    return t;
  }();
  return table;
}

// select(c, a, b): the gradient flows to the chosen side.
struct SelectModel
    : public ReverseModeOpInterface::ExternalModel<SelectModel, arith::SelectOp> {
  LogicalResult emitAdjoint(Operation *op, OpBuilder &builder, GradientUtils &state) const {
    auto select = cast<arith::SelectOp>(op);
    Value g = state.adjoint(select.getResult());
    if (!g)
      return success();
    Location loc = op->getLoc();
    Value cond = state.forward(select.getCondition());
    Value zero = createZero(builder, loc, g.getType());
    if (state.isActive(select.getTrueValue()))
      state.accumulate(builder, select.getTrueValue(),
                       arith::SelectOp::create(builder, loc, cond, g, zero));
    if (state.isActive(select.getFalseValue()))
      state.accumulate(builder, select.getFalseValue(),
                       arith::SelectOp::create(builder, loc, cond, zero, g));
    return success();
  }
};

// Precision casts: the adjoint is cast back to the operand's type.
template <typename OpT, typename InverseOpT>
struct FloatCastModel
    : public ReverseModeOpInterface::ExternalModel<FloatCastModel<OpT, InverseOpT>, OpT> {
  LogicalResult emitAdjoint(Operation *op, OpBuilder &builder, GradientUtils &state) const {
    Value g = state.adjoint(op->getResult(0));
    Value source = op->getOperand(0);
    if (!g || !state.isActive(source))
      return success();
    // (g may be a rounding of a value of the source's precision, a product's
    // adjoint: its round trip would lose what a hand-written backward keeps, so
    // the unrounded value is taken)
    Value delta;
    if (auto rounded = g.getDefiningOp<arith::TruncFOp>();
        rounded && rounded.getIn().getType() == source.getType())
      delta = rounded.getIn();
    else
      delta = InverseOpT::create(builder, op->getLoc(), source.getType(), g);
    state.accumulate(builder, source, delta);
    return success();
  }
};

} // namespace

void tritonad::registerArithReverseModeRules(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, arith::ArithDialect *) {
    arithRules().attach(context);
    arith::SelectOp::attachInterface<SelectModel>(*context);
    arith::ExtFOp::attachInterface<FloatCastModel<arith::ExtFOp, arith::TruncFOp>>(*context);
    arith::TruncFOp::attachInterface<FloatCastModel<arith::TruncFOp, arith::ExtFOp>>(*context);
    arith::BitcastOp::attachInterface<BitcastModel<arith::BitcastOp>>(*context);
  });
}
