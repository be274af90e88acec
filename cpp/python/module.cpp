// The tritonad._C extension. Built with RTTI and exceptions (pybind11 needs
// them), so it includes no MLIR header: it talks to the core through API.h.
#include "tritonad/API.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

namespace py = pybind11;

namespace {
struct MLIRError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
} // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "tritonad's compiled MLIR core";
  py::register_exception<MLIRError>(m, "MLIRError", PyExc_ValueError);

  m.def(
      "run_pipeline",
      [](const std::string &ir, const std::string &pipeline, bool generic, bool debugInfo,
         const std::string &bufferName) {
        tritonad::api::PrintOptions print;
        print.generic = generic;
        print.debugInfo = debugInfo;
        tritonad::api::Result result;
        {
          py::gil_scoped_release release;
          result = tritonad::api::runPipeline(ir, pipeline, print, bufferName);
        }
        if (!result.ok)
          throw MLIRError(result.diagnostics);
        return result.output;
      },
      py::arg("ir"), py::arg("pipeline") = "", py::arg("generic") = false,
      py::arg("debug_info") = true, py::arg("buffer_name") = "<ttir>",
      "Parse and verify TTIR text, run a pass pipeline, print the result.");

  m.def(
      "differentiate_function",
      [](const std::string &ir, const std::string &primal, const std::string &into,
         const std::vector<unsigned> &wrt, bool zeroNonFloat, bool generic, bool debugInfo,
         const std::string &bufferName) {
        tritonad::api::PrintOptions print;
        print.generic = generic;
        print.debugInfo = debugInfo;
        tritonad::api::Result result;
        {
          py::gil_scoped_release release;
          result = tritonad::api::differentiateFunction(ir, primal, into, wrt, zeroNonFloat,
                                                        print, bufferName);
        }
        if (!result.ok)
          throw MLIRError(result.diagnostics);
        return result.output;
      },
      py::arg("ir"), py::arg("primal"), py::arg("into") = "",
      py::arg("wrt") = std::vector<unsigned>{}, py::arg("zero_non_float") = false,
      py::arg("generic") = false, py::arg("debug_info") = true,
      py::arg("buffer_name") = "<ttir>",
      "Differentiate tt.func @primal into @into (or a new @<primal>_vjp).");

  m.def(
      "differentiate_kernel",
      [](const std::string &ir, const std::string &primal, const std::string &into,
         const std::vector<std::pair<std::string, std::string>> &bindings, int mode,
         bool overwrite, bool generic, bool debugInfo, const std::string &bufferName) {
        if (mode < 0 || mode > 2)
          throw py::value_error("mode must be 0 (auto), 1 (atomic) or 2 (deterministic)");
        tritonad::api::PrintOptions print;
        print.generic = generic;
        print.debugInfo = debugInfo;
        tritonad::api::Result result;
        {
          py::gil_scoped_release release;
          result = tritonad::api::differentiateKernel(ir, primal, into, bindings, mode,
                                                      overwrite, print, bufferName);
        }
        if (!result.ok)
          throw MLIRError(result.diagnostics);
        return py::make_tuple(result.output, result.report, result.writtenShadows,
                              result.partialShadows);
      },
      py::arg("ir"), py::arg("primal"), py::arg("into"), py::arg("bindings"),
      py::arg("mode") = 0, py::arg("overwrite") = false, py::arg("generic") = false,
      py::arg("debug_info") = true, py::arg("buffer_name") = "<ttir>",
      "Replace kernel @into's body with the backward of kernel @primal; returns (ir, report, "
      "names of the shadows it stores into, names of the shadows whose gradient it leaves in "
      "slots of its workspace).");

  m.def(
      "describe",
      [](const std::string &ir, const std::string &bufferName) {
        tritonad::api::Result result;
        {
          py::gil_scoped_release release;
          result = tritonad::api::describeModule(ir, bufferName);
        }
        if (!result.ok)
          throw MLIRError(result.diagnostics);
        return result.output;
      },
      py::arg("ir"), py::arg("buffer_name") = "<ttir>",
      "The functions of a TTIR module as JSON text (ops, values, types, attributes, "
      "locations): data for Python-side consumers such as the source renderer.");
}
