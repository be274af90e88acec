// The tritonad._C extension. Built with RTTI and exceptions (pybind11 needs
// them), so it includes no MLIR header: it talks to the core through API.h.
#include "tritonad/API.h"
#include "tritonad/LaunchContract.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <stdexcept>
#include <string>

namespace py = pybind11;

namespace {
struct MLIRError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// ("const", v) | ("arg", name) | ("programs", axis) | ("pid", axis) | ("slot",) |
// (op, operand, ...):
// nested tuples, so they survive Triton's JSON metadata as lists.
py::tuple symbolicToPython(const tritonad::SymbolicInt &symbol) {
  using Op = tritonad::SymbolicInt::Op;
  switch (symbol.op) {
  case Op::Constant: return py::make_tuple("const", symbol.value);
  case Op::Argument: return py::make_tuple("arg", symbol.name);
  case Op::NumPrograms: return py::make_tuple("programs", symbol.value);
  case Op::ProgramId: return py::make_tuple("pid", symbol.value);
  case Op::ProgramSlot: return py::make_tuple("slot");
  default: break;
  }
  static const char *names[] = {"", "", "", "", "add", "sub", "mul", "divs", "rems", "min", "max",
                                "lt", "le", "gt", "ge", "eq", "ne", "and", "or", "xor",
                                "select"};
  py::list items;
  items.append(names[static_cast<int>(symbol.op)]);
  for (const auto &operand : symbol.operands)
    items.append(symbolicToPython(operand));
  return py::tuple(items);
}

// {"digits": [(coefficient, extent)], "clamps": [([(digit, k)], bound)],
//  "condition": expression}, and "wraps" (as clamps) where there are any
py::dict shadowCoverageToPython(const tritonad::ShadowCoverage &shadow) {
  py::list digits, clamps, wraps;
  for (const auto &digit : shadow.digits)
    digits.append(py::make_tuple(symbolicToPython(digit.coefficient),
                                 symbolicToPython(digit.extent)));
  auto clampToPython = [](const tritonad::ShadowCoverage::Clamp &clamp) {
    py::list terms;
    for (const auto &[digit, k] : clamp.terms)
      terms.append(py::make_tuple(digit, k));
    return py::make_tuple(terms, symbolicToPython(clamp.bound));
  };
  for (const auto &clamp : shadow.clamps)
    clamps.append(clampToPython(clamp));
  for (const auto &wrap : shadow.wraps)
    wraps.append(clampToPython(wrap));
  py::dict entry;
  entry["digits"] = digits;
  entry["clamps"] = clamps;
  if (!shadow.wraps.empty())
    entry["wraps"] = wraps;
  entry["condition"] = symbolicToPython(shadow.condition);
  return entry;
}

// {shadow: its coverage}
py::dict coverageToPython(const std::vector<tritonad::ShadowCoverage> &coverage) {
  py::dict result;
  for (const auto &shadow : coverage)
    result[py::str(shadow.shadow)] = shadowCoverageToPython(shadow);
  return result;
}
// Calls the core without the GIL (Triton compiles on several threads) and
// turns its diagnostics into MLIRError.
template <typename Call>
tritonad::api::Result callCore(Call call) {
  tritonad::api::Result result;
  {
    py::gil_scoped_release release;
    result = call();
  }
  if (!result.ok)
    throw MLIRError(result.diagnostics);
  return result;
}

tritonad::api::Accumulation accumulationFrom(const std::string &modeName) {
  using tritonad::api::Accumulation;
  if (modeName == "auto")
    return Accumulation::Auto;
  if (modeName == "atomic")
    return Accumulation::Atomic;
  if (modeName == "deterministic")
    return Accumulation::Deterministic;
  throw py::value_error("mode must be 'auto', 'atomic' or 'deterministic', got '" + modeName +
                        "'");
}

tritonad::RegridPrograms regridProgramsFrom(const std::string &name) {
  using tritonad::RegridPrograms;
  if (name == "all")
    return RegridPrograms::All;
  if (name == "main")
    return RegridPrograms::Main;
  if (name == "parts")
    return RegridPrograms::Parts;
  throw py::value_error("programs must be 'all', 'main' or 'parts', got '" + name + "'");
}

py::list scheduleToPython(const tritonad::Schedule &schedule) {
  py::list entries;
  for (const tritonad::ScheduleEntry &entry : schedule.entries) {
    py::dict item;
    item["kind"] = entry.kindName();
    item["subject"] = entry.subject;
    item["location"] = entry.location;
    item["strategy"] = tritonad::strategyName(entry.strategy);
    item["how"] = entry.how;
    item["notes"] = entry.notes;
    entries.append(item);
  }
  return entries;
}

// None, or {'bytes': per program, 'fingerprint': equal in forward and backward}.
py::object residualsToPython(const tritonad::api::Result &result) {
  if (result.residualBytesPerProgram == 0)
    return py::none();
  py::dict residuals;
  residuals["bytes"] = result.residualBytesPerProgram;
  residuals["fingerprint"] = result.residualFingerprint;
  return residuals;
}

tritonad::api::PrintOptions printOptions(bool generic, bool debugInfo) {
  tritonad::api::PrintOptions print;
  print.generic = generic;
  print.debugInfo = debugInfo;
  return print;
}
} // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "tritonad's compiled MLIR core";
  py::register_exception<MLIRError>(m, "MLIRError", PyExc_ValueError);

  m.def(
      "run_pipeline",
      [](const std::string &ir, const std::string &pipeline, bool generic, bool debugInfo,
         const std::string &bufferName) {
        tritonad::api::PrintOptions print = printOptions(generic, debugInfo);
        return callCore([&] {
                 return tritonad::api::runPipeline(ir, pipeline, print, bufferName);
               }).output;
      },
      py::arg("ir"), py::arg("pipeline") = "", py::arg("generic") = false,
      py::arg("debug_info") = true, py::arg("buffer_name") = "<ttir>",
      "Parse and verify TTIR text, run a pass pipeline, print the result.");

  m.def(
      "differentiate_function",
      [](const std::string &ir, const std::string &primal, const std::string &into,
         const std::vector<unsigned> &wrt, bool zeroNonFloat, bool generic, bool debugInfo,
         const std::string &bufferName) {
        tritonad::api::PrintOptions print = printOptions(generic, debugInfo);
        return callCore([&] {
                 return tritonad::api::differentiateFunction(ir, primal, into, wrt,
                                                             zeroNonFloat, print, bufferName);
               }).output;
      },
      py::arg("ir"), py::arg("primal"), py::arg("into") = "",
      py::arg("wrt") = std::vector<unsigned>{}, py::arg("zero_non_float") = false,
      py::arg("generic") = false, py::arg("debug_info") = true,
      py::arg("buffer_name") = "<ttir>",
      "Differentiate tt.func @primal into @into (or a new @<primal>_vjp).");

  m.def(
      "differentiate_kernel",
      [](const std::string &ir, const std::string &primal, const std::string &into,
         const std::vector<std::pair<std::string, std::string>> &bindings,
         const std::string &modeName, bool overwrite, bool generic, bool debugInfo,
         const std::string &bufferName, const std::string &programsName, bool fullMasks) {
        tritonad::api::Accumulation mode = accumulationFrom(modeName);
        tritonad::RegridPrograms programs = regridProgramsFrom(programsName);
        tritonad::api::PrintOptions print = printOptions(generic, debugInfo);
        tritonad::api::Result result = callCore([&] {
          return tritonad::api::differentiateKernel(ir, primal, into, bindings, mode, overwrite,
                                                    print, bufferName, programs, fullMasks);
        });
        py::list tapes;
        for (const auto &tape : result.tapes)
          tapes.append(py::make_tuple(tape.loop, tape.bytesPerIteration,
                                      symbolicToPython(tape.trips)));
        py::object regrid = py::none();
        if (!result.regrid.parts.empty()) {
          py::list parts;
          for (const auto &part : result.regrid.parts) {
            py::list key;
            for (const auto &component : part.key)
              key.append(symbolicToPython(component));
            py::dict entry;
            entry["shadow"] = part.shadow;
            entry["key"] = key;
            entry["lower"] = symbolicToPython(part.lower);
            entry["upper"] = symbolicToPython(part.upper);
            entry["step"] = symbolicToPython(part.step);
            py::list frontier;
            for (const auto &value : part.frontier)
              frontier.append(symbolicToPython(value));
            entry["affine"] = part.affine;
            entry["coarsening"] = part.coarsening;
            entry["coverage"] = part.hasCoverage ? py::object(shadowCoverageToPython(part.coverage))
                                                 : py::object(py::none());
            entry["key_digits"] = part.keyDigits;
            entry["condition_keys"] = part.conditionKeys;
            entry["store_only"] = part.storeOnly;
            entry["trips_vary"] = part.tripsVary;
            entry["lower_varies"] = part.lowerVaries;
            entry["phase"] = part.phase;
            entry["address_keys"] = part.addressKeys;
            entry["leader"] = part.leader;
            entry["reduction"] = part.reduction;
            entry["frontier"] = frontier;
            parts.append(entry);
          }
          py::dict record;
          record["main"] = result.regrid.mainPart;
          record["deterministic"] = result.regrid.deterministic;
          record["staged"] = result.regrid.stagedBytes;
          record["parts"] = parts;
          regrid = record;
        }
        py::list requirements;
        for (const auto &requirement : result.requirements) {
          py::dict entry;
          entry["shadow"] = requirement.shadow;
          entry["condition"] = symbolicToPython(requirement.condition);
          entry["why"] = requirement.why;
          entry["refusal"] = requirement.refusal;
          requirements.append(entry);
        }
        // (field by field as tritonad::contract::kBackwardRecord declares them)
        py::dict record;
        record["ir"] = result.output;
        record["schedule"] = scheduleToPython(result.schedule);
        record["written"] = result.writtenShadows;
        record["partial"] = result.partialShadows;
        record["coverage"] = coverageToPython(result.coverage);
        record["tapes"] = tapes;
        record["regrid"] = regrid;
        record["residuals"] = residualsToPython(result);
        record["requirements"] = requirements;
        record["full_masks"] = result.fullMasks ? py::object(symbolicToPython(*result.fullMasks))
                                                : py::object(py::none());
        record["program_order"] = result.programOrder
                                      ? py::object(symbolicToPython(*result.programOrder))
                                      : py::object(py::none());
        for (const auto &field : tritonad::contract::kBackwardRecord)
          if (!record.contains(field.name))
            throw std::logic_error(std::string("differentiate_kernel: record field ") +
                                   field.name + " is declared but not filled");
        return record;
      },
      py::arg("ir"), py::arg("primal"), py::arg("into"), py::arg("bindings"),
      py::arg("mode") = "auto", py::arg("overwrite") = false, py::arg("generic") = false,
      py::arg("debug_info") = true, py::arg("buffer_name") = "<ttir>",
      py::arg("programs") = "all", py::arg("full_masks") = false,
      "Replace kernel @into's body with the backward of kernel @primal (empty: the kernel "
      "@into calls); returns the record launch_contract()['backward_record'] declares, by "
      "field: ir, schedule: [{'kind', 'subject', 'location', 'strategy', "
      "'how', 'notes'}], "
      "names of the shadows it stores into, names of the shadows whose gradient it leaves in "
      "slots of its workspace, the coverage of the shadows it stores once per element: "
      "{shadow: {'digits', 'clamps', 'condition'}}, and its tapes: [(loop, bytes per "
      "iteration, trips)], scratch of bytes * trips per program passed as tritonad_tape, and "
      "its re-parallelized shadows: None or {'main': bool, 'parts': [{'shadow', 'key', "
      "'lower', 'upper', 'step'}]}, the grouping passed as tritonad_regrid), and the "
      "residuals it reads: None or {'bytes': per program, 'fingerprint'}, passed as "
      "tritonad_residuals by the forward that augment_forward derives), and what each launch "
      "must satisfy: [{'shadow', 'condition', 'why'}], a condition on the arguments and grid "
      "the launch path checks (deterministic mode's plain writes). `programs`: 'all', or "
      "'main' or 'parts' for a kernel with only the forward's programs or only the "
      "re-parallelized parts (each launched on its own; the record is the same); and the "
      "launch condition, per program, under which `full_masks` (the variant without the "
      "masks it makes always true) is correct: an expression, or None where that variant "
      "drops no mask; and the work per program by which the launch orders the programs, "
      "longest first, passing the order as tritonad_regrid: an expression, or None where the "
      "kernel reads its program ids as launched.");

  m.def(
      "launch_contract",
      [] {
        using namespace tritonad::contract;
        py::list hidden;
        for (const auto &parameter : kHiddenParameters) {
          py::dict entry;
          entry["name"] = parameter.name;
          entry["type"] = parameter.type;
          entry["passing"] = parameter.passing == Passing::Pointer ? "pointer"
                             : parameter.passing == Passing::Value ? "value"
                                                                   : "selector";
          entry["filled_by"] = parameter.filledBy;
          entry["meaning"] = parameter.meaning;
          hidden.append(entry);
        }
        py::list record;
        for (const auto &field : kBackwardRecord) {
          py::dict entry;
          entry["name"] = field.name;
          entry["metadata"] = field.metadataKey;
          entry["meaning"] = field.meaning;
          record.append(entry);
        }
        auto words = [](const auto &table) {
          py::list listed;
          for (const TableWord &word : table) {
            py::dict entry;
            entry["name"] = word.name;
            entry["meaning"] = word.meaning;
            listed.append(entry);
          }
          return listed;
        };
        py::dict regrid, order, tables;
        regrid["pointer"] = kRegrid;
        regrid["header"] = words(kRegridHeader);
        regrid["part"] = words(kRegridPart);
        order["pointer"] = kRegrid;
        order["row"] = words(kProgramOrder);
        tables["regrid"] = regrid;
        tables["program_order"] = order;
        py::dict contract;
        contract["hidden"] = hidden;
        contract["backward_record"] = record;
        contract["tables"] = tables;
        return contract;
      },
      "The launch contract (cpp/include/tritonad/LaunchContract.h): 'hidden', the parameters "
      "a derived kernel takes after its own [{'name', 'type', 'passing', 'filled_by', "
      "'meaning'}], in order; 'backward_record', the fields differentiate_kernel returns "
      "[{'name', 'metadata': the compiled kernel's metadata key, 'meaning'}]; 'tables', the "
      "tables a derived kernel reads from a hidden pointer, by name: {'pointer', then each "
      "section's words in order [{'name', 'meaning'}]: 'header' and 'part' (a part header per "
      "part) of 'regrid', 'row' (a row per launched program) of 'program_order'}.");

  m.def(
      "augment_forward",
      [](const std::string &ir, const std::string &primal, const std::string &into,
         const std::vector<std::pair<std::string, std::string>> &bindings,
         const std::string &modeName, bool generic, bool debugInfo,
         const std::string &bufferName) {
        tritonad::api::Accumulation mode = accumulationFrom(modeName);
        tritonad::api::PrintOptions print = printOptions(generic, debugInfo);
        tritonad::api::Result result = callCore([&] {
          return tritonad::api::augmentForward(ir, primal, into, bindings, mode, print,
                                               bufferName);
        });
        return py::make_tuple(result.output, residualsToPython(result),
                              scheduleToPython(result.schedule));
      },
      py::arg("ir"), py::arg("primal"), py::arg("into"), py::arg("bindings"),
      py::arg("mode") = "auto", py::arg("generic") = false, py::arg("debug_info") = true,
      py::arg("buffer_name") = "<ttir>",
      "Replace kernel @into's body (it calls kernel @primal, empty: its only call, and has an "
      "i8 pointer argument tritonad_residuals) with the forward that also saves the values "
      "the backward of @primal reads (its residuals) into tritonad_residuals; returns (ir, "
      "residuals: None (nothing to save; @into still just calls @primal) or {'bytes': per "
      "program, 'fingerprint'}, schedule entries of the saved values).");

  m.def(
      "describe",
      [](const std::string &ir, const std::string &bufferName) {
        return callCore([&] { return tritonad::api::describeModule(ir, bufferName); }).output;
      },
      py::arg("ir"), py::arg("buffer_name") = "<ttir>",
      "The functions of a TTIR module as JSON text (ops, values, types, attributes, "
      "locations): data for Python-side consumers such as the source renderer.");
}
