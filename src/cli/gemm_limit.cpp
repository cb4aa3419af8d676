#include "cli/gemm_limit.h"

#include <algorithm>

namespace zero::cli {

GemmLimitProbe::GemmLimitProbe(const GptShape& shape, int micro_batch, const GptCompute& compute)
    : operands_(step_products(shape, micro_batch)),
      linear_mm_(make_matmul(choose_matmul(compute.matmul))),
      attention_mm_(make_matmul(kAttentionMatmul)) {
  const std::vector<ProductShape> all = step_products(shape, micro_batch);
  for (const ProductShape& p : all) (p.cls == ProductClass::kAttention ? attention_ : linear_).push_back(p);
  flops_ = total_flops(all);
  run_products(*linear_mm_, linear_, operands_);
  run_products(*attention_mm_, attention_, operands_);
}

double GemmLimitProbe::time_pass(Communicator& comm) {
  comm.barrier();
  const double mine = run_products(*linear_mm_, linear_, operands_) + run_products(*attention_mm_, attention_, operands_);
  std::vector<double> all(comm.size());
  comm.all_gather_bytes(&mine, sizeof mine, all.data());
  return *std::max_element(all.begin(), all.end());
}

}  // namespace zero::cli
