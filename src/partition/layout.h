// Moved to the public headers: include/zero/layout.h.
#pragma once
#include "zero/layout.h"
