// Moved to the public headers: include/zero/engine.h.
#pragma once
#include "zero/engine.h"
