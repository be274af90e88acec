// The adjoint of tt.reduce with any associative combiner f (TritonRules.h).
// The specialized rules (sum, product, max/min, argmax-style selection) keep
// the combiners they know; this one takes the rest.
//
// Element i's contribution: with P_{i-1} = f(x_0..x_{i-1}) and
// S_{i+1} = f(x_{i+1}..x_{N-1}), R = f(f(P_{i-1}, x_i), S_{i+1}) (ends: the
// missing side left out; N = 1: R = x_0), and dx_i = (dR/dx_i)^T g with P and
// S held constant. P and S come from two tt.scan of f (one reversed), each
// carrying every segment's value without its last element next to its full
// value: the scan then yields the exclusive values directly, with no shift of
// an inclusive scan by one lane (a tt.gather or a one-hot reduction would
// cost O(N^2) per line; these cost what a scan costs). A flag marks the
// segments that have an element before the last (the first element has no
// P_{i-1}). The expression is then built once on whole tensors (f's scalar
// ops become the same ops on tensors) in a scratch block, and the ordinary
// reverse sweep differentiates it.
#include "TritonRules.h"

#include "../ReverseSweep.h"
#include "../TensorBuilders.h"

#include "tritonad/Analysis/CombineRegion.h"
#include "tritonad/Analysis/Dependence.h"
#include "tritonad/AutoDiff/ReverseModeInterface.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "llvm/ADT/ScopeExit.h"

using namespace mlir;
namespace tt = mlir::triton;

namespace tritonad {
namespace {

// Every op of the combine region has an elementwise form (or is a constant)
// and uses only the region's own values, and no result is plainly not
// associative (`a - b`: Triton's reduction order is unspecified, so neither
// the result nor its gradient is defined).
LogicalResult checkElementwiseCombiner(tt::ReduceOp reduce) {
  Region &region = reduce.getCombineOp();
  if (!region.hasOneBlock())
    return reduce.emitError("cannot differentiate tt.reduce: its combine region has several "
                            "blocks (control flow in the combine function); write it with "
                            "tl.where");
  unsigned n = reduce.getSrcs().size();
  for (unsigned i = 0; i < n; ++i)
    if (Operation *op = matchCombiner<arith::SubFOp, arith::DivFOp, arith::RemFOp, arith::SubIOp,
                                      arith::DivSIOp, arith::DivUIOp, arith::RemSIOp,
                                      arith::RemUIOp>(region.front(), i, n))
      return reduce.emitError("cannot differentiate tt.reduce: its combine region returns '")
             << op->getName() << "' of its two operands, which is not associative; the "
             << "reduction order is unspecified, so the result has no defined gradient";
  for (Operation &op : region.front().without_terminator()) {
    bool elementwise = isa<arith::ConstantOp>(op) ||
                       (op.hasTrait<OpTrait::Elementwise>() && op.getNumRegions() == 0);
    if (!elementwise)
      return op.emitError("cannot differentiate tt.reduce: its combine region uses '")
             << op.getName() << "', which is not an elementwise op; write the combine "
             << "function with elementwise arithmetic (tl.where for branches)";
    for (Value operand : op.getOperands())
      if (operand.getParentRegion() != &region && !operand.getDefiningOp<arith::ConstantOp>())
        return op.emitError("cannot differentiate tt.reduce: its combine region uses a value "
                            "defined outside it; pass it as a reduced operand instead");
  }
  return success();
}

// Clones the combine block's ops at the builder with `lhs`/`rhs` for its
// arguments; `shape` non-empty: as the same ops on tensors of that shape
// (results retyped, scalar constants splat). Returns the combined values.
SmallVector<Value> applyCombiner(OpBuilder &builder, Block &combine, ValueRange lhs,
                                 ValueRange rhs, ArrayRef<int64_t> shape) {
  IRMapping mapping;
  unsigned n = lhs.size();
  for (unsigned i = 0; i < n; ++i) {
    mapping.map(combine.getArgument(i), lhs[i]);
    mapping.map(combine.getArgument(n + i), rhs[i]);
  }
  // Constants, the region's own and those canonicalization hoisted out of it.
  auto copyConstant = [&](arith::ConstantOp constant) {
    if (shape.empty()) {
      mapping.map(constant.getResult(), builder.clone(*constant)->getResult(0));
      return;
    }
    auto type = RankedTensorType::get(shape, constant.getType());
    mapping.map(constant.getResult(),
                arith::ConstantOp::create(builder, constant.getLoc(), type,
                                          DenseElementsAttr::get(type, constant.getValue())));
  };
  for (Operation &op : combine.without_terminator()) {
    if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
      copyConstant(constant);
      continue;
    }
    for (Value operand : op.getOperands())
      if (auto outside = operand.getDefiningOp<arith::ConstantOp>();
          outside && !mapping.contains(operand) && outside->getBlock() != &combine)
        copyConstant(outside);
    Operation *clone = builder.clone(op, mapping);
    if (!shape.empty())
      for (Value result : clone->getResults())
        result.setType(RankedTensorType::get(shape, result.getType()));
  }
  SmallVector<Value> results;
  for (Value returned : combine.getTerminator()->getOperands())
    results.push_back(mapping.lookupOrDefault(returned));
  return results;
}

Value selectEach(OpBuilder &builder, Location loc, Value cond, Value ifTrue, Value ifFalse) {
  return arith::SelectOp::create(builder, loc, cond, ifTrue, ifFalse).getResult();
}

// f over every segment without its last element in scan order (`reverse`:
// from the end), per element: the values f(x_0..x_{i-1}) (reversed:
// f(x_{i+1}..x_{N-1})) and an i1 tensor that holds where that segment is not
// empty. Scan operands: the flag (i32), the values without the last element,
// the full values.
std::pair<SmallVector<Value>, Value> exclusiveScan(OpBuilder &builder, Location loc,
                                                   Block &combine, ValueRange xs, int axis,
                                                   bool reverse) {
  unsigned n = xs.size();
  auto flagType = cast<RankedTensorType>(xs[0].getType()).clone(builder.getI32Type());
  auto flagConstant = [&](int32_t value) -> Value {
    return arith::ConstantOp::create(
        builder, loc, flagType, DenseElementsAttr::get(flagType, builder.getI32IntegerAttr(value)));
  };
  SmallVector<Value> operands{flagConstant(0)};
  llvm::append_range(operands, xs);
  llvm::append_range(operands, xs);
  // (earlier, later) in scan order, as Triton's reverse scans see them. In
  // index order a reversed scan's later segment comes first: f keeps index
  // order either way.
  SmallVector<Value> scanned = scanWith(
      builder, loc, operands, axis, reverse,
      [&](OpBuilder &b, ValueRange earlier, ValueRange later) {
        ValueRange earlierFull = earlier.drop_front(1 + n), laterFull = later.drop_front(1 + n);
        ValueRange laterHead = later.slice(1, n);
        auto inIndexOrder = [&](ValueRange before, ValueRange after) {
          return reverse ? applyCombiner(b, combine, after, before, {})
                         : applyCombiner(b, combine, before, after, {});
        };
        SmallVector<Value> full = inIndexOrder(earlierFull, laterFull);
        SmallVector<Value> head = inIndexOrder(earlierFull, laterHead);
        Value zero = arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(0));
        Value laterHasHead =
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, later[0], zero);
        SmallVector<Value> results{arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(1))};
        for (unsigned i = 0; i < n; ++i)
          results.push_back(selectEach(b, loc, laterHasHead, head[i], earlierFull[i]));
        llvm::append_range(results, full);
        return results;
      });
  Value nonEmpty =
      arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::eq, scanned[0], flagConstant(1));
  return {SmallVector<Value>(scanned.begin() + 1, scanned.begin() + 1 + n), nonEmpty};
}

} // namespace

LogicalResult emitCombinerReduceAdjoint(tt::ReduceOp reduce, OpBuilder &builder,
                                        GradientUtils &state) {
  unsigned n = reduce.getSrcs().size();
  int axis = reduce.getAxis();
  Location loc = reduce.getLoc();
  bool anyAdjoint = false, anyActive = false;
  for (unsigned i = 0; i < n; ++i) {
    anyAdjoint |= static_cast<bool>(state.adjoint(reduce.getResult()[i]));
    anyActive |= state.isActive(reduce.getSrcs()[i]);
  }
  if (!anyAdjoint || !anyActive)
    return success();
  if (failed(checkElementwiseCombiner(reduce)))
    return failure();
  Block &combine = reduce.getCombineOp().front();
  auto srcType = cast<RankedTensorType>(reduce.getSrcs()[0].getType());
  ArrayRef<int64_t> shape = srcType.getShape();

  // The scratch block: arguments x (n), P (n), P nonempty, S (n), S nonempty;
  // body r = f(f(P, x), S), the missing sides left out by selects.
  Block scratch;
  SmallVector<Value> xs, ps, ss;
  auto addArguments = [&](SmallVector<Value> &into) {
    for (Value src : reduce.getSrcs())
      into.push_back(scratch.addArgument(src.getType(), loc));
  };
  auto maskType = srcType.clone(builder.getI1Type());
  addArguments(xs);
  addArguments(ps);
  Value pValid = scratch.addArgument(maskType, loc);
  addArguments(ss);
  Value sValid = scratch.addArgument(maskType, loc);
  {
    OpBuilder body(builder.getContext()); // (a detached block has no context)
    body.setInsertionPointToEnd(&scratch);
    SmallVector<Value> withBefore = applyCombiner(body, combine, ps, xs, shape);
    for (unsigned i = 0; i < n; ++i)
      withBefore[i] = selectEach(body, loc, pValid, withBefore[i], xs[i]);
    SmallVector<Value> whole = applyCombiner(body, combine, withBefore, ss, shape);
    for (unsigned i = 0; i < n; ++i)
      whole[i] = selectEach(body, loc, sValid, whole[i], withBefore[i]);
    tt::ReduceReturnOp::create(body, loc, TypeRange{}, whole);
  }

  // Activity: forward from the active operands' x, floats only.
  DenseSet<Value> active;
  for (unsigned i = 0; i < n; ++i)
    if (state.isActive(reduce.getSrcs()[i]) && isDifferentiableType(xs[i].getType()))
      active.insert(xs[i]);
  for (Operation &op : scratch.without_terminator())
    if (llvm::any_of(op.getOperands(), [&](Value v) { return active.contains(v); }))
      for (Value result : op.getResults())
        if (isDifferentiableType(result.getType()))
          active.insert(result);

  IRMapping forward;
  GradientUtils inner = state.nested(forward, active);
  auto cleanUp = llvm::make_scope_exit([&] { scratch.dropAllReferences(); });
  if (failed(checkDifferentiable(scratch, inner)))
    return failure();

  SmallVector<Value> x;
  for (Value src : reduce.getSrcs())
    x.push_back(state.forward(src));
  auto [before, beforeValid] = exclusiveScan(builder, loc, combine, x, axis, /*reverse=*/false);
  auto [after, afterValid] = exclusiveScan(builder, loc, combine, x, axis, /*reverse=*/true);
  for (unsigned i = 0; i < n; ++i) {
    forward.map(xs[i], x[i]);
    forward.map(ps[i], before[i]);
    forward.map(ss[i], after[i]);
  }
  forward.map(pValid, beforeValid);
  forward.map(sValid, afterValid);
  for (Operation &op : scratch.without_terminator())
    cloneForRecompute(op, builder, forward);

  Operation *result = scratch.getTerminator();
  for (unsigned i = 0; i < n; ++i) {
    Value g = state.adjoint(reduce.getResult()[i]);
    auto type = cast<RankedTensorType>(reduce.getSrcs()[i].getType());
    if (g && active.contains(result->getOperand(i)))
      inner.accumulate(builder, result->getOperand(i),
                       broadcastAlongAxis(builder, loc, g, axis, type));
  }
  if (failed(reverseSweep(scratch, builder, inner)))
    return failure();
  for (unsigned i = 0; i < n; ++i)
    if (Value dx = inner.adjoint(xs[i]))
      state.accumulate(builder, reduce.getSrcs()[i], dx);
  return success();
}

} // namespace tritonad
