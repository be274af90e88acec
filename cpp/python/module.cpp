// The tritonad._C extension. Built with RTTI and exceptions (pybind11 needs
// them), so it includes no MLIR header: it talks to the core through API.h.
#include "tritonad/API.h"

#include <pybind11/pybind11.h>

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
}
