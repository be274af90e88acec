#include "tritonad/AutoDiff/Regrid.h"
#include "tritonad/AutoDiff/ScatterSums.h"
#include "tritonad/Transforms/Passes.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

namespace tritonad {
#define GEN_PASS_DEF_REGRID
#include "tritonad/Transforms/Passes.h.inc"

namespace {

struct RegridPass : public impl::RegridBase<RegridPass> {
  using RegridBase::RegridBase;

  void runOnOperation() override {
    RegridReport report;
    std::vector<std::string> names(shadows.begin(), shadows.end());
    regridAccumulations(getOperation(), names, overwrite, deterministic, report);
    if (deterministic) {
      ScatterPlan plan = planScatterSums(getOperation());
      emitScatterSums(getOperation(), plan);
    }
    if (deterministic && failed(checkDeterministic(getOperation(), report.notes)))
      return signalPassFailure();
    keepRegridPrograms(getOperation(), programs);
    dropExclusivityMarks(getOperation());
    mlir::Location loc = getOperation().getLoc();
    if (report.unwrappedLoads)
      mlir::emitRemark(loc) << report.unwrappedLoads
                            << " load(s) of tiles wrapped at an extent whose lanes past it only "
                               "meet zeros in products: loaded unwrapped, 0 past the extent";
    for (const RegridNote &note : report.notes)
      mlir::emitRemark(loc) << note.shadow << ": " << note.how;
    for (const RegridPart &part : report.regrid.parts)
      mlir::emitRemark(loc) << "part " << part.shadow << ": grouped by "
                            << part.key.size() << " key value(s)"
                            << (part.lowerVaries ? ", starting where its key says" : "")
                            << ", launch " << part.phase + 1 << " of the parts"
                            << (part.hasCoverage && !part.coverage.wraps.empty()
                                    ? ", written once where no offset wraps or the mask "
                                      "leaves out the lanes that do (" +
                                          std::to_string(part.coverage.wraps.size()) +
                                          " remainder(s))"
                                    : "");
    if (!report.regrid.parts.empty())
      mlir::emitRemark(loc) << (report.regrid.mainPart ? "the forward's schedule remains"
                                                       : "nothing remains in the forward's "
                                                         "schedule");
  }
};

} // namespace
} // namespace tritonad
