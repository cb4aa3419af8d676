// oneDNN's matmul (oneDNN 2.x, Debian 12's libdnnl-dev) behind matmul.h, f32 or bf16 operands.
//
// A primitive is created once per shape and kept (creation picks a kernel and generates its
// code); the key holds everything the primitive bakes in: the sizes, the transposes and leading
// dimensions, alpha (oneDNN's output scale), beta (a sum post-op) and the thread count, which the
// kernel's work split is fixed to. Each Matmul object is one rank's (the GPT table owns one), so
// nothing here is shared between threads.
//
// Threads: the calling thread's OpenMP threads (zero sets them per rank: cli/launch.cpp), except
// for small products (attention's per-head blocks), which run on one thread, as OpenBLAS runs
// its small ones: a parallel region per 64 x 64 block costs more than it saves, and far more
// where the cores are shared (measured: 22 ms with one thread against 1.1 s with two for the
// kernel test's attention on this loaded 2-core machine).
//
// bf16: each f32 operand is rounded into a dense bf16 copy of op(X)'s stored rows
// (round_rows_to_bf16, matmul.h); an operand given in bf16 (a bf16 run's weights) is read as it is.
// The copies and oneDNN's scratchpad (kernel workspace: packed blocks) are this object's and grow
// to the largest product seen; like OpenBLAS's own packing buffers they are not in the ledger
// (at most half the bytes of the product's two f32 operands).
#include <oneapi/dnnl/dnnl.hpp>
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "backends/cpu/matmul.h"
#include "common/error.h"

namespace zero {
namespace {

using dnnl::memory;

// oneDNN's workspace starts on a cache line (its kernels' packed blocks).
constexpr std::size_t kScratchpadAlign = 64;

// Products of fewer multiply-adds than this run on one thread (see the top).
constexpr std::int64_t kSmallProduct = std::int64_t{1} << 22;

// The calling thread's OpenMP thread count, set for a scope.
class ScopedOmpThreads {
 public:
  explicit ScopedOmpThreads(int threads) : before_(omp_get_max_threads()) { omp_set_num_threads(threads); }
  ~ScopedOmpThreads() { omp_set_num_threads(before_); }
  ScopedOmpThreads(const ScopedOmpThreads&) = delete;
  ScopedOmpThreads& operator=(const ScopedOmpThreads&) = delete;

 private:
  int before_;
};

struct Key {
  int M, N, K, lda, ldb, ldc;
  bool ta, tb;
  std::uint32_t alpha, beta;  // the floats' bits
  int threads;
  auto tie() const { return std::tie(M, N, K, lda, ldb, ldc, ta, tb, alpha, beta, threads); }
  bool operator<(const Key& o) const { return tie() < o.tie(); }
};

// A primitive and its arguments' memory objects, whose data pointers are set per call (building
// the memory objects anew costs more than a small product's arithmetic).
struct Cached {
  dnnl::matmul primitive;
  memory a, b, c, scratchpad;
  std::size_t scratchpad_bytes;
};

// The stored matrix of an operand: rows x cols, `ld` apart.
memory::desc operand_desc(int rows, int cols, bool trans, int ld, memory::data_type type) {
  const memory::dims strides = trans ? memory::dims{1, ld} : memory::dims{ld, 1};
  return memory::desc({rows, cols}, type, strides);
}

// c (M,N; ldc apart) *= beta, as BLAS: beta 0 writes zeros without reading c.
void scale_rows(float* c, int M, int N, int ldc, float beta) {
  for (int r = 0; r < M; ++r) {
    float* row = c + static_cast<std::int64_t>(r) * ldc;
    for (int i = 0; i < N; ++i) row[i] = beta == 0.0f ? 0.0f : beta * row[i];
  }
}

class OnednnMatmul final : public Matmul {
 public:
  explicit OnednnMatmul(MatmulKind kind)
      : kind_(kind), type_(kind == MatmulKind::kOnednnBf16 ? memory::data_type::bf16 : memory::data_type::f32),
        engine_(dnnl::engine::kind::cpu, 0), stream_(engine_) {}

  MatmulKind kind() const override { return kind_; }

  void run(int M, int N, int K, float alpha, MatmulOperand a, MatmulOperand b, float beta, float* c, int ldc) override {
    if (M == 0 || N == 0) return;
    if (K == 0) return scale_rows(c, M, N, ldc, beta);  // an empty sum: oneDNN refuses the shape
    const bool small = static_cast<std::int64_t>(M) * N * K < kSmallProduct;
    const ScopedOmpThreads threads(small ? 1 : omp_get_max_threads());
    const void *a_data = a.p, *b_data = b.p;
    if (type_ == memory::data_type::bf16) {
      // op(a) is (M,K): stored as (K,M) when transposed; likewise op(b) (K,N).
      bf16_.resize(std::max(bf16_.size(), rounded_numel(a, a.trans ? K : M, a.trans ? M : K) +
                                              rounded_numel(b, b.trans ? N : K, b.trans ? K : N)));
      std::uint16_t* copies = bf16_.data();
      a_data = as_bf16(a, a.trans ? K : M, a.trans ? M : K, copies);
      b_data = as_bf16(b, b.trans ? N : K, b.trans ? K : N, copies);
    } else {
      ZERO_CHECK(a.bf16 == nullptr && b.bf16 == nullptr, matmul_label(kind_), " given a bf16 operand");
    }
    Cached& p = primitive(M, N, K, alpha, a, b, beta, ldc);
    if (p.scratchpad_bytes + kScratchpadAlign > scratchpad_.size()) scratchpad_.resize(p.scratchpad_bytes + kScratchpadAlign);
    void* workspace = scratchpad_.data();
    std::size_t space = scratchpad_.size();
    std::align(kScratchpadAlign, p.scratchpad_bytes, workspace, space);  // fits: kScratchpadAlign spare bytes
    p.a.set_data_handle(const_cast<void*>(a_data));
    p.b.set_data_handle(const_cast<void*>(b_data));
    p.c.set_data_handle(c);
    p.scratchpad.set_data_handle(workspace);
    p.primitive.execute(stream_, {{DNNL_ARG_SRC, p.a}, {DNNL_ARG_WEIGHTS, p.b}, {DNNL_ARG_DST, p.c}, {DNNL_ARG_SCRATCHPAD, p.scratchpad}});
    stream_.wait();
  }

 private:
  // The bf16 copy an operand of rows x cols stored values needs: none where it is bf16 already.
  static std::size_t rounded_numel(const MatmulOperand& x, int rows, int cols) {
    return x.bf16 != nullptr ? 0 : static_cast<std::size_t>(rows) * cols;
  }
  // The operand's bf16 values: its own where given (x keeps its leading dimension), else rounded
  // into a dense copy at `copies` (advanced past it; x's leading dimension becomes the copy's).
  static const std::uint16_t* as_bf16(MatmulOperand& x, int rows, int cols, std::uint16_t*& copies) {
    if (x.bf16 != nullptr) return x.bf16;
    std::uint16_t* copy = copies;
    round_rows_to_bf16(copy, x.p, rows, cols, x.ld);
    copies += static_cast<std::size_t>(rows) * cols;
    x = {nullptr, cols, x.trans};
    return copy;
  }

  Cached& primitive(int M, int N, int K, float alpha, MatmulOperand a, MatmulOperand b, float beta, int ldc) {
    const Key key{M, N, K, a.ld, b.ld, ldc, a.trans, b.trans, __builtin_bit_cast(std::uint32_t, alpha),
                  __builtin_bit_cast(std::uint32_t, beta), omp_get_max_threads()};
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;
    const memory::desc ad = operand_desc(M, K, a.trans, a.ld, type_), bd = operand_desc(K, N, b.trans, b.ld, type_);
    const memory::desc cd({M, N}, memory::data_type::f32, memory::dims{ldc, 1});
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    if (alpha != 1.0f) attr.set_output_scales(0, {alpha});
    if (beta != 0.0f) {
      dnnl::post_ops sum;
      sum.append_sum(beta);
      attr.set_post_ops(sum);
    }
    try {
      const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(ad, bd, cd), attr, engine_);
      const memory::desc sd = pd.scratchpad_desc();
      Cached entry{dnnl::matmul(pd), memory(ad, engine_, nullptr), memory(bd, engine_, nullptr), memory(cd, engine_, nullptr),
                   memory(sd, engine_, nullptr), sd.get_size()};
      return cache_.emplace(key, std::move(entry)).first->second;
    } catch (const dnnl::error& e) {
      throw Error(cat("[model] oneDNN cannot compute a matrix product of M=", M, " N=", N, " K=", K, " for ", matmul_label(kind_),
                      " on this CPU (", e.what(), "); run with --dtype fp32"));
    }
  }

  MatmulKind kind_;
  memory::data_type type_;
  dnnl::engine engine_;
  dnnl::stream stream_;
  std::map<Key, Cached> cache_;
  std::vector<std::uint16_t> bf16_;   // the rounded operands: a's then b's, dense
  std::vector<std::uint8_t> scratchpad_;  // oneDNN's workspace for the primitive being run
};

}  // namespace

std::unique_ptr<Matmul> make_onednn_matmul(MatmulKind kind) { return std::make_unique<OnednnMatmul>(kind); }

bool bf16_products_available() {
  const auto bf16 = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_bf16);
  return (static_cast<unsigned>(dnnl::get_effective_cpu_isa()) & bf16) == bf16;
}

std::string onednn_isa_name() {
  switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::avx512_core_amx: return "AMX";
    case dnnl::cpu_isa::avx512_core_bf16: return "AVX512-BF16";
    default: return "no bf16 instructions";
  }
}

}  // namespace zero
