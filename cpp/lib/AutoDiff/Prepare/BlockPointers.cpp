#include "tritonad/AutoDiff/Prepare.h"

#include "../TensorBuilders.h"
#include "tritonad/Analysis/AccessAnalysis.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <limits>

using namespace mlir;
namespace tt = mlir::triton;

namespace tritonad {
namespace {

// What a block pointer denotes at one program point: tt.make_tensor_ptr's
// base, shape and strides, and its offsets with every tt.advance applied.
struct BlockPointer {
  Value base;
  SmallVector<Value> shape, strides, offsets;
};

FailureOr<BlockPointer> traceBlockPointer(OpBuilder &builder, Value ptr) {
  if (auto make = ptr.getDefiningOp<tt::MakeTensorPtrOp>())
    return BlockPointer{make.getBase(), llvm::to_vector(make.getShape()),
                        llvm::to_vector(make.getStrides()), llvm::to_vector(make.getOffsets())};
  auto advance = ptr.getDefiningOp<tt::AdvanceOp>();
  if (!advance)
    return failure();
  FailureOr<BlockPointer> inner = traceBlockPointer(builder, advance.getPtr());
  if (failed(inner) || inner->offsets.size() != advance.getOffsets().size())
    return failure();
  for (auto [offset, delta] : llvm::zip(inner->offsets, advance.getOffsets()))
    offset = arith::AddIOp::create(builder, advance.getLoc(), offset, delta);
  return inner;
}

// The row-major index along `dim` of every element of a block of `shape`:
// offset + arange(0, shape[dim]) (i64), one lane per element along `dim`.
Value lanesAlong(OpBuilder &builder, Location loc, ArrayRef<int64_t> shape, unsigned dim,
                 Value offset) {
  Type i64 = builder.getI64Type();
  auto rangeType = RankedTensorType::get({shape[dim]}, builder.getI32Type());
  Value range = tt::MakeRangeOp::create(
      builder, loc, TypeRange{rangeType}, ValueRange{},
      {builder.getNamedAttr("start", builder.getI32IntegerAttr(0)),
       builder.getNamedAttr("end", builder.getI32IntegerAttr(shape[dim]))});
  auto wide = RankedTensorType::get({shape[dim]}, i64);
  return arith::AddIOp::create(
      builder, loc,
      tt::SplatOp::create(builder, loc, wide,
                          arith::ExtSIOp::create(builder, loc, i64, offset).getResult()),
      arith::ExtSIOp::create(builder, loc, wide, range));
}

// `lanes` (one per element along `dim`), broadcast over the other dims.
Value spreadAlong(OpBuilder &builder, Location loc, ArrayRef<int64_t> shape, unsigned dim,
                  Value lanes) {
  Type element = cast<RankedTensorType>(lanes.getType()).getElementType();
  SmallVector<int64_t> current{shape[dim]};
  for (unsigned axis = 0; axis < shape.size(); ++axis) {
    if (axis == dim)
      continue;
    unsigned position = axis < dim ? axis : current.size();
    current.insert(current.begin() + position, 1);
    lanes = tt::ExpandDimsOp::create(
        builder, loc, TypeRange{RankedTensorType::get(current, element)}, ValueRange{lanes},
        {builder.getNamedAttr("axis", builder.getI32IntegerAttr(position))});
  }
  auto full = RankedTensorType::get(shape, element);
  if (lanes.getType() != full)
    lanes = tt::BroadcastOp::create(builder, loc, full, lanes);
  return lanes;
}

struct LoweredAccess {
  Value pointers;
  Value mask; // null without boundary checks
};

// `nonNegativeOffsets[dim]`: the offset along `dim` is never negative, so the
// boundary check there needs only its upper bound (which keeps the mask in the
// `index < extent` form the access analysis reads).
LoweredAccess lowerAddress(OpBuilder &builder, Location loc, const BlockPointer &block,
                           RankedTensorType tile, ArrayRef<int32_t> boundaryCheck,
                           ArrayRef<bool> nonNegativeOffsets) {
  ArrayRef<int64_t> shape = tile.getShape();
  auto i64Tile = RankedTensorType::get(shape, builder.getI64Type());
  auto ptrTile = RankedTensorType::get(shape, block.base.getType());
  Value pointers = tt::SplatOp::create(builder, loc, ptrTile, block.base);
  Value mask;
  for (unsigned dim = 0; dim < shape.size(); ++dim) {
    // (scaled by the stride before the broadcast: one i64 product per lane
    // along `dim`, not one per element of the tile)
    Value lanes = lanesAlong(builder, loc, shape, dim, block.offsets[dim]);
    Value stride = tt::SplatOp::create(builder, loc, lanes.getType(), block.strides[dim]);
    pointers = tt::AddPtrOp::create(
        builder, loc, ptrTile, pointers,
        spreadAlong(builder, loc, shape, dim, arith::MulIOp::create(builder, loc, lanes, stride)));
    if (!llvm::is_contained(boundaryCheck, static_cast<int32_t>(dim)))
      continue;
    Value index = spreadAlong(builder, loc, shape, dim, lanes);
    Value extent = tt::SplatOp::create(builder, loc, i64Tile, block.shape[dim]);
    Value inside = arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::slt, index, extent);
    if (!nonNegativeOffsets[dim]) {
      Value zero = arith::ConstantOp::create(
          builder, loc, DenseElementsAttr::get(i64Tile, builder.getI64IntegerAttr(0)));
      inside = arith::AndIOp::create(
          builder, loc,
          arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::sge, index, zero), inside);
    }
    mask = mask ? arith::AndIOp::create(builder, loc, mask, inside).getResult() : inside;
  }
  return {pointers, mask};
}

Value paddingValue(OpBuilder &builder, Location loc, RankedTensorType tile,
                   std::optional<tt::PaddingOption> padding) {
  if (!padding)
    return {};
  auto element = dyn_cast<FloatType>(tile.getElementType());
  TypedAttr value;
  if (*padding == tt::PaddingOption::PAD_NAN && element)
    value = builder.getFloatAttr(element, std::numeric_limits<double>::quiet_NaN());
  else if (element)
    value = builder.getFloatAttr(element, 0.0);
  else
    value = builder.getIntegerAttr(tile.getElementType(), 0);
  return arith::ConstantOp::create(builder, loc, DenseElementsAttr::get(tile, value));
}

} // namespace

LogicalResult lowerBlockPointers(tt::FuncOp function) {
  SmallVector<Operation *> accesses;
  function.walk([&](Operation *op) {
    if (isa<tt::LoadOp, tt::StoreOp>(op) && isa<tt::PointerType>(op->getOperand(0).getType()) &&
        isa<RankedTensorType>(cast<tt::PointerType>(op->getOperand(0).getType()).getPointeeType()))
      accesses.push_back(op);
  });
  // First every access's block pointer (its offsets with the advances
  // applied), then one analysis of which offsets are never negative.
  SmallVector<BlockPointer> blocks;
  SmallVector<Value> offsets;
  for (Operation *op : accesses) {
    OpBuilder builder(op);
    FailureOr<BlockPointer> block = traceBlockPointer(builder, op->getOperand(0));
    if (failed(block))
      return op->emitError("cannot differentiate an access through this block pointer: tritonad "
                           "follows tl.make_block_ptr and tl.advance, in loops when the "
                           "advance is the same in every iteration");
    blocks.push_back(*block);
    llvm::append_range(offsets, block->offsets);
  }
  SmallVector<bool> nonNegative = provablyNonNegative(function, offsets);
  ArrayRef<bool> remaining = nonNegative;
  for (auto [op, block] : llvm::zip(accesses, blocks)) {
    ArrayRef<bool> nonNegativeOffsets = remaining.take_front(block.offsets.size());
    remaining = remaining.drop_front(block.offsets.size());
    OpBuilder builder(op);
    Location loc = op->getLoc();
    if (auto load = dyn_cast<tt::LoadOp>(op)) {
      auto tile = cast<RankedTensorType>(load.getType());
      LoweredAccess access =
          lowerAddress(builder, loc, block, tile, load.getBoundaryCheck(), nonNegativeOffsets);
      Value other = access.mask ? paddingValue(builder, loc, tile, load.getPadding()) : Value();
      load.replaceAllUsesWith(createLoad(builder, loc, access.pointers, access.mask, other));
    } else {
      auto store = cast<tt::StoreOp>(op);
      auto tile = cast<RankedTensorType>(store.getValue().getType());
      LoweredAccess access =
          lowerAddress(builder, loc, block, tile, store.getBoundaryCheck(), nonNegativeOffsets);
      createStore(builder, loc, access.pointers, store.getValue(), access.mask);
    }
    op->erase();
  }
  return success();
}

} // namespace tritonad
