// Moved to the public headers: include/zero/adamw.h.
#pragma once
#include "zero/adamw.h"
