#include "tritonad/API.h"

#include "Describe.h"

#include "tritonad/AutoDiff/FunctionVJP.h"
#include "tritonad/AutoDiff/KernelBackward.h"
#include "tritonad/AutoDiff/FullMasks.h"
#include "tritonad/AutoDiff/ProgramOrder.h"
#include "tritonad/AutoDiff/Regrid.h"
#include "tritonad/AutoDiff/ScatterSums.h"
#include "tritonad/InitAll.h"

#include "tritonad/Dialect/Triton/Dialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace {
// "file:line:col" of the first file location inside `loc` (Triton wraps them
// in name and call-site locations); MLIR's own form otherwise.
std::string formatLocation(Location loc) {
  std::string text;
  llvm::raw_string_ostream os(text);
  // Inside Triton's own library (tl.sort, tl.max without an axis), name the
  // first frame of the user's code instead: the call site they wrote.
  FileLineColLoc fileLoc, libraryLoc;
  loc->walk([&](Location nested) {
    if (auto candidate = dyn_cast<FileLineColLoc>(nested)) {
      StringRef file = candidate.getFilename().getValue();
      if (!file.contains("/triton/language/") && !file.contains("/triton/runtime/")) {
        fileLoc = candidate;
        return WalkResult::interrupt();
      }
      if (!libraryLoc)
        libraryLoc = candidate;
    }
    return WalkResult::advance();
  });
  if (!fileLoc)
    fileLoc = libraryLoc;
  if (fileLoc)
    os << fileLoc.getFilename().getValue() << ":" << fileLoc.getLine() << ":"
       << fileLoc.getColumn();
  else
    os << loc;
  return text;
}

// Collects every diagnostic as "<loc>: <severity>: <message>", notes included,
// instead of printing them to stderr.
class DiagnosticCollector {
public:
  explicit DiagnosticCollector(MLIRContext &context)
      : handler(&context, [this](Diagnostic &diag) {
          append(diag);
          for (Diagnostic &note : diag.getNotes())
            append(note);
          return success();
        }) {}

  std::string take() { return std::move(text); }

private:
  void append(Diagnostic &diag) {
    llvm::raw_string_ostream os(text);
    os << formatLocation(diag.getLocation()) << ": ";
    switch (diag.getSeverity()) {
    case DiagnosticSeverity::Error: os << "error: "; break;
    case DiagnosticSeverity::Warning: os << "warning: "; break;
    case DiagnosticSeverity::Note: os << "note: "; break;
    case DiagnosticSeverity::Remark: os << "remark: "; break;
    }
    os << diag.str() << "\n";
  }

  std::string text;
  ScopedDiagnosticHandler handler;
};

tritonad::api::Result failedResult(DiagnosticCollector &diagnostics,
                                   const std::string &fallback) {
  tritonad::api::Result result;
  result.diagnostics = diagnostics.take();
  if (result.diagnostics.empty())
    result.diagnostics = fallback;
  return result;
}
} // namespace

namespace tritonad::api {

namespace {

// MLIR's parser and passes recurse once per nesting level: text nested far
// deeper than any Triton kernel would overflow the stack and kill Python.
constexpr int kMaxNesting = 512;

bool isAliasChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '.' ||
         c == '-';
}

bool startsShapedType(const std::string &ir, size_t i) {
  for (llvm::StringRef keyword : {"tensor<", "vector<", "memref<"})
    if (llvm::StringRef(ir).substr(i).starts_with(keyword))
      return true;
  return false;
}

// Whether the static dims `AxBx...x` starting at `i` multiply to at most 2^62.
bool shapeFits(const std::string &ir, size_t i) {
  constexpr uint64_t kLimit = uint64_t(1) << 62;
  uint64_t elements = 1;
  while (i < ir.size()) {
    if (ir[i] == '?') {
      ++i;
    } else if (std::isdigit(static_cast<unsigned char>(ir[i]))) {
      uint64_t dim = 0;
      for (; i < ir.size() && std::isdigit(static_cast<unsigned char>(ir[i])); ++i) {
        dim = dim * 10 + (ir[i] - '0');
        if (dim > kLimit)
          return false;
      }
      if (dim != 0 && elements > kLimit / dim)
        return false;
      elements *= dim;
    } else {
      return true;
    }
    if (i >= ir.size() || ir[i] != 'x')
      return true;
    ++i;
  }
  return true;
}

} // namespace

std::string checkBeforeParsing(const std::string &ir, const std::string &bufferName) {
  // Alias definitions (`!t = type`, `#a = attr`) nest as deep as their bodies
  // and the aliases they use: a chain `!t1 = !tt.ptr<!t0>` ... is a type
  // nested as deep as the chain, though its text is flat.
  llvm::StringMap<int> aliasDepth;
  std::string defining; // the alias whose definition this line is
  int definitionDepth = 0;
  int depth = 0, line = 1, column = 0;
  auto tooDeep = [&](int levels) {
    return bufferName + ":" + std::to_string(line) + ":" + std::to_string(column) +
           ": error: nesting deeper than " + std::to_string(kMaxNesting) + " levels (" +
           std::to_string(levels) + ": brackets, regions, types or aliases); tritonad "
           "refuses it rather than overflow the stack\n";
  };
  for (size_t i = 0; i < ir.size(); ++i) {
    char c = ir[i];
    ++column;
    if (c == '\n') {
      if (!defining.empty())
        aliasDepth[defining] = definitionDepth;
      defining.clear();
      ++line;
      column = 0;
    } else if (c == '"') {
      for (++i; i < ir.size() && ir[i] != '"' && ir[i] != '\n'; ++i, ++column)
        if (ir[i] == '\\')
          ++i, ++column;
      ++column;
      if (i < ir.size() && ir[i] == '\n')
        --i, --column;
    } else if (c == '/' && i + 1 < ir.size() && ir[i + 1] == '/') {
      while (i + 1 < ir.size() && ir[i + 1] != '\n')
        ++i;
    } else if ((c == 't' || c == 'v' || c == 'm') &&
               (i == 0 || !isAliasChar(ir[i - 1])) && startsShapedType(ir, i)) {
      if (!shapeFits(ir, ir.find('<', i) + 1))
        return bufferName + ":" + std::to_string(line) + ":" + std::to_string(column) +
               ": error: a shaped type with more than 2^62 elements; tritonad refuses it "
               "before MLIR's element count overflows\n";
    } else if (c == '!' || c == '#') {
      size_t end = i + 1;
      while (end < ir.size() && isAliasChar(ir[end]))
        ++end;
      llvm::StringRef name(ir.data() + i, end - i);
      column += end - i - 1;
      size_t next = end;
      while (next < ir.size() && ir[next] == ' ')
        ++next;
      bool definition = column == static_cast<int>(end - i) && depth == 0 &&
                        next < ir.size() && ir[next] == '=';
      if (definition) {
        defining = name.str();
        definitionDepth = 0;
      } else if (auto it = aliasDepth.find(name); it != aliasDepth.end()) {
        int levels = depth + it->second;
        if (levels > kMaxNesting)
          return tooDeep(levels);
        if (!defining.empty())
          definitionDepth = std::max(definitionDepth, levels);
      }
      i = end - 1;
    } else if (c == '{' || c == '(' || c == '[' || c == '<') {
      if (++depth > kMaxNesting)
        return tooDeep(depth);
      if (!defining.empty())
        definitionDepth = std::max(definitionDepth, depth);
    } else if ((c == '}' || c == ')' || c == ']' || (c == '>' && (i == 0 || ir[i - 1] != '-'))) &&
               depth > 0) {
      --depth;
    }
  }
  return "";
}

namespace {

// Parses and verifies `ir`, applies `transform`, prints the module.
template <typename Transform>
Result transformModule(const std::string &ir, const PrintOptions &print,
                       const std::string &bufferName, Transform transform) {
  if (std::string error = checkBeforeParsing(ir, bufferName); !error.empty()) {
    Result result;
    result.diagnostics = error;
    return result;
  }
  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllPasses();
  MLIRContext context(registry, MLIRContext::Threading::DISABLED);
  context.loadAllAvailableDialects();
  DiagnosticCollector diagnostics(context);

  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(ir, bufferName),
                               llvm::SMLoc());
  // parseSourceFile verifies the module after parsing.
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return failedResult(diagnostics, "failed to parse the input");
  std::string fallback;
  if (mlir::failed(transform(*module, fallback)))
    return failedResult(diagnostics, fallback);
  if (mlir::failed(verify(*module)))
    return failedResult(diagnostics, "the transformed module does not verify");

  Result result;
  llvm::raw_string_ostream os(result.output);
  OpPrintingFlags flags;
  flags.enableDebugInfo(print.debugInfo, /*prettyForm=*/false);
  flags.printNameLocAsPrefix(true); // SSA names from Python variables, as Triton prints
  if (print.generic)
    flags.printGenericOpForm();
  module->print(os, flags);
  result.ok = true;
  result.diagnostics = diagnostics.take();
  return result;
}

// Canonicalization hoists constants out of tt.reduce / tt.scan combine
// regions (they are not isolated from above); the renderer, like Triton's
// front end, makes each combine region a function of its own: clone the
// constants back in.
void sinkConstantsIntoCombineRegions(Operation *function) {
  function->walk([](Operation *op) {
    if (!isa<triton::ReduceOp, triton::ScanOp>(op))
      return;
    Region &region = op->getRegion(0);
    OpBuilder builder = OpBuilder::atBlockBegin(&region.front());
    DenseMap<Value, Value> copies;
    region.walk([&](Operation *inner) {
      for (OpOperand &use : inner->getOpOperands()) {
        auto constant = use.get().getDefiningOp<arith::ConstantOp>();
        if (!constant || region.isAncestor(constant->getParentRegion()))
          continue;
        Value &copy = copies[use.get()];
        if (!copy)
          copy = builder.clone(*constant)->getResult(0);
        use.set(copy);
      }
    });
  });
}

// Canonicalize and CSE one function: the derivative; the rest of the module
// is Triton's to optimize.
LogicalResult cleanUp(ModuleOp module, StringRef name) {
  Operation *function = module.lookupSymbol(name);
  PassManager pm(module.getContext(), function->getName().getStringRef());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  if (failed(pm.run(function)))
    return failure();
  sinkConstantsIntoCombineRegions(function);
  return success();
}

// The derived kernel inlines what it calls, and the callees stay in the
// module unreferenced. Triton rewrites block pointers before it drops dead
// functions, and fails on a callee that takes one (the attention tutorial
// passes its block pointers to its inner loop's function): drop them here.
LogicalResult dropUnreferencedFunctions(ModuleOp module) {
  PassManager pm(module.getContext());
  pm.addPass(createSymbolDCEPass());
  return pm.run(module);
}

} // namespace

Result runPipeline(const std::string &ir, const std::string &pipeline,
                   const PrintOptions &print, const std::string &bufferName) {
  return transformModule(ir, print, bufferName, [&](ModuleOp module, std::string &fallback) {
    if (pipeline.empty())
      return mlir::success();
    PassManager pm(module.getContext());
    std::string pipelineErrors;
    llvm::raw_string_ostream errorStream(pipelineErrors);
    if (mlir::failed(parsePassPipeline(pipeline, pm, errorStream))) {
      fallback = "invalid pass pipeline '" + pipeline + "': " + pipelineErrors;
      return mlir::failure();
    }
    fallback = "pass pipeline '" + pipeline + "' failed";
    return pm.run(module);
  });
}

Result differentiateFunction(const std::string &ir, const std::string &primal,
                             const std::string &into, const std::vector<unsigned> &wrt,
                             bool zeroNonFloat, const PrintOptions &print,
                             const std::string &bufferName) {
  return transformModule(ir, print, bufferName, [&](ModuleOp module, std::string &fallback) {
    fallback = "cannot differentiate @" + primal;
    if (mlir::failed(differentiateInto(module, primal, into, wrt, zeroNonFloat)))
      return mlir::failure();
    return cleanUp(module, into.empty() ? primal + "_vjp" : into);
  });
}

namespace {

SmallVector<ShadowBinding>
shadowBindingsOf(const std::vector<std::pair<std::string, std::string>> &bindings) {
  SmallVector<ShadowBinding> shadowBindings;
  for (const auto &[shadow, primalName] : bindings)
    shadowBindings.push_back({shadow, primalName});
  return shadowBindings;
}

AccumulationMode accumulationOf(Accumulation mode) {
  switch (mode) {
  case Accumulation::Auto: return AccumulationMode::Auto;
  case Accumulation::Atomic: return AccumulationMode::Atomic;
  case Accumulation::Deterministic: return AccumulationMode::Deterministic;
  }
  return AccumulationMode::Auto;
}

/// Deterministic mode: the atomics nothing else removed go through scatter
/// slots where they can; a shadow whose conditionally plain write keeps
/// slots for the other launches needs no launch check, and its schedule
/// entry says what it became.
void scatterRemaining(mlir::triton::FuncOp function,
                      const std::vector<std::pair<std::string, std::string>> &bindings,
                      KernelBackwardReport &report) {
  ScatterPlan plan = planScatterSums(function);
  emitScatterSums(function, plan);
  if (plan.slots.empty())
    return;
  report.scatter = plan.slots;
  // (a shadow keeps its launch check while one of its refused twins remains;
  // `otherSlots`: the shadows with slots that stand in for no twin)
  llvm::StringSet<> scatteredTwins, keptTwins, otherSlots;
  for (const ScatterDecision &decision : plan.decisions) {
    if (decision.refusedTwin)
      (decision.scattered ? scatteredTwins : keptTwins).insert(decision.shadowName);
    else if (decision.scattered)
      otherSlots.insert(decision.shadowName);
  }
  // (where each plain write's condition holds, its twin's slots stay empty)
  std::optional<SymbolicInt> unused;
  llvm::erase_if(report.requirements, [&](const LaunchRequirement &requirement) {
    if (!requirement.refusal.empty() || !scatteredTwins.contains(requirement.shadow))
      return false;
    unused = unused ? SymbolicInt::of(SymbolicInt::Op::And, {*unused, requirement.condition})
                    : requirement.condition;
    return !keptTwins.contains(requirement.shadow);
  });
  if (otherSlots.empty())
    report.scatter.unused = unused;
  // A shadow whose slots all stand in for a plain write's refused twin keeps
  // its plain write, the slots noted; any other takes the slots' strategy.
  const char *slots = "slots per program hold the contributions and their elements, added "
                      "into the gradient after the kernel in a fixed order, each element's sum "
                      "in fp32, rounded once: no atomics";
  for (const ScatterColumns &columns : plan.slots.columns)
    for (const auto &[bound, primalName] : bindings) {
      ScheduleEntry *entry =
          bound == columns.shadow ? report.schedule.shadow(primalName) : nullptr;
      if (!entry)
        continue;
      if (!otherSlots.contains(columns.shadow)) {
        entry->notes.push_back(std::string("where the launch's arguments let programs' tiles "
                                           "overlap, scatter slots instead (") +
                               slots + ")");
        continue;
      }
      entry->strategy = Strategy::ScatterSlots;
      entry->how = "scatter slots (deterministic mode: " + std::string(slots) + "; " +
                   entry->how + ")";
    }
}

/// Re-parallelizes `function`'s atomic accumulations where it can (a no-op
/// for the modes and schedules it does not compose with) and records what
/// became of each shadow in `report`.
mlir::LogicalResult
regridKernel(mlir::triton::FuncOp function,
             const std::vector<std::pair<std::string, std::string>> &bindings,
             AccumulationMode accumulation, bool overwrite, RegridPrograms programs,
             KernelBackwardReport &report, Regrid &regrid, std::string &fallback) {
  // Re-parallelization replaces atomics, which only the automatic mode
  // chooses; it does not compose with partial buffers or tapes yet (both
  // address scratch by the launch's program id).
  bool deterministic = accumulation == AccumulationMode::Deterministic;
  if (accumulation == AccumulationMode::Atomic || !report.partialShadows.empty() ||
      !report.tapes.empty()) {
    if (!deterministic)
      return mlir::success();
    scatterRemaining(function, bindings, report);
    return checkDeterministic(function, {});
  }
  std::vector<std::string> shadowNames;
  for (const auto &[shadow, primalName] : bindings)
    if (!shadow.empty())
      shadowNames.push_back(shadow);
  RegridReport regridReport;
  regridAccumulations(function, shadowNames, overwrite, deterministic, regridReport);
  if (deterministic) {
    // (before the variants part: the slots sit in the forward's programs,
    // which the launch numbers 0.. as the forward's grid, x fastest)
    scatterRemaining(function, bindings, report);
    if (mlir::failed(checkDeterministic(function, regridReport.notes)))
      return mlir::failure();
  }
  keepRegridPrograms(function, programs);
  llvm::erase_if(report.coverage, [&](const ShadowCoverage &covered) {
    return llvm::is_contained(regridReport.untwinned, covered.shadow);
  });
  // (deterministic mode: a part that took a plain write's twin writes each
  // element once whatever the launch: no condition left to check)
  llvm::erase_if(report.requirements, [&](const LaunchRequirement &requirement) {
    return llvm::is_contained(regridReport.untwinned, requirement.shadow);
  });
  regrid = regridReport.regrid;
  regrid.deterministic = deterministic;
  // The re-parallelized accumulations first (a shadow that parts of two
  // loops sum lists both), then why others were not: a shadow with some of
  // its accumulations left as atomics says so.
  for (bool reparallelized : {true, false})
    for (const RegridNote &note : regridReport.notes)
      for (const auto &[bound, primalName] : bindings) {
        ScheduleEntry *entry = bound == note.shadow && note.reparallelized == reparallelized
                                   ? report.schedule.shadow(primalName)
                                   : nullptr;
        if (!entry)
          continue;
        if (!reparallelized) {
          entry->notes.push_back(note.how);
        } else if (entry->strategy == Strategy::Reparallelized) {
          entry->how += "; and " + note.how;
        } else {
          entry->strategy = Strategy::Reparallelized;
          entry->how = note.how;
          entry->notes.clear();
        }
      }
  if (regrid.parts.empty())
    return mlir::success();
  if (regrid.stagedBytes > 0)
    report.tapes.push_back({"values staged for re-parallelized gradients", regrid.stagedBytes,
                            SymbolicInt::constant(1)});
  if (mlir::failed(mlir::verify(function))) {
    fallback = "internal error: the re-parallelized backward of @" +
               function.getSymName().str() +
               " does not verify (please report it; mode=\"atomic\" avoids it)";
    return mlir::failure();
  }
  return mlir::success();
}

} // namespace

Result differentiateKernel(const std::string &ir, const std::string &primal,
                           const std::string &into,
                           const std::vector<std::pair<std::string, std::string>> &bindings,
                           Accumulation mode, bool overwrite, const PrintOptions &print,
                           const std::string &bufferName, RegridPrograms programs,
                           bool fullMasks) {
  KernelBackwardReport report;
  Regrid regrid;
  std::optional<SymbolicInt> fullMasksCondition;
  std::optional<SymbolicInt> programOrder;
  Result result = transformModule(
      ir, print, bufferName,
      [&](ModuleOp module, std::string &fallback) {
        fallback = "cannot derive the backward of kernel " +
                   (primal.empty() ? "called by @" + into : "@" + primal);
        SmallVector<ShadowBinding> shadowBindings = shadowBindingsOf(bindings);
        AccumulationMode accumulation = accumulationOf(mode);
        KernelBackwardConfig options{accumulation, overwrite};
        if (mlir::failed(differentiateKernelInto(module, primal, into, shadowBindings, options,
                                                 report)))
          return mlir::failure();
        // (the cleanups assert on invalid IR, which would abort the process:
        // the verifier's located errors instead)
        if (Operation *derived = module.lookupSymbol(into);
            derived && mlir::failed(mlir::verify(derived))) {
          fallback = "internal error: the derived backward of kernel " +
                     (primal.empty() ? "called by @" + into : "@" + primal) +
                     " does not verify (please report it; mode=\"atomic\" may avoid it)";
          return mlir::failure();
        }
        if (mlir::failed(cleanUp(module, into)) || mlir::failed(dropUnreferencedFunctions(module)))
          return mlir::failure();
        auto function = module.lookupSymbol<mlir::triton::FuncOp>(into);
        if (!function)
          return mlir::success();
        auto unmark = llvm::make_scope_exit([&] { dropExclusivityMarks(function); });
        // (on the forward's grid, before any regridding: the launch path
        // evaluates the condition with the forward's grid)
        fullMasksCondition = markFullMasks(function);
        if (mlir::failed(regridKernel(function, bindings, accumulation, overwrite, programs,
                                      report, regrid, fallback)))
          return mlir::failure();
        bool specialized = specializeFullMasks(function, fullMasks);
        // (the parts, partial buffers and tapes address their programs
        // themselves: they keep the launch's order)
        if (regrid.parts.empty() && report.partialShadows.empty() && report.tapes.empty())
          if (std::optional<ProgramOrder> order = orderProgramsByWork(function)) {
            programOrder = order->work;
            ScheduleEntry entry;
            entry.kind = ScheduleEntry::Kind::Programs;
            entry.strategy = Strategy::LongestFirst;
            entry.how = "launched longest first: the launch orders the forward's programs by "
                        "decreasing work (the trip counts of the loops at " +
                        llvm::join(order->loops, ", ") +
                        " vary by program), so that no long program starts last";
            report.schedule.entries.push_back(std::move(entry));
          }
        return regrid.parts.empty() && !specialized && !programOrder ? mlir::success()
                                                                     : cleanUp(module, into);
      });
  result.schedule = std::move(report.schedule);
  result.regrid = std::move(regrid);
  result.writtenShadows = report.writtenShadows;
  result.partialShadows = report.partialShadows;
  result.partialSlotAxes = report.partialSlotAxes;
  result.coverage = report.coverage;
  result.requirements = report.requirements;
  result.tapes = report.tapes;
  result.residualBytesPerProgram = report.residuals.bytesPerProgram;
  result.residualFingerprint = report.residuals.fingerprint;
  result.fullMasks = std::move(fullMasksCondition);
  result.programOrder = std::move(programOrder);
  result.scatter = std::move(report.scatter);
  return result;
}

Result augmentForward(const std::string &ir, const std::string &primal, const std::string &into,
                      const std::vector<std::pair<std::string, std::string>> &bindings,
                      Accumulation mode, const PrintOptions &print,
                      const std::string &bufferName) {
  ResidualLayout layout;
  Result result = transformModule(
      ir, print, bufferName, [&](ModuleOp module, std::string &fallback) {
        fallback = "cannot derive the forward that saves residuals for kernel " +
                   (primal.empty() ? "called by @" + into : "@" + primal);
        if (mlir::failed(augmentForwardInto(module, primal, into, shadowBindingsOf(bindings),
                                            accumulationOf(mode), layout)))
          return mlir::failure();
        if (layout.empty())
          return mlir::success();
        if (mlir::failed(cleanUp(module, into)))
          return mlir::failure();
        return dropUnreferencedFunctions(module);
      });
  result.residualBytesPerProgram = layout.bytesPerProgram;
  result.residualFingerprint = layout.fingerprint;
  for (ScheduleEntry &entry : describeResiduals(layout))
    result.schedule.entries.push_back(std::move(entry));
  return result;
}

Result describeModule(const std::string &ir, const std::string &bufferName) {
  std::string description;
  Result result = transformModule(ir, PrintOptions{}, bufferName,
                                  [&](ModuleOp module, std::string &) {
                                    description = describeModuleAsJson(module);
                                    return mlir::success();
                                  });
  if (result.ok)
    result.output = std::move(description);
  return result;
}

} // namespace tritonad::api

