// Moved to the public headers: include/zero/error.h.
#pragma once
#include "zero/error.h"
