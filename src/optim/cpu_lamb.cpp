#include "optim/cpu_lamb.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "common/error.h"
#include "optim/lamb_body.h"

namespace zero {
namespace {

constexpr std::size_t kBlocksPerThreadMin = 4;  // below this many blocks a run stays on the caller's thread

int thread_count(const LambOptions& o, std::size_t blocks) {
  if (o.threads < 0) throw ConfigError(cat("[optim] Lamb: threads must be >= 0 (0: all), not ", o.threads));
  const int asked = o.threads == 0 ? omp_get_max_threads() : o.threads;
  const auto useful = static_cast<int>(std::max<std::size_t>(1, blocks / kBlocksPerThreadMin));
  return std::max(1, std::min(asked, useful));
}

void check_lengths(const char* fn, std::size_t n, std::initializer_list<std::size_t> others) {
  for (std::size_t k : others) {
    if (k != n) {
      throw ConfigError(cat("[optim] ", fn, ": spans of ", k, " and ", n, " elements; pass p, g, m and v of one length"));
    }
  }
}

}  // namespace

void lamb_moments(const LambStep& s, bool decay, std::span<const float> p, std::span<const float> g, std::span<float> m,
                  std::span<float> v, LambNorms& acc, const LambOptions& opts) {
  const std::size_t n = p.size();
  check_lengths("lamb_moments", n, {g.size(), m.size(), v.size()});
  const float wd = decay ? s.weight_decay : 0.0f;
  const std::size_t blocks = (n + kLambSumBlock - 1) / kLambSumBlock;
  std::vector<LambNorms> sums(blocks);  // (blocks): each block's own sums, added in order below
  const int threads = thread_count(opts, blocks);
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
  for (std::size_t b = 0; b < blocks; ++b) {
    const std::size_t o = b * kLambSumBlock, len = std::min(kLambSumBlock, n - o);
    sums[b] = lamb_body::moments_block(s, wd, p.data() + o, g.data() + o, m.data() + o, v.data() + o, len);
  }
  for (const LambNorms& b : sums) lamb_body::add(acc, b);
}

void lamb_update(const LambStep& s, bool decay, float coef, std::span<float> p, std::span<const float> m,
                 std::span<const float> v, std::span<std::uint16_t> copy, HalfFormat format, const LambOptions& opts) {
  const std::size_t n = p.size();
  check_lengths("lamb_update", n, {m.size(), v.size()});
  if (!copy.empty()) check_lengths("lamb_update (copy)", n, {copy.size()});
  const float wd = decay ? s.weight_decay : 0.0f;
  const bool bf16 = format == HalfFormat::kBf16;
  const int threads = thread_count(opts, (n + kLambSumBlock - 1) / kLambSumBlock);
  float* pp = p.data();
  std::uint16_t* cp = copy.empty() ? nullptr : copy.data();
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
  for (std::size_t i = 0; i < n; ++i) {
    pp[i] = std::fma(-coef, lamb_body::update(s, wd, pp[i], m[i], v[i]), pp[i]);
    if (cp != nullptr) cp[i] = bf16 ? float_to_bf16(pp[i]) : float_to_fp16(pp[i]);
  }
}

}  // namespace zero
