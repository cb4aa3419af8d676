// zero_bench_adam: `zero bench adam` as its own program.
#include "cli/bench_adam.h"

int main(int argc, char** argv) { return zero::bench_adam_main(argc - 1, argv + 1); }
