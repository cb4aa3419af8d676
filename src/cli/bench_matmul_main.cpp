// zero_bench_matmul: the CPU's matrix-product implementations (backends/cpu/matmul.h) on the
// products of one training step of `zero bench train`'s 50m model (rows N = 4 x 256, C = 768,
// T = 256, head size 64), grouped by class: the linear layers' forward, input gradient and weight
// gradient, and attention's per-head blocks. Each round times every implementation once on every
// class, in turn, so they share the machine's moods; the median round's GFLOP/s is printed. The
// figures that chose OpenBLAS for f32 products (matmul.h) come from here (bench/README.md).
//   zero_bench_matmul [rounds]      threads: OMP_NUM_THREADS (oneDNN), OPENBLAS_NUM_THREADS
#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "backends/cpu/matmul.h"
#include "partition/init.h"

namespace zero {
namespace {

struct Shape {
  int M, N, K;
  bool ta, tb;
  int lda, ldb, ldc;
  float alpha, beta;
};

struct ShapeClass {
  const char* name;
  std::vector<Shape> shapes;
};

// One step's products per layer of the 50m GPT (and its head, V = 256), as gpt_kernels.cpp calls them.
std::vector<ShapeClass> step_products() {
  const int N = 1024, C = 768, T = 256, hs = 64, V = 256;
  const int linear[][2] = {{C, 3 * C}, {C, C}, {C, 4 * C}, {4 * C, C}, {C, V}};  // (in, out)
  ShapeClass fwd{"linear forward", {}}, dinp{"linear input gradient", {}}, dw{"linear weight gradient", {}};
  for (const auto& l : linear) {
    const int in = l[0], out = l[1];
    fwd.shapes.push_back({N, out, in, false, true, in, in, out, 1.0f, 0.0f});
    dinp.shapes.push_back({N, in, out, false, false, out, in, in, 1.0f, 0.0f});
    dw.shapes.push_back({out, in, N, true, false, out, in, in, 1.0f, 1.0f});
  }
  ShapeClass att{"attention (per head)", {}};
  for (int i0 = 0; i0 < T; i0 += 64) {
    att.shapes.push_back({64, i0 + 64, hs, false, true, 3 * C, 3 * C, T, 0.125f, 0.0f});  // q k^T, dout v^T
    att.shapes.push_back({64, hs, i0 + 64, false, false, T, 3 * C, C, 1.0f, 0.0f});       // att v, dpre k
    att.shapes.push_back({64, hs, T - i0, true, false, T, C, 3 * C, 1.0f, 0.0f});         // att^T dout, dpre^T q
  }
  return {fwd, dinp, dw, att};
}

std::size_t stored(int rows_op, int cols_op, bool trans, int ld) {
  return static_cast<std::size_t>(trans ? cols_op : rows_op) * ld;
}

double seconds_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Seconds for every product of the class once through `mm` (after one untimed pass).
double time_class(Matmul& mm, const ShapeClass& c, std::vector<float>& a, std::vector<float>& b, std::vector<float>& out) {
  double total = 0;
  for (int timed = 0; timed < 2; ++timed) {
    const double t0 = seconds_now();
    for (const Shape& s : c.shapes) {
      mm.run(s.M, s.N, s.K, s.alpha, {a.data(), s.lda, s.ta}, {b.data(), s.ldb, s.tb}, s.beta, out.data(), s.ldc);
    }
    total = seconds_now() - t0;
  }
  return total;
}

int bench(int rounds) {
  const std::vector<ShapeClass> classes = step_products();
  std::size_t na = 0, nb = 0, nc = 0;
  for (const ShapeClass& c : classes) {
    for (const Shape& s : c.shapes) {
      na = std::max(na, stored(s.M, s.K, s.ta, s.lda)), nb = std::max(nb, stored(s.K, s.N, s.tb, s.ldb));
      nc = std::max(nc, static_cast<std::size_t>(s.M) * s.ldc);
    }
  }
  std::vector<float> a(na), b(nb), out(nc, 0.0f);
  for (std::size_t i = 0; i < na; ++i) a[i] = static_cast<float>(counter_uniform(1, i) - 0.5);
  for (std::size_t i = 0; i < nb; ++i) b[i] = static_cast<float>(counter_uniform(2, i) - 0.5);
  std::vector<MatmulKind> kinds = {MatmulKind::kOpenblasF32, MatmulKind::kOnednnF32};
  if (bf16_products_available()) kinds.push_back(MatmulKind::kOnednnBf16);
  std::vector<std::unique_ptr<Matmul>> mms;
  for (MatmulKind k : kinds) mms.push_back(make_matmul(k));
  // seconds[class][kind][round]
  std::vector<std::vector<std::vector<double>>> seconds(classes.size(), std::vector<std::vector<double>>(kinds.size()));
  for (int r = 0; r < rounds; ++r)
    for (std::size_t c = 0; c < classes.size(); ++c)
      for (std::size_t k = 0; k < kinds.size(); ++k) seconds[c][k].push_back(time_class(*mms[k], classes[c], a, b, out));
  std::printf("zero_bench_matmul: %d rounds, median; %d OpenMP / %d OpenBLAS (%s) threads; GFLOP/s\n", rounds,
              omp_get_max_threads(), openblas_get_num_threads(), openblas_get_corename());
  std::printf("%-24s", "class");
  for (MatmulKind k : kinds) std::printf(" | %-44s", matmul_label(k).c_str());
  std::printf("\n");
  for (std::size_t c = 0; c < classes.size(); ++c) {
    double flops = 0;
    for (const Shape& s : classes[c].shapes) flops += 2.0 * s.M * s.N * s.K;
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
