// A small language for declaring the partial derivatives of elementwise ops:
// each rule is a formula over the op's operands X(i), its result Y and the
// result's adjoint G, e.g. `declare<math::SinOp>(rules, {G * cos(X(0))})`.
#ifndef TRITONAD_LIB_AUTODIFF_ELEMENTWISERULES_H
#define TRITONAD_LIB_AUTODIFF_ELEMENTWISERULES_H

#include "tritonad/Analysis/Padding.h"
#include "tritonad/AutoDiff/ReverseModeInterface.h"
#include "tritonad/Dialect/Triton/Dialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/IRMapping.h"

#include <atomic>
#include <cmath>
#include <functional>
#include <optional>
#include <vector>

namespace tritonad::rules {

/// Where a formula is emitted: builder, location, the op's forward values.
struct Env {
  mlir::Operation *op; // the op differentiated (for rules that call it again)
  mlir::OpBuilder &builder;
  mlir::Location loc;
  mlir::Type type; // the result type; constants take it
  llvm::SmallVector<mlir::Value> operands;
  mlir::Value result;
  mlir::Value resultAdjoint;
};

class Expr {
public:
  using Fn = std::function<mlir::Value(Env &)>;
  /// Which forward values (X(i): bit i, Y: `kResult`) the value computed
  /// depends on other than through a guard or a select's condition: the
  /// partial is inf/NaN where they are, even where G is 0.
  static constexpr unsigned kResult = 1u << 31;
  Expr(Fn fn, unsigned reads) : fn(std::move(fn)), readMask(reads) {}
  Expr(double constant)
      : fn([constant](Env &env) {
          return createFloatConstant(env.builder, env.loc, env.type, constant);
        }),
        readMask(0) {}
  mlir::Value emit(Env &env) const { return fn(env); }
  unsigned reads() const { return readMask; }

private:
  Fn fn;
  unsigned readMask;
};

/// A boolean formula (for select).
class Cond {
public:
  explicit Cond(Expr::Fn fn) : fn(std::move(fn)) {}
  mlir::Value emit(Env &env) const { return fn(env); }

private:
  Expr::Fn fn;
};

inline Expr X(unsigned i) {
  return Expr([i](Env &env) { return env.operands[i]; }, 1u << i);
}
inline const Expr Y([](Env &env) { return env.result; }, Expr::kResult);
inline const Expr G([](Env &env) { return env.resultAdjoint; }, 0);

template <typename OpT>
Expr unary(Expr a) {
  return Expr([a](Env &env) -> mlir::Value {
    return OpT::create(env.builder, env.loc, a.emit(env));
  }, a.reads());
}
template <typename OpT>
Expr binary(Expr a, Expr b) {
  return Expr([a, b](Env &env) -> mlir::Value {
    mlir::Value lhs = a.emit(env), rhs = b.emit(env);
    return OpT::create(env.builder, env.loc, lhs, rhs);
  }, a.reads() | b.reads());
}

inline Expr operator+(Expr a, Expr b) { return binary<mlir::arith::AddFOp>(a, b); }
inline Expr operator-(Expr a, Expr b) { return binary<mlir::arith::SubFOp>(a, b); }
inline Expr operator*(Expr a, Expr b) { return binary<mlir::arith::MulFOp>(a, b); }
inline Expr operator/(Expr a, Expr b) { return binary<mlir::arith::DivFOp>(a, b); }
// Triton's TTIR-to-TTGIR conversion has no arith.negf: negate as 0 - a, as
// Triton's own frontend does.
inline Expr operator-(Expr a) { return Expr(0.0) - a; }

inline Expr exp(Expr a) { return unary<mlir::math::ExpOp>(a); }
inline Expr log(Expr a) { return unary<mlir::math::LogOp>(a); }
inline Expr sqrt(Expr a) { return unary<mlir::math::SqrtOp>(a); }
inline Expr sin(Expr a) { return unary<mlir::math::SinOp>(a); }
inline Expr cos(Expr a) { return unary<mlir::math::CosOp>(a); }
// Only ops Triton 3.6 lowers (no math.trunc, math.powf, arith.negf).

inline Cond compare(mlir::arith::CmpFPredicate predicate, Expr a, Expr b) {
  return Cond([=](Env &env) -> mlir::Value {
    mlir::Value lhs = a.emit(env), rhs = b.emit(env);
    return mlir::arith::CmpFOp::create(env.builder, env.loc, predicate, lhs, rhs);
  });
}
inline Cond operator>(Expr a, Expr b) { return compare(mlir::arith::CmpFPredicate::OGT, a, b); }
inline Cond operator<(Expr a, Expr b) { return compare(mlir::arith::CmpFPredicate::OLT, a, b); }
inline Cond operator==(Expr a, Expr b) { return compare(mlir::arith::CmpFPredicate::OEQ, a, b); }

inline Expr select(Cond c, Expr a, Expr b) {
  return Expr([c, a, b](Env &env) -> mlir::Value {
    mlir::Value cond = c.emit(env), lhs = a.emit(env), rhs = b.emit(env);
    return mlir::arith::SelectOp::create(env.builder, env.loc, cond, lhs, rhs);
  }, a.reads() | b.reads());
}

inline Cond isNaN(Expr a) {
  return Cond([=](Env &env) -> mlir::Value {
    mlir::Value value = a.emit(env);
    return mlir::arith::CmpFOp::create(env.builder, env.loc, mlir::arith::CmpFPredicate::UNO,
                                       value, value);
  });
}

/// The differentiated op itself on other operands (pow(x, b - 1) in pow's rule).
inline Expr self(Expr a, Expr b) {
  return Expr([=](Env &env) -> mlir::Value {
    mlir::IRMapping mapping;
    mapping.map(env.op->getOperand(0), a.emit(env));
    mapping.map(env.op->getOperand(1), b.emit(env));
    return env.builder.clone(*env.op, mapping)->getResult(0);
  }, a.reads() | b.reads() | Expr::kResult);
}

/// Whether some lanes of the forward values `reads` names (Expr::reads) may
/// hold non-finite padding (a lane loaded with `other=float("inf")`, 0 * -inf).
/// Asked of the forward op's values and of those the backward recomputes or
/// reloads alike.
bool readsNonFinitePadding(Env &env, unsigned reads);

/// `partial` where `needsGuard` says no, select(G == 0, 0, partial) where it
/// says yes (decided per op as it is emitted). The rule that wraps a partial
/// in it answers for that partial's padding too.
inline Expr guardedWhere(Expr partial, std::function<bool(Env &)> needsGuard) {
  Expr guarded = select(G == 0.0, 0.0, partial);
  return Expr([=](Env &env) -> mlir::Value {
    return needsGuard(env) ? guarded.emit(env) : partial.emit(env);
  }, 0);
}
/// `partial`, but exactly 0 where G is 0 when it reads forward values that
/// may hold non-finite padding: such a lane gets G = 0, and f'(inf or NaN) * 0
/// = NaN (exp, sigmoid, sin, tanh, ... of 0 * -inf) would reach real lanes
/// through a sum or a broadcast's adjoint. Every declared partial is emitted
/// through it; kernels without such padding get no guard.
inline Expr guardedAgainstPadding(Expr partial) {
  unsigned reads = partial.reads();
  if (!reads)
    return partial;
  return guardedWhere(partial, [reads](Env &env) { return readsNonFinitePadding(env, reads); });
}
/// Whether exp(x) (exp2, exp10, expm1) of the op's operand may overflow to inf:
/// false where x is a difference with a maximum (softmax's exp(x - max), online
/// softmax's exp2(qk - m_ij)), which is at most 1.
bool mayOverflow(Env &env);
/// An exponential's partial, but exactly 0 where G is 0 unless its argument
/// cannot overflow: where exp(v) overflows to inf, the adjoint that reaches it
/// from a ratio or a log of 1 + exp(v) underflows to 0 (sigmoid's
/// 1 / (1 + exp(-x)) at x < -88 in fp32; a thresholded softplus's unselected
/// log(1 + exp(x))), and 0 * inf = NaN where the gradient is 0 to within the
/// float range (a hand-written backward's s * (1 - s)).
inline Expr saturating(Expr partial) {
  unsigned reads = partial.reads();
  return guardedWhere(partial, [reads](Env &env) {
    return mayOverflow(env) || readsNonFinitePadding(env, reads);
  });
}
/// `partial`, but exactly 0 where the upstream gradient G is 0. For partials
/// that divide by operand `risky` or take its log: lanes the forward masked
/// out hold arbitrary values (log(0), x / 0) and get G = 0, and 0 * inf = NaN
/// would otherwise reach real lanes through a sum or a dot. An operand that is
/// the same in every lane (a scalar, a splat such as softmax's row sum) has no
/// masked-out lanes of its own: no guard, and no cost in the backward, unless
/// a value the partial reads may hold non-finite padding (x / y's -G * Y / y).
inline Expr safe(Expr partial, unsigned risky) {
  unsigned reads = partial.reads();
  return guardedWhere(partial, [risky, reads](Env &env) {
    return !isLaneUniform(env.operands[risky]) || readsNonFinitePadding(env, reads);
  });
}

/// One partial derivative per operand (already multiplied by G); nullopt for
/// an operand that gets no gradient.
using Partials = std::vector<std::optional<Expr>>;

/// Emits the operand adjoints of an elementwise op from its partials.
llvm::LogicalResult emitElementwiseAdjoint(mlir::Operation *op, mlir::OpBuilder &builder,
                                           GradientUtils &state, const Partials &partials);

/// The model of an elementwise op declared with `declare<OpT>`: its partials
/// are the declaration's (set once, when the rule is attached).
template <typename OpT>
struct ElementwiseModel
    : public ReverseModeOpInterface::ExternalModel<ElementwiseModel<OpT>, OpT> {
  static inline std::atomic<const Partials *> partials{nullptr};
  llvm::LogicalResult emitAdjoint(mlir::Operation *op, mlir::OpBuilder &builder,
                                  GradientUtils &state) const {
    return emitElementwiseAdjoint(op, builder, state, *partials.load());
  }
};

/// A dialect's elementwise rules: each op is declared once, with its
/// partials, and attaching the table attaches a model to every op declared.
class RuleTable {
public:
  template <typename OpT>
  void declare(Partials partials) {
    rules.push_back({std::move(partials), [](mlir::MLIRContext *context, const Partials *own) {
                       ElementwiseModel<OpT>::partials.store(own);
                       OpT::template attachInterface<ElementwiseModel<OpT>>(*context);
                     }});
  }
  /// Attaches the models; the table must outlive the context (a static).
  void attach(mlir::MLIRContext *context) const {
    for (const Rule &rule : rules)
      rule.attach(context, &rule.partials);
  }

private:
  struct Rule {
    Partials partials;
    void (*attach)(mlir::MLIRContext *, const Partials *);
  };
  std::vector<Rule> rules;
};

//===----------------------------------------------------------------------===//
// Formulas shared by ops of several dialects and by libdevice functions
//===----------------------------------------------------------------------===//

namespace formulas {
inline Partials exp() { return {saturating(G * Y)}; }
inline Partials exp2() { return {saturating(G * Y * std::log(2.0))}; }
inline Partials expm1() { return {saturating(G * (Y + 1.0))}; }
inline Partials log() { return {safe(G / X(0), 0)}; }
inline Partials log2() { return {safe(G / (X(0) * std::log(2.0)), 0)}; }
inline Partials log1p() { return {safe(G / (X(0) + 1.0), 0)}; }
inline Partials sqrt() { return {safe(G * 0.5 / Y, 0)}; }
inline Partials rsqrt() { return {safe(G * -0.5 * Y * Y * Y, 0)}; }
inline Partials sin() { return {G * rules::cos(X(0))}; }
inline Partials cos() { return {-G * rules::sin(X(0))}; }
inline Partials tan() { return {G * (Y * Y + 1.0)}; }
inline Partials tanh() { return {G * (1.0 - Y * Y)}; }
inline Partials erf() { return {G * (2.0 / std::sqrt(M_PI)) * rules::exp(-(X(0) * X(0)))}; }
// |x|' = sign(x), 0 at 0 (as torch).
inline Partials abs() { return {select(X(0) > 0.0, G, select(X(0) < 0.0, -G, 0.0))}; }
// b * x^(b-1) through pow itself: exp(log(x) * ...) would be NaN for x < 0.
inline Partials pow() {
  return {safe(G * X(1) * self(X(0), X(1) - 1.0), 0),
          select(X(0) == 0.0, 0.0, safe(G * Y * rules::log(X(0)), 0))};
}
inline Partials fma() { return {G * X(1), G * X(0), G}; }
inline Partials div() { return {safe(G / X(1), 1), safe(-G * Y / X(1), 1)}; }
/// Piecewise constant (floor, ceil, trunc, round): zero almost everywhere.
inline Partials stepFunction() { return {0.0}; }
} // namespace formulas

/// Reinterpreting a float's bits (as tl.sort and tl.topk do): no gradient
/// can follow them.
template <typename OpT>
struct BitcastModel : public ReverseModeOpInterface::ExternalModel<BitcastModel<OpT>, OpT> {
  llvm::LogicalResult verifyDifferentiable(mlir::Operation *op, const GradientUtils &) const {
    return op->emitError("cannot differentiate '")
           << op->getName() << "': a differentiated float passes through integer bits here "
           << "(as tl.sort and tl.topk do), and its gradient cannot follow them";
  }
  llvm::LogicalResult emitAdjoint(mlir::Operation *op, mlir::OpBuilder &,
                                  GradientUtils &gutils) const {
    return verifyDifferentiable(op, gutils);
  }
};

} // namespace tritonad::rules

#endif
