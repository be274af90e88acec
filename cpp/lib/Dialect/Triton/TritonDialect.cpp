#include "tritonad/Dialect/Triton/Dialect.h"

#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/FunctionImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::triton;

#include "tritonad/Dialect/Triton/TritonDialect.cpp.inc"
#include "tritonad/Dialect/Triton/TritonEnums.cpp.inc"
#define GET_TYPEDEF_CLASSES
#include "tritonad/Dialect/Triton/TritonTypes.cpp.inc"

void TritonDialect::initialize() {
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
  return PointerType::get(pointee, addressSpace);
}

void PointerType::print(AsmPrinter &printer) const {
  printer << "<" << getPointeeType();
  if (getAddressSpace() != 1)
    printer << ", " << getAddressSpace();
  printer << ">";
}

Type mlir::triton::getPointeeType(Type type) {
  if (auto tensor = dyn_cast<RankedTensorType>(type))
    if (auto ptr = dyn_cast<PointerType>(tensor.getElementType()))
      return tensor.clone(ptr.getPointeeType());
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
