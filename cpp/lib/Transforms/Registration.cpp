#include "tritonad/Transforms/Passes.h"
