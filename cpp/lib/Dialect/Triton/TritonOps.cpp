#include "tritonad/Dialect/Triton/Dialect.h"

#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/FunctionImplementation.h"
#include "llvm/ADT/STLExtras.h"

#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::triton;

#define GET_OP_CLASSES
#include "tritonad/Dialect/Triton/TritonOps.cpp.inc"

namespace {
ArrayRef<int64_t> shapeOf(Type type) {
  if (auto tensor = dyn_cast<RankedTensorType>(type))
    return tensor.getShape();
  return {};
}

std::string shapeString(ArrayRef<int64_t> shape) {
  std::string text = "[";
  llvm::interleave(
      shape, [&](int64_t d) { text += std::to_string(d); },
      [&] { text += ", "; });
  return text + "]";
}

unsigned bitWidthOf(Type type) {
  Type element = getElementTypeOrSelf(type);
  if (isa<PointerType>(element))
    return 64;
  return element.getIntOrFloatBitWidth();
}

// Adds a read (and, for side-effecting variants, a write) of global memory.
void addGlobalMemoryEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>> &effects,
    bool readOnly) {
  effects.emplace_back(MemoryEffects::Read::get(), GlobalMemory::get());
  if (!readOnly)
    effects.emplace_back(MemoryEffects::Write::get(), GlobalMemory::get());
}
} // namespace

//===----------------------------------------------------------------------===//
// Memory effects
//===----------------------------------------------------------------------===//

void LoadOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>> &effects) {
  effects.emplace_back(MemoryEffects::Read::get(), &getPtrMutable(), GlobalMemory::get());
  if (getIsVolatile())
    effects.emplace_back(MemoryEffects::Write::get(), GlobalMemory::get());
}

void ExternElementwiseOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>> &effects) {
  if (!getPure())
    addGlobalMemoryEffects(effects, /*readOnly=*/false);
}

void ElementwiseInlineAsmOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>> &effects) {
  if (!getPure())
    addGlobalMemoryEffects(effects, /*readOnly=*/false);
}

//===----------------------------------------------------------------------===//
// Verifiers
//===----------------------------------------------------------------------===//

LogicalResult BitcastOp::verify() {
  if (bitWidthOf(getSrc().getType()) != bitWidthOf(getType()))
    return emitOpError("source and result element types differ in bit width");
  if (shapeOf(getSrc().getType()) != shapeOf(getType()))
    return emitOpError("source and result shapes differ");
  return success();
}

LogicalResult SplatOp::verify() {
  if (isa<RankedTensorType>(getSrc().getType()))
    return emitOpError("source must be a scalar, got ") << getSrc().getType();
  return success();
}

LogicalResult ExpandDimsOp::verify() {
  ArrayRef<int64_t> src = getSrc().getType().getShape();
  int64_t axis = getAxis();
  if (axis < 0 || axis > static_cast<int64_t>(src.size()))
    return emitOpError("axis ") << axis << " out of range for rank " << src.size();
  SmallVector<int64_t> expected(src);
  expected.insert(expected.begin() + axis, 1);
  if (ArrayRef<int64_t>(expected) != getType().getShape())
    return emitOpError("result shape must be ") << shapeString(expected);
  return success();
}

// The element count, or nullopt when it does not fit in int64_t.
static std::optional<int64_t> elementCount(ArrayRef<int64_t> shape) {
  int64_t count = 1;
  for (int64_t size : shape)
    if (size < 0 || llvm::MulOverflow(count, size, count))
      return std::nullopt;
  return count;
}

LogicalResult ReshapeOp::verify() {
  std::optional<int64_t> src = elementCount(getSrc().getType().getShape());
  std::optional<int64_t> dst = elementCount(getType().getShape());
  if (!src || !dst)
    return emitOpError("tensor too large: its element count overflows int64");
  if (*src != *dst)
    return emitOpError("source and result must have the same number of elements");
  return success();
}

LogicalResult BroadcastOp::verify() {
  ArrayRef<int64_t> src = getSrc().getType().getShape();
  ArrayRef<int64_t> dst = getType().getShape();
  if (src.size() != dst.size())
    return emitOpError("source and result must have the same rank");
  for (auto [s, d] : llvm::zip(src, dst))
    if (s != d && s != 1)
      return emitOpError("can only broadcast dimensions of size 1, got ")
             << shapeString(src) << " -> " << shapeString(dst);
  return success();
}

LogicalResult JoinOp::verify() {
  SmallVector<int64_t> expected(getLhs().getType().getShape());
  expected.push_back(2);
  if (ArrayRef<int64_t>(expected) != getType().getShape())
    return emitOpError("result shape must be ") << shapeString(expected);
  return success();
}

LogicalResult SplitOp::verify() {
  ArrayRef<int64_t> src = getSrc().getType().getShape();
  if (src.empty() || src.back() != 2)
    return emitOpError("the last dimension of the source must be 2");
  if (src.drop_back() != getOutLHS().getType().getShape())
    return emitOpError("result shape must be ") << shapeString(src.drop_back());
  return success();
}

LogicalResult TransOp::verify() {
  ArrayRef<int32_t> order = getOrder();
  ArrayRef<int64_t> src = getSrc().getType().getShape();
  if (order.size() != src.size())
    return emitOpError("order must have one entry per dimension");
  SmallVector<bool> seen(src.size(), false);
  SmallVector<int64_t> expected;
  for (int32_t dim : order) {
    if (dim < 0 || dim >= static_cast<int32_t>(src.size()) || seen[dim])
      return emitOpError("order must be a permutation of the dimensions");
    seen[dim] = true;
    expected.push_back(src[dim]);
  }
  if (ArrayRef<int64_t>(expected) != getType().getShape())
    return emitOpError("result shape must be ") << shapeString(expected);
  return success();
}

LogicalResult MakeRangeOp::verify() {
  int64_t start = getStartAttr().getInt(), end = getEndAttr().getInt();
  auto type = getType();
  if (type.getRank() != 1 || !type.getElementType().isInteger(32))
    return emitOpError("result must be a 1-d tensor of i32");
  if (end <= start || type.getShape()[0] != end - start)
    return emitOpError("result size must be end - start > 0");
  return success();
}

LogicalResult DotOp::verify() {
  ArrayRef<int64_t> a = getA().getType().getShape();
  ArrayRef<int64_t> b = getB().getType().getShape();
  ArrayRef<int64_t> c = getC().getType().getShape();
  if (a.size() != b.size() || a.size() != c.size() || a.size() < 2 || a.size() > 3)
    return emitOpError("operands must all be rank 2 (or 3, batched)");
  size_t r = a.size();
  if (a[r - 1] != b[r - 2])
    return emitOpError("inner dimensions differ: ") << shapeString(a) << " x " << shapeString(b);
  if (c[r - 2] != a[r - 2] || c[r - 1] != b[r - 1] || (r == 3 && (a[0] != b[0] || a[0] != c[0])))
    return emitOpError("accumulator shape ") << shapeString(c) << " does not match";
  return success();
}

namespace {
// Shared checks of tt.reduce and tt.scan: same-shaped operands, axis in range,
// and a combine region taking (lhs..., rhs...) scalars returning N scalars.
LogicalResult verifyCombineRegion(Operation *op, Region &region, ValueRange srcs) {
  Block &block = region.front();
  size_t n = srcs.size();
  if (block.getNumArguments() != 2 * n)
    return op->emitOpError("combine region must take ") << 2 * n << " arguments";
  for (size_t i = 0; i < 2 * n; ++i) {
    Type expected = getElementTypeOrSelf(srcs[i % n].getType());
    if (block.getArgument(i).getType() != expected)
      return op->emitOpError("combine region argument ") << i << " must be " << expected;
  }
  Operation *terminator = block.getTerminator();
  if (terminator->getNumOperands() != n)
    return op->emitOpError("combine region must return ") << n << " values";
  for (size_t i = 0; i < n; ++i)
    if (terminator->getOperand(i).getType() != getElementTypeOrSelf(srcs[i].getType()))
      return op->emitOpError("combine region result ") << i << " has the wrong type";
  return success();
}

LogicalResult verifyAxisAndShapes(Operation *op, ValueRange srcs, int64_t axis) {
  if (srcs.empty())
    return op->emitOpError("needs at least one operand");
  auto first = cast<RankedTensorType>(srcs[0].getType());
  for (Value src : srcs)
    if (cast<RankedTensorType>(src.getType()).getShape() != first.getShape())
      return op->emitOpError("operands must have the same shape");
  if (axis < 0 || axis >= first.getRank())
    return op->emitOpError("axis ") << axis << " out of range for rank " << first.getRank();
  return success();
}
} // namespace

LogicalResult ReduceOp::verify() {
  if (failed(verifyAxisAndShapes(*this, getSrcs(), getAxis())))
    return failure();
  if (getNumResults() != getSrcs().size())
    return emitOpError("must have one result per operand");
  auto shape = cast<RankedTensorType>(getSrcs()[0].getType()).getShape();
  SmallVector<int64_t> reduced(shape);
  reduced.erase(reduced.begin() + getAxis());
  for (auto [src, result] : llvm::zip(getSrcs(), getResults())) {
    Type element = getElementTypeOrSelf(src.getType());
    Type expected = reduced.empty() ? element : RankedTensorType::get(reduced, element);
    if (result.getType() != expected)
      return emitOpError("result type must be ") << expected << ", got " << result.getType();
  }
  return success();
}

LogicalResult ReduceOp::verifyRegions() {
  return verifyCombineRegion(*this, getCombineOp(), getSrcs());
}

LogicalResult ScanOp::verify() {
  if (failed(verifyAxisAndShapes(*this, getSrcs(), getAxis())))
    return failure();
  if (getNumResults() != getSrcs().size())
    return emitOpError("must have one result per operand");
  for (auto [src, result] : llvm::zip(getSrcs(), getResults()))
    if (src.getType() != result.getType())
      return emitOpError("result types must match operand types");
  return success();
}

LogicalResult ScanOp::verifyRegions() {
  return verifyCombineRegion(*this, getCombineOp(), getSrcs());
}

LogicalResult ReturnOp::verify() {
  auto function = cast<FuncOp>((*this)->getParentOp());
  ArrayRef<Type> results = function.getFunctionType().getResults();
  if (getNumOperands() != results.size())
    return emitOpError("has ") << getNumOperands() << " operands, but enclosing function @"
                               << function.getName() << " returns " << results.size();
  for (auto [i, pair] : llvm::enumerate(llvm::zip(getOperandTypes(), results)))
    if (std::get<0>(pair) != std::get<1>(pair))
      return emitOpError("type of return operand ") << i << " (" << std::get<0>(pair)
                                                    << ") does not match function result type ("
                                                    << std::get<1>(pair) << ")";
  return success();
}

LogicalResult CallOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto callee = symbolTable.lookupNearestSymbolFrom<FuncOp>(*this, getCalleeAttr());
  if (!callee)
    return emitOpError("'") << getCallee() << "' does not reference a valid tt.func";
  FunctionType type = callee.getFunctionType();
  if (type.getNumInputs() != getNumOperands() || type.getNumResults() != getNumResults())
    return emitOpError("operand or result count does not match the callee's type");
  for (auto [operand, expected] : llvm::zip(getOperandTypes(), type.getInputs()))
    if (operand != expected)
      return emitOpError("operand type mismatch: expected ") << expected << ", got " << operand;
  for (auto [result, expected] : llvm::zip(getResultTypes(), type.getResults()))
    if (result != expected)
      return emitOpError("result type mismatch: expected ") << expected << ", got " << result;
  return success();
}

//===----------------------------------------------------------------------===//
// tt.func
//===----------------------------------------------------------------------===//

void FuncOp::build(OpBuilder &builder, OperationState &state, StringRef name,
                   FunctionType type, ArrayRef<NamedAttribute> attrs) {
  state.addAttribute(SymbolTable::getSymbolAttrName(), builder.getStringAttr(name));
  state.addAttribute(getFunctionTypeAttrName(state.name), TypeAttr::get(type));
  state.attributes.append(attrs.begin(), attrs.end());
  state.addRegion();
}

ParseResult FuncOp::parse(OpAsmParser &parser, OperationState &result) {
  auto buildFuncType = [](Builder &builder, ArrayRef<Type> argTypes, ArrayRef<Type> results,
                          function_interface_impl::VariadicFlag, std::string &) {
    return builder.getFunctionType(argTypes, results);
  };
  return function_interface_impl::parseFunctionOp(
      parser, result, /*allowVariadic=*/false, getFunctionTypeAttrName(result.name),
      buildFuncType, getArgAttrsAttrName(result.name), getResAttrsAttrName(result.name));
}

void FuncOp::print(OpAsmPrinter &printer) {
  function_interface_impl::printFunctionOp(printer, *this, /*isVariadic=*/false,
                                           getFunctionTypeAttrName(), getArgAttrsAttrName(),
                                           getResAttrsAttrName());
}
