// A module as JSON data (see Describe.cpp).
#ifndef TRITONAD_API_DESCRIBE_H
#define TRITONAD_API_DESCRIBE_H

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace tritonad {

/// {"functions": [{"name", "public", "body": block}]}; a block is
/// {"arguments": [value], "operations": [op]}; an op is {"name", "operands":
/// [value id], "results": [value], "attributes": {name: attribute},
/// "regions": [[block]], "location": {"file", "line", "column", "name"}}; a
/// value is {"id", "type", "name"?}; a type is {"shape": [int] | null,
/// "element": "f32" | {"pointer": type, "address_space"}}.
std::string describeModuleAsJson(mlir::ModuleOp module);

} // namespace tritonad

#endif
