// Moved to the public headers: include/zero/module.h.
#pragma once
#include "zero/module.h"
