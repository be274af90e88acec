// tt.gather (tl.gather(src, index, axis)): out[.., i, ..] = src[.., index[.., i, ..], ..].
#include "TritonRules.h"

#include "../TensorBuilders.h"

#include "tritonad/AutoDiff/ReverseModeInterface.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
namespace tt = mlir::triton;

namespace tritonad {
namespace {

// d_src[.., j, ..] = sum_i g[.., i, ..] * (index[.., i, ..] == j), in registers:
// a one-hot compare of every output position i with every source position j
// along the axis, then a sum over i. Its cost is O(K_src * K_index) per line
// along the axis (a scatter-add through memory would be O(K_index), but it
// needs scratch and atomics for repeated indices). The index has no gradient.
struct GatherModel : public ReverseModeOpInterface::ExternalModel<GatherModel, tt::GatherOp> {
  LogicalResult emitAdjoint(Operation *op, OpBuilder &builder, GradientUtils &state) const {
    auto gather = cast<tt::GatherOp>(op);
    Value g = state.adjoint(gather.getResult());
    if (!g || !state.isActive(gather.getSrc()))
      return success();
    Location loc = op->getLoc();
    int axis = gather.getAxis();
    auto srcType = cast<RankedTensorType>(gather.getSrc().getType());
    auto indexType = cast<RankedTensorType>(gather.getIndices().getType());
    // [.., K_index, K_src, ..]: the index's shape with the source's axis after its own.
    SmallVector<int64_t> pairShape(indexType.getShape());
    pairShape.insert(pairShape.begin() + axis + 1, srcType.getDimSize(axis));
    Type indexElement = indexType.getElementType();
    auto pairIndexType = RankedTensorType::get(pairShape, indexElement);

    Value index = broadcastAlongAxis(builder, loc, state.forward(gather.getIndices()), axis + 1,
                                     pairIndexType);
    Value position = indexAlongAxis(builder, loc, pairIndexType, axis + 1);
    unsigned indexWidth = indexElement.getIntOrFloatBitWidth();
    if (indexWidth > 32)
      position = arith::ExtSIOp::create(builder, loc, pairIndexType, position);
    else if (indexWidth < 32)
      position = arith::TruncIOp::create(builder, loc, pairIndexType, position);
    Value hit = arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::eq, index, position);

    // Summed in f32 for f16/bf16 (sumAlongAxis), rounded once.
    auto gPair = broadcastAlongAxis(builder, loc, g, axis + 1,
                                    RankedTensorType::get(pairShape, srcType.getElementType()));
    Value picked = arith::SelectOp::create(builder, loc, hit, gPair,
                                           createZero(builder, loc, gPair.getType()));
    state.accumulate(builder, gather.getSrc(), sumAlongAxis(builder, loc, picked, axis));
    return success();
  }
};

} // namespace

void attachGatherRule(MLIRContext *context) {
  tt::GatherOp::attachInterface<GatherModel>(*context);
}

} // namespace tritonad
