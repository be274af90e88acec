// A module as plain data (JSON) for Python-side consumers such as the Triton
// source renderer: ops with operand/result ids, structured types and
// attributes, regions and source locations. Python reads data, never the
// printed IR.
#include "Describe.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Location.h"
#include "tritonad/Dialect/Triton/Dialect.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
namespace json = llvm::json;
namespace tt = mlir::triton;

namespace tritonad {
namespace {

std::string printed(Attribute attr) {
  std::string text;
  llvm::raw_string_ostream os(text);
  attr.print(os);
  return text;
}

std::string printed(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  type.print(os);
  return text;
}

// {"shape": [..] | null, "element": "f32" | {"pointer": T}}
json::Value describeType(Type type) {
  json::Object object;
  Type element = type;
  if (auto tensor = dyn_cast<RankedTensorType>(type)) {
    json::Array shape;
    for (int64_t dim : tensor.getShape())
      shape.push_back(dim);
    object["shape"] = std::move(shape);
    element = tensor.getElementType();
  } else {
    object["shape"] = nullptr;
  }
  if (auto pointer = dyn_cast<tt::PointerType>(element)) {
    json::Object pointee;
    pointee["pointer"] = describeType(pointer.getPointeeType());
    pointee["address_space"] = pointer.getAddressSpace();
    object["element"] = std::move(pointee);
  } else {
    object["element"] = printed(element);
  }
  return object;
}

json::Value describeScalar(Attribute attr) {
  if (auto integer = dyn_cast<IntegerAttr>(attr)) {
    if (integer.getType().isInteger(1))
      return integer.getValue().getBoolValue();
    return integer.getValue().getSExtValue();
  }
  if (auto real = dyn_cast<FloatAttr>(attr)) {
    double value = real.getValueAsDouble();
    if (std::isfinite(value))
      return value;
    json::Object special; // JSON has no inf/nan
    special["float"] = std::isnan(value) ? "nan" : (value > 0 ? "inf" : "-inf");
    return special;
  }
  return nullptr;
}

json::Value describeAttribute(Attribute attr) {
  json::Value scalar = describeScalar(attr);
  if (scalar.kind() != json::Value::Null)
    return scalar;
  if (auto boolean = dyn_cast<BoolAttr>(attr))
    return boolean.getValue();
  if (auto string = dyn_cast<StringAttr>(attr))
    return string.getValue().str();
  if (auto array = dyn_cast<ArrayAttr>(attr)) {
    json::Array items;
    for (Attribute item : array)
      items.push_back(describeAttribute(item));
    return items;
  }
  if (auto ints = dyn_cast<DenseI32ArrayAttr>(attr)) {
    json::Array items;
    for (int32_t item : ints.asArrayRef())
      items.push_back(item);
    return items;
  }
  if (auto elements = dyn_cast<DenseElementsAttr>(attr)) {
    json::Object object;
    object["type"] = describeType(elements.getType());
    if (elements.isSplat()) {
      object["splat"] = describeScalar(elements.getSplatValue<Attribute>());
    } else {
      json::Array values;
      for (Attribute value : elements.getValues<Attribute>())
        values.push_back(describeScalar(value));
      object["values"] = std::move(values);
    }
    return object;
  }
  if (auto type = dyn_cast<TypeAttr>(attr)) {
    json::Object object;
    object["type"] = describeType(type.getValue());
    return object;
  }
  if (auto symbol = dyn_cast<FlatSymbolRefAttr>(attr))
    return symbol.getValue().str();
  json::Object object;
  if (auto predicate = dyn_cast<arith::CmpIPredicateAttr>(attr))
    object["enum"] = arith::stringifyCmpIPredicate(predicate.getValue()).str();
  else if (auto predicate = dyn_cast<arith::CmpFPredicateAttr>(attr))
    object["enum"] = arith::stringifyCmpFPredicate(predicate.getValue()).str();
  else
    object["text"] = printed(attr);
  return object;
}

// The user-level location of an op: the first file location (Triton wraps
// them in call-site and name locations), and the variable name if any.
json::Value describeLocation(Location loc) {
  json::Object object;
  loc->walk([&](Location nested) {
    if (auto name = dyn_cast<NameLoc>(nested); name && !object.get("name"))
      object["name"] = name.getName().str();
    if (auto file = dyn_cast<FileLineColLoc>(nested); file && !object.get("line")) {
      object["file"] = file.getFilename().str();
      object["line"] = file.getLine();
      object["column"] = file.getColumn();
    }
    return WalkResult::advance();
  });
  return object;
}

class Describer {
public:
  json::Value describeFunction(tt::FuncOp function) {
    json::Object object;
    object["name"] = function.getSymName().str();
    object["public"] = function.isPublic();
    if (!function.isExternal())
      object["body"] = describeBlock(function.getBody().front());
    return object;
  }

private:
  int64_t idOf(Value value) {
    auto [it, inserted] = ids.try_emplace(value, static_cast<int64_t>(ids.size()));
    return it->second;
  }

  json::Value describeValue(Value value) {
    json::Object object;
    object["id"] = idOf(value);
    object["type"] = describeType(value.getType());
    Location loc = isa<BlockArgument>(value) ? cast<BlockArgument>(value).getLoc()
                                             : value.getDefiningOp()->getLoc();
    if (auto name = dyn_cast<NameLoc>(loc))
      object["name"] = name.getName().str();
    return object;
  }

  json::Value describeBlock(Block &block) {
    json::Object object;
    json::Array arguments, operations;
    for (BlockArgument arg : block.getArguments())
      arguments.push_back(describeValue(arg));
    for (Operation &op : block)
      operations.push_back(describeOperation(op));
    object["arguments"] = std::move(arguments);
    object["operations"] = std::move(operations);
    return object;
  }

  json::Value describeOperation(Operation &op) {
    json::Object object;
    object["name"] = op.getName().getStringRef().str();
    json::Array operands, results, regions;
    for (Value operand : op.getOperands())
      operands.push_back(idOf(operand));
    for (Value result : op.getResults())
      results.push_back(describeValue(result));
    json::Object attributes;
    for (NamedAttribute attr : op.getAttrs())
      attributes[attr.getName().str()] = describeAttribute(attr.getValue());
    for (Region &region : op.getRegions()) {
      json::Array blocks;
      for (Block &block : region)
        blocks.push_back(describeBlock(block));
      regions.push_back(std::move(blocks));
    }
    object["operands"] = std::move(operands);
    object["results"] = std::move(results);
    object["attributes"] = std::move(attributes);
    object["regions"] = std::move(regions);
    object["location"] = describeLocation(op.getLoc());
    return object;
  }

  llvm::DenseMap<Value, int64_t> ids;
};

} // namespace

std::string describeModuleAsJson(ModuleOp module) {
  json::Array functions;
  Describer describer;
  module.walk([&](tt::FuncOp function) { functions.push_back(describer.describeFunction(function)); });
  json::Object root;
  root["functions"] = std::move(functions);
  std::string text;
  llvm::raw_string_ostream os(text);
  os << json::Value(std::move(root));
  return text;
}

} // namespace tritonad
