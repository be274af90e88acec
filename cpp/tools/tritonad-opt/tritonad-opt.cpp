// mlir-opt for TTIR: the tt dialect, arith/math/scf/cf/ub/func, tritonad's
// passes and the upstream cleanups, with mlir-opt's flags.
#include "tritonad/InitAll.h"

#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  tritonad::registerAllDialects(registry);
  tritonad::registerAllPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "tritonad optimizer driver\n", registry));
}
