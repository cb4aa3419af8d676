// `zero bench train`'s GEMM-bound limit: the step's own matrix products (cli/step_products.h)
// timed alone, every rank at once (so every core is busy, as in a step), through the products
// the run uses: the linear layers through the run's choice, attention's blocks through
// kAttentionMatmul, as the CPU kernels take them.
//
// The bench times one pass right after each round of steps, so that each step has a limit
// measured on nearly the same machine: this VM's speed drifts by 5-10% within minutes (one pass
// timed after all the steps put fp32 stage 0 of the 50m model at 0.86-0.96 of its limit in four
// runs within three minutes), and a ratio of two times taken minutes apart carries it. The
// constructor runs the products once untimed (the libraries' start-up: oneDNN builds its
// primitives), so that even a run without warm-up steps times warm passes.
#pragma once

#include <memory>
#include <vector>

#include "cli/step_products.h"
#include "zero/communicator.h"
#include "zero/gpt_kernel_table.h"

namespace zero::cli {

class GemmLimitProbe {
 public:
  GemmLimitProbe(const GptShape& shape, int micro_batch, const GptCompute& compute);
  // One pass over every product on every rank at once, after a barrier: the slowest rank's
  // seconds. Collective.
  double time_pass(Communicator& comm);
  double flops_per_rank() const { return flops_; }

 private:
  std::vector<ProductShape> linear_, attention_;
  ProductOperands operands_;
  std::unique_ptr<Matmul> linear_mm_, attention_mm_;
  double flops_ = 0;
};

}  // namespace zero::cli
