// Moved to the public headers: include/zero/thread_world.h.
#pragma once
#include "zero/thread_world.h"
