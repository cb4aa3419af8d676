// Moved to the public headers: include/zero/spec.h.
#pragma once
#include "zero/spec.h"
