// Moved to the public headers: include/zero/gpt_kernel_table.h.
#pragma once
#include "zero/gpt_kernel_table.h"
