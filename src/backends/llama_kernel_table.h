// Moved to the public headers: include/zero/llama_kernel_table.h.
#pragma once
#include "zero/llama_kernel_table.h"
