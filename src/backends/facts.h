// Moved to the public headers: include/zero/backend_facts.h.
#pragma once
#include "zero/backend_facts.h"
