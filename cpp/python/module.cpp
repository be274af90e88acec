// The tritonad._C extension. Built with RTTI and exceptions (pybind11 needs
// them), so it includes no MLIR header: it talks to the core through API.h.
#include "tritonad/API.h"
#include "tritonad/LaunchContract.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace py = pybind11;
namespace contract = tritonad::contract;

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

// A record built field by field through TRITONAD_FIELD (each name declared),
// with every declared field that is not optional: a field the contract
// declares and the core leaves out is a bug here, never a KeyError in Python.
template <typename Entry, int N>
py::dict completed(py::dict record, const Entry (&declared)[N], const char *what) {
  for (const Entry &field : declared) {
    bool optional = false;
    if constexpr (std::is_same_v<Entry, contract::RecordKey>)
      optional = field.optional;
    if (!optional && !record.contains(field.name))
      throw std::logic_error(std::string("tritonad._C: the ") + what + " record's field " +
                             field.name + " is declared but not filled");
  }
  return record;
}

// (LaunchContract.h, kCoverageRecord) digits: [(coefficient, extent)],
// clamps: [([(digit, k)], bound)], condition: expression, and wraps (as
// clamps) where there are any
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
  entry[TRITONAD_FIELD(contract::kCoverageRecord, "digits")] = digits;
  entry[TRITONAD_FIELD(contract::kCoverageRecord, "clamps")] = clamps;
  if (!shadow.wraps.empty())
    entry[TRITONAD_FIELD(contract::kCoverageRecord, "wraps")] = wraps;
  entry[TRITONAD_FIELD(contract::kCoverageRecord, "condition")] =
      symbolicToPython(shadow.condition);
  return completed(entry, contract::kCoverageRecord, "coverage");
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
    constexpr auto &declared = contract::kScheduleEntryRecord;
    py::dict item;
    item[TRITONAD_FIELD(declared, "kind")] = entry.kindName();
    item[TRITONAD_FIELD(declared, "subject")] = entry.subject;
    item[TRITONAD_FIELD(declared, "location")] = entry.location;
    item[TRITONAD_FIELD(declared, "strategy")] = tritonad::strategyName(entry.strategy);
    item[TRITONAD_FIELD(declared, "how")] = entry.how;
    item[TRITONAD_FIELD(declared, "notes")] = entry.notes;
    entries.append(completed(item, declared, "schedule entry"));
  }
  return entries;
}

// None, or (kResidualsRecord) bytes: per program, fingerprint: equal in forward
// and backward.
py::object residualsToPython(const tritonad::api::Result &result) {
  if (result.residualBytesPerProgram == 0)
    return py::none();
  py::dict residuals;
  residuals[TRITONAD_FIELD(contract::kResidualsRecord, "bytes")] = result.residualBytesPerProgram;
  residuals[TRITONAD_FIELD(contract::kResidualsRecord, "fingerprint")] =
      result.residualFingerprint;
  return completed(residuals, contract::kResidualsRecord, "residuals");
}

py::dict regridPartToPython(const tritonad::RegridPart &part) {
  constexpr auto &declared = contract::kRegridPartRecord;
  py::list key, frontier;
  for (const auto &component : part.key)
    key.append(symbolicToPython(component));
  for (const auto &value : part.frontier)
    frontier.append(symbolicToPython(value));
  py::dict entry;
  entry[TRITONAD_FIELD(declared, "shadow")] = part.shadow;
  entry[TRITONAD_FIELD(declared, "key")] = key;
  entry[TRITONAD_FIELD(declared, "lower")] = symbolicToPython(part.lower);
  entry[TRITONAD_FIELD(declared, "upper")] = symbolicToPython(part.upper);
  entry[TRITONAD_FIELD(declared, "step")] = symbolicToPython(part.step);
  entry[TRITONAD_FIELD(declared, "affine")] = part.affine;
  entry[TRITONAD_FIELD(declared, "coarsening")] = part.coarsening;
  entry[TRITONAD_FIELD(declared, "coverage")] =
      part.hasCoverage ? py::object(shadowCoverageToPython(part.coverage))
                       : py::object(py::none());
  entry[TRITONAD_FIELD(declared, "key_digits")] = part.keyDigits;
  entry[TRITONAD_FIELD(declared, "condition_keys")] = part.conditionKeys;
  entry[TRITONAD_FIELD(declared, "store_only")] = part.storeOnly;
  entry[TRITONAD_FIELD(declared, "trips_vary")] = part.tripsVary;
  entry[TRITONAD_FIELD(declared, "lower_varies")] = part.lowerVaries;
  entry[TRITONAD_FIELD(declared, "phase")] = part.phase;
  entry[TRITONAD_FIELD(declared, "address_keys")] = part.addressKeys;
  entry[TRITONAD_FIELD(declared, "leader")] = part.leader;
  entry[TRITONAD_FIELD(declared, "reduction")] = part.reduction;
  entry[TRITONAD_FIELD(declared, "frontier")] = frontier;
  return completed(entry, declared, "regrid part");
}

// None where nothing is re-parallelized.
py::object regridToPython(const tritonad::Regrid &regrid) {
  if (regrid.parts.empty())
    return py::none();
  py::list parts;
  for (const auto &part : regrid.parts)
    parts.append(regridPartToPython(part));
  py::dict record;
  record[TRITONAD_FIELD(contract::kRegridRecord, "main")] = regrid.mainPart;
  record[TRITONAD_FIELD(contract::kRegridRecord, "deterministic")] = regrid.deterministic;
  record[TRITONAD_FIELD(contract::kRegridRecord, "staged")] = regrid.stagedBytes;
  record[TRITONAD_FIELD(contract::kRegridRecord, "parts")] = parts;
  return completed(record, contract::kRegridRecord, "regrid");
}

py::object optionalSymbol(const std::optional<tritonad::SymbolicInt> &symbol) {
  return symbol ? py::object(symbolicToPython(*symbol)) : py::object(py::none());
}

// None where the backward has no scatter slots.
py::object scatterToPython(const tritonad::ScatterSlots &slots) {
  if (slots.empty())
    return py::none();
  py::list columns;
  for (const auto &shadow : slots.columns) {
    py::dict entry;
    entry[TRITONAD_FIELD(contract::kScatterColumnsRecord, "shadow")] = shadow.shadow;
    entry[TRITONAD_FIELD(contract::kScatterColumnsRecord, "begin")] =
        symbolicToPython(shadow.begin);
    entry[TRITONAD_FIELD(contract::kScatterColumnsRecord, "end")] = symbolicToPython(shadow.end);
    entry[TRITONAD_FIELD(contract::kScatterColumnsRecord, "index_begin")] =
        symbolicToPython(shadow.indexBegin);
    entry[TRITONAD_FIELD(contract::kScatterColumnsRecord, "index_end")] =
        symbolicToPython(shadow.indexEnd);
    entry[TRITONAD_FIELD(contract::kScatterColumnsRecord, "lanes")] = shadow.lanes;
    columns.append(completed(entry, contract::kScatterColumnsRecord, "scatter_columns"));
  }
  py::dict record;
  record[TRITONAD_FIELD(contract::kScatterRecord, "per_program")] =
      symbolicToPython(slots.perProgram);
  record[TRITONAD_FIELD(contract::kScatterRecord, "index_per_program")] =
      symbolicToPython(slots.indexPerProgram);
  record[TRITONAD_FIELD(contract::kScatterRecord, "columns")] = columns;
  record[TRITONAD_FIELD(contract::kScatterRecord, "unused")] = optionalSymbol(slots.unused);
  return completed(record, contract::kScatterRecord, "scatter");
}

py::list requirementsToPython(const std::vector<tritonad::LaunchRequirement> &requirements) {
  constexpr auto &declared = contract::kRequirementRecord;
  py::list listed;
  for (const auto &requirement : requirements) {
    py::dict entry;
    entry[TRITONAD_FIELD(declared, "shadow")] = requirement.shadow;
    entry[TRITONAD_FIELD(declared, "condition")] = symbolicToPython(requirement.condition);
    entry[TRITONAD_FIELD(declared, "why")] = requirement.why;
    entry[TRITONAD_FIELD(declared, "refusal")] = requirement.refusal;
    listed.append(completed(entry, declared, "requirement"));
  }
  return listed;
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
        constexpr auto &declared = contract::kBackwardRecord;
        py::dict record;
        record[TRITONAD_FIELD(declared, "ir")] = result.output;
        record[TRITONAD_FIELD(declared, "schedule")] = scheduleToPython(result.schedule);
        record[TRITONAD_FIELD(declared, "written")] = result.writtenShadows;
        record[TRITONAD_FIELD(declared, "partial")] = result.partialShadows;
        record[TRITONAD_FIELD(declared, "partial_slots")] = result.partialSlotAxes;
        record[TRITONAD_FIELD(declared, "coverage")] = coverageToPython(result.coverage);
        record[TRITONAD_FIELD(declared, "tapes")] = tapes;
        record[TRITONAD_FIELD(declared, "regrid")] = regridToPython(result.regrid);
        record[TRITONAD_FIELD(declared, "residuals")] = residualsToPython(result);
        record[TRITONAD_FIELD(declared, "requirements")] =
            requirementsToPython(result.requirements);
        record[TRITONAD_FIELD(declared, "full_masks")] = optionalSymbol(result.fullMasks);
        record[TRITONAD_FIELD(declared, "program_order")] = optionalSymbol(result.programOrder);
        record[TRITONAD_FIELD(declared, "scatter")] = scatterToPython(result.scatter);
        return completed(record, declared, "backward");
      },
      py::arg("ir"), py::arg("primal"), py::arg("into"), py::arg("bindings"),
      py::arg("mode") = "auto", py::arg("overwrite") = false, py::arg("generic") = false,
      py::arg("debug_info") = true, py::arg("buffer_name") = "<ttir>",
      py::arg("programs") = "all", py::arg("full_masks") = false,
      "Replace kernel @into's body with the backward of kernel @primal (empty: the kernel "
      "@into calls); returns the record launch_contract() declares: its fields in "
      "'backward_record', the fields of the records inside it in 'records' (the schedule's "
      "entries, each shadow's coverage, the re-parallelized parts, the residuals it reads, "
      "the conditions each launch must satisfy); its tapes are [(loop, bytes per iteration, "
      "trips)], scratch of bytes * trips per program passed as tritonad_tape. `programs`: "
      "'all', or 'main' or 'parts' for a kernel with only the forward's programs or only the "
      "re-parallelized parts (each launched on its own; the record is the same). "
      "`full_masks`: the variant without the masks that the record's full_masks condition "
      "makes always true.");

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
          entry["travels_with"] = parameter.travelsWith;
          entry["meaning"] = parameter.meaning;
          hidden.append(entry);
        }
        // A table's words, a record's fields (with 'optional', and the
        // backward record's with their metadata key).
        auto listed = [](const auto &declared) {
          py::list entries;
          for (const auto &item : declared) {
            using Item = std::decay_t<decltype(item)>;
            py::dict entry;
            entry["name"] = item.name;
            entry["meaning"] = item.meaning;
            if constexpr (std::is_same_v<Item, RecordKey>) {
              entry["optional"] = item.optional;
            } else if constexpr (std::is_same_v<Item, RecordField>) {
              entry["optional"] = false;
              entry["metadata"] = item.metadataKey;
            }
            entries.append(entry);
          }
          return entries;
        };
        py::list record = listed(kBackwardRecord);
        py::dict regrid, order, tables;
        regrid["pointer"] = kRegrid;
        regrid["header"] = listed(kRegridHeader);
        regrid["part"] = listed(kRegridPart);
        order["pointer"] = kRegrid;
        order["row"] = listed(kProgramOrder);
        tables["regrid"] = regrid;
        tables["program_order"] = order;
        py::dict records;
        records["backward"] = record;
        records["coverage"] = listed(kCoverageRecord);
        records["regrid"] = listed(kRegridRecord);
        records["regrid_part"] = listed(kRegridPartRecord);
        records["requirement"] = listed(kRequirementRecord);
        records["scatter"] = listed(kScatterRecord);
        records["scatter_columns"] = listed(kScatterColumnsRecord);
        records["residuals"] = listed(kResidualsRecord);
        records["schedule_entry"] = listed(kScheduleEntryRecord);
        py::dict contract;
        contract["hidden"] = hidden;
        contract["backward_record"] = record;
        contract["records"] = records;
        contract["tables"] = tables;
        return contract;
      },
      "The launch contract (cpp/include/tritonad/LaunchContract.h): 'hidden', the parameters "
      "a derived kernel takes after its own [{'name', 'type', 'passing', 'filled_by', "
      "'travels_with', 'meaning'}], in order; 'backward_record', the fields "
      "differentiate_kernel returns [{'name', 'metadata': the compiled kernel's metadata key, "
      "'meaning'}]; 'records', the fields of each record the core returns, by record: "
      "'backward' and those inside it, 'coverage', 'regrid', 'regrid_part', 'requirement', "
      "'residuals', 'schedule_entry' [{'name', 'meaning', 'optional': left out where "
      "empty}]; 'tables', the "
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
