// Moved to the public headers: include/zero/ledger.h.
#pragma once
#include "zero/ledger.h"
