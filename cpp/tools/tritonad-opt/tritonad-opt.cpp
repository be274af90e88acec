// mlir-opt for TTIR: the tt dialect, arith/math/scf/cf/ub/func, tritonad's
// passes and the upstream cleanups, with mlir-opt's flags. Input nested
// deeper than MLIR's recursive parser can take is refused before parsing.
#include "tritonad/API.h"
#include "tritonad/InitAll.h"

#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  tritonad::registerAllDialects(registry);
  tritonad::registerAllPasses();
  auto [inputFilename, outputFilename] =
      mlir::registerAndParseCLIOptions(argc, argv, "tritonad optimizer driver\n", registry);
  mlir::MlirOptMainConfig config = mlir::MlirOptMainConfig::createFromCLOptions();
  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> input = mlir::openInputFile(inputFilename, &error);
  if (!input) {
    llvm::errs() << error << "\n";
    return 1;
  }
  std::string nesting = tritonad::api::checkBeforeParsing(input->getBuffer().str(), inputFilename);
  if (!nesting.empty()) {
    llvm::errs() << nesting;
    return 1;
  }
  std::unique_ptr<llvm::ToolOutputFile> output = mlir::openOutputFile(outputFilename, &error);
  if (!output) {
    llvm::errs() << error << "\n";
    return 1;
  }
  if (mlir::failed(mlir::MlirOptMain(output->os(), std::move(input), registry, config)))
    return 1;
  output->keep();
  return 0;
}
