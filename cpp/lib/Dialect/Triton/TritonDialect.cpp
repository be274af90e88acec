#include "tritonad/Dialect/Triton/Dialect.h"

#include "mlir/IR/DialectImplementation.h"
#include "mlir/Transforms/InliningUtils.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/FunctionImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::triton;

#include "tritonad/Dialect/Triton/TritonDialect.cpp.inc"
#include "tritonad/Dialect/Triton/TritonEnums.cpp.inc"
#define GET_TYPEDEF_CLASSES
#include "tritonad/Dialect/Triton/TritonTypes.cpp.inc"

namespace {
// Lets MLIR's `inline` pass inline tt.call, as Triton's make_ttir does; a
// callee marked `noinline = true` stays a call.
struct TritonInlinerInterface : public DialectInlinerInterface {
  using DialectInlinerInterface::DialectInlinerInterface;

  bool isLegalToInline(Operation *, Operation *callable, bool) const final {
    auto noinline = callable->getAttrOfType<BoolAttr>("noinline");
    return !noinline || !noinline.getValue();
  }
  bool isLegalToInline(Region *, Region *, bool, IRMapping &) const final { return true; }
  bool isLegalToInline(Operation *, Region *, bool, IRMapping &) const final { return true; }

  void handleTerminator(Operation *op, ValueRange valuesToReplace) const final {
    for (auto [result, replacement] : llvm::zip(valuesToReplace, op->getOperands()))
      result.replaceAllUsesWith(replacement);
  }
  void handleTerminator(Operation *op, Block *newDest) const final {
    OpBuilder builder(op);
    cf::BranchOp::create(builder, op->getLoc(), newDest, op->getOperands());
    op->erase();
  }
};
} // namespace

void TritonDialect::initialize() {
  addInterfaces<TritonInlinerInterface>();
  addTypes<
#define GET_TYPEDEF_LIST
#include "tritonad/Dialect/Triton/TritonTypes.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "tritonad/Dialect/Triton/TritonOps.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

Type PointerType::parse(AsmParser &parser) {
  Type pointee;
  int addressSpace = 1;
  if (parser.parseLess() || parser.parseType(pointee))
    return Type();
  if (succeeded(parser.parseOptionalComma()) && parser.parseInteger(addressSpace))
    return Type();
  if (parser.parseGreater())
    return Type();
  // Scalars, pointers, and tensors (block pointers) only: a tensor of pointers
  // to anything else would make a tensor of invalid elements when loaded.
  if (!isa<IntegerType, FloatType, PointerType, RankedTensorType>(pointee)) {
    parser.emitError(parser.getNameLoc(), "!tt.ptr to ")
        << pointee << ": Triton pointers point to scalars, pointers or tensors";
    return Type();
  }
  return PointerType::get(pointee, addressSpace);
}

void PointerType::print(AsmPrinter &printer) const {
  printer << "<" << getPointeeType();
  if (getAddressSpace() != 1)
    printer << ", " << getAddressSpace();
  printer << ">";
}

Type mlir::triton::getPointeeType(Type type) {
  // (a tensor of block pointers has no pointee tensor: the type is returned
  // as it is, and the verifiers of the ops that take it refuse it)
  if (auto tensor = dyn_cast<RankedTensorType>(type))
    if (auto ptr = dyn_cast<PointerType>(tensor.getElementType()))
      return TensorType::isValidElementType(ptr.getPointeeType())
                 ? Type(tensor.clone(ptr.getPointeeType()))
                 : type;
  if (auto ptr = dyn_cast<PointerType>(type))
    return ptr.getPointeeType();
  return type;
}

Type mlir::triton::getI1SameShape(Type type) {
  auto i1 = IntegerType::get(type.getContext(), 1);
  if (auto tensor = dyn_cast<RankedTensorType>(type))
    return tensor.clone(i1);
  return i1;
}

Type mlir::triton::getPointerTypeSameShape(Type type) {
  if (auto tensor = dyn_cast<RankedTensorType>(type))
    return tensor.clone(PointerType::get(tensor.getElementType(), 1));
  return PointerType::get(type, 1);
}

Type mlir::triton::getScalarPointerOfBlockPointer(Type type) {
  auto ptr = cast<PointerType>(type);
  auto block = cast<RankedTensorType>(ptr.getPointeeType());
  return PointerType::get(block.getElementType(), ptr.getAddressSpace());
}
