// Moved to the public headers: include/zero/dtype.h.
#pragma once
#include "zero/dtype.h"
