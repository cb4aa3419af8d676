// zero_bench_matmul: the CPU's matrix-product implementations (backends/cpu/matmul.h) on the
// products of one training step of `zero bench train`'s 50m model (rows N = 4 x 256, C = 768,
// T = 256, head size 64), grouped by class: the linear layers' forward, input gradient and weight
// gradient, and attention's per-head blocks (cli/step_products.h). Each round times every
// implementation once on every class (after an untimed pass), in turn, so they share the machine's
// moods; the median round's GFLOP/s is printed. The figures that chose OpenBLAS for f32 products (matmul.h) come from here (bench/README.md).
//   zero_bench_matmul [rounds]      threads: OMP_NUM_THREADS (oneDNN), OPENBLAS_NUM_THREADS
#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "backends/cpu/matmul.h"
#include "cli/step_products.h"

namespace zero {
namespace {

using cli::ProductClass;
using cli::ProductShape;

struct ShapeClass {
  const char* name;
  std::vector<ProductShape> shapes;
};

// One step's products of the 50m GPT (micro-batch 4, T = 256), as gpt_kernels.cpp calls them, by class.
std::vector<ShapeClass> step_classes() {
  std::vector<ShapeClass> classes = {{"linear forward", {}}, {"linear input gradient", {}}, {"linear weight gradient", {}},
                                     {"attention (per head)", {}}};
  for (const ProductShape& p : cli::step_products(GptShape{256, 256, 768, 7, 12}, 4)) {
    classes[static_cast<int>(p.cls)].shapes.push_back(p);
  }
  return classes;
}

int bench(int rounds) {
  const std::vector<ShapeClass> classes = step_classes();
  cli::ProductOperands operands(cli::step_products(GptShape{256, 256, 768, 7, 12}, 4));
  std::vector<MatmulKind> kinds = {MatmulKind::kOpenblasF32, MatmulKind::kOnednnF32};
  if (bf16_products_available()) kinds.push_back(MatmulKind::kOnednnBf16);
  std::vector<std::unique_ptr<Matmul>> mms;
  for (MatmulKind k : kinds) mms.push_back(make_matmul(k));
  // seconds[class][kind][round]
  std::vector<std::vector<std::vector<double>>> seconds(classes.size(), std::vector<std::vector<double>>(kinds.size()));
  for (int r = 0; r < rounds; ++r)
    for (std::size_t c = 0; c < classes.size(); ++c)
      for (std::size_t k = 0; k < kinds.size(); ++k) seconds[c][k].push_back(cli::time_products(*mms[k], classes[c].shapes, operands, 1));
  std::printf("zero_bench_matmul: %d rounds, median; %d OpenMP / %d OpenBLAS (%s) threads; GFLOP/s\n", rounds,
              omp_get_max_threads(), openblas_get_num_threads(), openblas_get_corename());
  std::printf("%-24s", "class");
  for (MatmulKind k : kinds) std::printf(" | %-44s", matmul_label(k).c_str());
  std::printf("\n");
  for (std::size_t c = 0; c < classes.size(); ++c) {
    const double flops = cli::total_flops(classes[c].shapes);
    std::printf("%-24s", classes[c].name);
    for (std::size_t k = 0; k < kinds.size(); ++k) {
      std::vector<double>& t = seconds[c][k];
      std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
      std::printf(" | %-44.0f", flops / t[t.size() / 2] / 1e9);
    }
    std::printf("\n");
  }
  return 0;
}

}  // namespace
}  // namespace zero

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 7;
  if (rounds < 1) {
    std::fprintf(stderr, "usage: zero_bench_matmul [rounds >= 1]\n");
    return 2;
  }
  return zero::bench(rounds);
}
