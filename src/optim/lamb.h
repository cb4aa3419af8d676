// Moved to the public headers: include/zero/lamb.h.
#pragma once
#include "zero/lamb.h"
