// Moved to the public headers: include/zero/communicator.h.
#pragma once
#include "zero/communicator.h"
