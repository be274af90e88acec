#include "tritonad/AutoDiff/ReverseModeInterface.h"

#include "tritonad/AutoDiff/ReverseModeInterface.cpp.inc"
