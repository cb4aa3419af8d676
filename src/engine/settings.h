// Moved to the public headers: include/zero/settings.h.
#pragma once
#include "zero/settings.h"
