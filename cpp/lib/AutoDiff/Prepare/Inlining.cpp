#include "Inlining.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/InliningUtils.h"
#include "mlir/Transforms/RegionUtils.h"

using namespace mlir;
namespace tt = mlir::triton;

namespace tritonad {

namespace {

void cloneRegion(OpBuilder &, Region *src, Block *, Block *postInsertBlock, IRMapping &mapper,
                 bool shouldClone) {
  Region *insertRegion = postInsertBlock->getParent();
  if (shouldClone)
    src->cloneInto(insertRegion, postInsertBlock->getIterator(), mapper);
  else
    insertRegion->getBlocks().splice(postInsertBlock->getIterator(), src->getBlocks(),
                                     src->begin(), src->end());
}

} // namespace

LogicalResult inlineAllCalls(tt::FuncOp function) {
  auto module = function->getParentOfType<ModuleOp>();
  InlinerInterface interface(function.getContext());
  IRRewriter rewriter(function.getContext());
  for (int depth = 0;; ++depth) {
    (void)simplifyRegions(rewriter, function->getRegions());
    SmallVector<tt::CallOp> calls;
    function.walk([&](tt::CallOp call) { calls.push_back(call); });
    if (calls.empty())
      return success();
    if (depth > 64)
      return calls.front().emitError("call depth over 64 while inlining (recursion?)");
    for (tt::CallOp call : calls) {
      auto callee = module.lookupSymbol<tt::FuncOp>(call.getCallee());
      if (!callee || callee.isExternal())
        return call.emitError("cannot differentiate through a call to @")
               << call.getCallee() << ": it has no body here";
      auto noinline = callee->getAttrOfType<BoolAttr>("noinline");
      if (noinline && noinline.getValue())
        return call.emitError("cannot differentiate through @")
               << call.getCallee() << ", which is marked noinline; remove noinline=True "
               << "from the helper so tritonad can see its body";
      (void)simplifyRegions(rewriter, callee->getRegions());
      if (failed(inlineCall(interface, cloneRegion, cast<CallOpInterface>(call.getOperation()),
                            cast<CallableOpInterface>(callee.getOperation()),
                            &callee.getBody())))
        return call.emitError("failed to inline @") << call.getCallee();
      call.erase();
    }
  }
}


} // namespace tritonad
