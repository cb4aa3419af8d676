// Moved to the public headers: include/zero/loss_scaler.h.
#pragma once
#include "zero/loss_scaler.h"
