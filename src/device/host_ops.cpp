#include "device/host_ops.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "common/error.h"
#include "common/half.h"
#include "common/vector_clones.h"
#include "optim/cpu_adam.h"
#include "optim/cpu_lamb.h"
#include "partition/init.h"

namespace zero::host_ops {
namespace {

constexpr std::size_t kTile = 4096;  // elements widened at a time: 16 KiB of f32, stays in L1/L2

char* at(Run r, std::size_t i) { return static_cast<char*>(r.p) + i * dtype_bytes(r.dtype); }
float* f32(Run r) {
  ZERO_CHECK(r.dtype == Dtype::kF32, "an f32 run expected, not ", dtype_label(r.dtype));
  return static_cast<float*>(r.p);
}

// Applies fn(tile, len, base) to x's values as f32 and stores them back in x's dtype.
template <typename Fn>
void update_tiles(Run x, Fn fn) {
  if (x.dtype == Dtype::kF32) {
    fn(static_cast<float*>(x.p), x.n, std::size_t{0});
    return;
  }
  float tile[kTile];
  for (std::size_t base = 0; base < x.n; base += kTile) {
    const std::size_t len = std::min(kTile, x.n - base);
    widen_to_f32(at(x, base), x.dtype, tile, len);
    fn(tile, len, base);
    narrow_from_f32(tile, x.dtype, at(x, base), len);
  }
}

// Calls fn(tile, len) on x's values as f32 (read only).
template <typename Fn>
void read_tiles(Run x, Fn fn) {
  if (x.dtype == Dtype::kF32) {
    fn(static_cast<const float*>(x.p), x.n);
    return;
  }
  float tile[kTile];
  for (std::size_t base = 0; base < x.n; base += kTile) {
    const std::size_t len = std::min(kTile, x.n - base);
    widen_to_f32(at(x, base), x.dtype, tile, len);
    fn(static_cast<const float*>(tile), len);
  }
}

HalfFormat half_format(Dtype d) { return d == Dtype::kBf16 ? HalfFormat::kBf16 : HalfFormat::kFp16; }

// d[i] = round(d[i] + x[i]) in one pass: mixed precision's f32 gradients added into the 16-bit
// accumulator, every unit every step. The bits update_tiles' widen, add, narrow give.
ZERO_VECTOR_CLONES void add_f32_into_bf16(std::uint16_t* d, const float* x, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) d[i] = float_to_bf16(bf16_to_float(d[i]) + x[i]);
}
ZERO_VECTOR_CLONES void add_f32_into_fp16(std::uint16_t* d, const float* x, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) d[i] = float_to_fp16(fp16_to_float(d[i]) + x[i]);
}

}  // namespace

void fill(Run dst, float value) {
  // Zero (every gradient buffer at a step's start): memset, whose large-size path writes without
  // first reading each line (50M f32: 5.4-9.6 ms, the loop below 9.1-16.7), the same bytes (+0.0's bits
  // are all zero, in every dtype).
  if (std::bit_cast<std::uint32_t>(value) == 0) {
    if (dst.n > 0) std::memset(dst.p, 0, dst.n * dtype_bytes(dst.dtype));
    return;
  }
  if (is_16bit(dst.dtype)) {  // every element gets value's 16 bits: narrowed once
    std::uint16_t bits = 0;
    narrow_from_f32(&value, dst.dtype, &bits, 1);
    std::fill_n(static_cast<std::uint16_t*>(dst.p), dst.n, bits);
    return;
  }
  update_tiles(dst, [value](float* p, std::size_t n, std::size_t) {
    for (std::size_t i = 0; i < n; ++i) p[i] = value;
  });
}

void add(Run dst, Run src) {
  ZERO_CHECK(src.dtype == dst.dtype || src.dtype == Dtype::kF32 || dst.dtype == Dtype::kF32, "add of ", dtype_label(src.dtype), " into ",
             dtype_label(dst.dtype));
  if (is_16bit(dst.dtype) && src.dtype == Dtype::kF32) {
    auto* d = static_cast<std::uint16_t*>(dst.p);
    const auto* x = static_cast<const float*>(src.p);
    return dst.dtype == Dtype::kBf16 ? add_f32_into_bf16(d, x, dst.n) : add_f32_into_fp16(d, x, dst.n);
  }
  if (dst.dtype == Dtype::kF32 && is_16bit(src.dtype)) {  // ZenFlow's f32 sum of 16-bit gradients
    float* d = f32(dst);
    std::size_t base = 0;
    read_tiles(src, [&](const float* x, std::size_t n) {
      for (std::size_t i = 0; i < n; ++i) d[base + i] = d[base + i] + x[i];
      base += n;
    });
    return;
  }
  float other[kTile];
  update_tiles(dst, [&](float* d, std::size_t n, std::size_t base) {
    const float* x = nullptr;
    if (src.dtype == Dtype::kF32) {
      x = static_cast<const float*>(src.p) + base;
    } else {
      widen_to_f32(at(src, base), src.dtype, other, n);
      x = other;
    }
    for (std::size_t i = 0; i < n; ++i) d[i] = d[i] + x[i];
  });
}

void divide(Run x, float d) {
  update_tiles(x, [d](float* p, std::size_t n, std::size_t) {
    for (std::size_t i = 0; i < n; ++i) p[i] = p[i] / d;
  });
}

void scale(Run x, float c) {
  update_tiles(x, [c](float* p, std::size_t n, std::size_t) {
    for (std::size_t i = 0; i < n; ++i) p[i] = p[i] * c;
  });
}

double sum_squares(Run x, double acc) {
  read_tiles(x, [&acc](const float* p, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) acc += static_cast<double>(p[i]) * p[i];
  });
  return acc;
}

bool nonfinite(Run x) {
  bool found = false;
  read_tiles(x, [&found](const float* p, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) found = found || !std::isfinite(p[i]);
  });
  return found;
}

void convert(Run dst, Run src) {
  ZERO_CHECK(dst.n == src.n, "convert of ", src.n, " elements into ", dst.n);
  if (dst.dtype == src.dtype) {
    std::copy_n(static_cast<const char*>(src.p), src.n * dtype_bytes(src.dtype), static_cast<char*>(dst.p));
  } else if (src.dtype == Dtype::kF32) {
    narrow_from_f32(static_cast<const float*>(src.p), dst.dtype, dst.p, dst.n);
  } else if (dst.dtype == Dtype::kF32) {
    widen_to_f32(src.p, src.dtype, static_cast<float*>(dst.p), dst.n);
  } else {  // 16 -> other 16: through f32
    float tile[kTile];
    for (std::size_t base = 0; base < src.n; base += kTile) {
      const std::size_t len = std::min(kTile, src.n - base);
      widen_to_f32(at(src, base), src.dtype, tile, len);
      narrow_from_f32(tile, dst.dtype, at(dst, base), len);
    }
  }
}

void adam(const AdamStep& step, const std::vector<Segment>& segments, Run p, Run g, Run m, Run v, Run copy) {
  float* pp = f32(p);
  float* mp = f32(m);
  float* vp = f32(v);
  ZERO_CHECK(copy.n == 0 || (copy.n == p.n && is_16bit(copy.dtype)), "adam's copy must be 16-bit, of the parameters' size");
  AdamOptions opts;
  if (copy.n > 0) opts.copy_format = half_format(copy.dtype);
  float widened[kTile];
  for (const Segment& seg : segments) {
    if (seg.param < 0) continue;
    ZERO_CHECK(seg.offset + seg.numel <= p.n, "adam segment outside its span");
    // f32 gradients: one call over the segment; 16-bit: tile by tile, widened first.
    const std::size_t step_len = g.dtype == Dtype::kF32 ? std::max<std::size_t>(seg.numel, 1) : kTile;
    for (std::size_t done = 0; done < seg.numel; done += step_len) {
      const std::size_t o = seg.offset + done, n = std::min(step_len, seg.numel - done);
      const float* gp = nullptr;
      if (g.dtype == Dtype::kF32) {
        gp = static_cast<const float*>(g.p) + o;
      } else {
        widen_to_f32(at(g, o), g.dtype, widened, n);
        gp = widened;
      }
      if (copy.n > 0) opts.copy = {reinterpret_cast<std::uint16_t*>(at(copy, o)), n};
      adam_step(step, seg.decay, {pp + o, n}, {gp, n}, {mp + o, n}, {vp + o, n}, opts);  // SIMD, bit-identical to the reference
    }
  }
}

namespace {

static_assert(kTile % kLambSumBlock == 0, "16-bit gradients are widened in whole Lamb sum blocks");

// Phase 1 over elements [o, o + n) of one segment, its sums added into acc. 16-bit gradients are
// widened tile by tile; tiles hold whole sum blocks from the run's start, so the sums are the run's.
void lamb_run(const LambStep& step, bool decay, float* p, Run g, float* m, float* v, std::size_t o, std::size_t n, LambNorms& acc) {
  if (g.dtype == Dtype::kF32) {
    lamb_moments(step, decay, {p + o, n}, {static_cast<const float*>(g.p) + o, n}, {m + o, n}, {v + o, n}, acc);
    return;
  }
  float widened[kTile];
  for (std::size_t done = 0; done < n; done += kTile) {
    const std::size_t len = std::min(kTile, n - done), at_ = o + done;
    widen_to_f32(at(g, at_), g.dtype, widened, len);
    lamb_moments(step, decay, {p + at_, len}, {widened, len}, {m + at_, len}, {v + at_, len}, acc);
  }
}

}  // namespace

std::vector<LambNorms> lamb_moments(const LambStep& step, const std::vector<Segment>& segments, Run p, Run g, Run m, Run v,
                                    std::size_t norm_begin, std::size_t norm_numel) {
  float* pp = f32(p);
  float* mp = f32(m);
  float* vp = f32(v);
  const std::size_t norm_end = norm_begin + norm_numel;
  std::vector<LambNorms> out(segments.size());
  for (std::size_t k = 0; k < segments.size(); ++k) {
    const Segment& seg = segments[k];
    if (seg.param < 0) continue;
    ZERO_CHECK(seg.offset + seg.numel <= p.n, "lamb segment outside its span");
    // Up to three runs: before the norm range, inside it (summed into out[k]), after it.
    const std::size_t begin = seg.offset, end = seg.offset + seg.numel;
    const std::size_t in_begin = std::clamp(norm_begin, begin, end), in_end = std::clamp(norm_end, in_begin, end);
    LambNorms outside;
    lamb_run(step, seg.decay, pp, g, mp, vp, begin, in_begin - begin, outside);
    lamb_run(step, seg.decay, pp, g, mp, vp, in_begin, in_end - in_begin, out[k]);
    lamb_run(step, seg.decay, pp, g, mp, vp, in_end, end - in_end, outside);
  }
  return out;
}

void lamb_update(const LambStep& step, const std::vector<Segment>& segments, const std::vector<float>& coef, Run p, Run m, Run v,
                 Run copy) {
  float* pp = f32(p);
  const float* mp = f32(m);
  const float* vp = f32(v);
  ZERO_CHECK(coef.size() == segments.size(), "lamb_update: ", coef.size(), " coefficients for ", segments.size(), " segments");
  ZERO_CHECK(copy.n == 0 || (copy.n == p.n && is_16bit(copy.dtype)), "lamb's copy must be 16-bit, of the parameters' size");
  for (std::size_t k = 0; k < segments.size(); ++k) {
    const Segment& seg = segments[k];
    if (seg.param < 0) continue;
    ZERO_CHECK(seg.offset + seg.numel <= p.n, "lamb segment outside its span");
    const std::size_t o = seg.offset, n = seg.numel;
    std::span<std::uint16_t> c;
    if (copy.n > 0) c = {reinterpret_cast<std::uint16_t*>(at(copy, o)), n};
    lamb_update(step, seg.decay, coef[k], {pp + o, n}, {mp + o, n}, {vp + o, n}, c, half_format(copy.n > 0 ? copy.dtype : Dtype::kBf16));
  }
}

void init(const UnitPlace& unit, const std::vector<Segment>& segments, std::uint64_t seed, Run out) {
  if (out.dtype == Dtype::kF32) {
    init_segments(unit, segments, seed, static_cast<float*>(out.p));
    return;
  }
  float tile[kTile];
  for (const Segment& s : segments) {
    for (std::size_t done = 0; done < s.numel; done += kTile) {
      const std::size_t n = std::min(kTile, s.numel - done);
      if (s.param < 0) {
        std::fill_n(tile, n, 0.0f);
      } else {
        init_values(unit.params.at(s.param).spec, seed, s.param_offset + done, {tile, n});
      }
      narrow_from_f32(tile, out.dtype, at(out, s.offset + done), n);
    }
  }
}

// Row by row over the rows the run touches: element e of the matrix is row e / cols, column
// e % cols; the run holds e in [first, first + n).
std::vector<double> column_abs_sums(Run x, std::size_t first, std::size_t cols) {
  std::vector<double> sums(cols, 0.0);
  std::size_t i = 0;  // x's element at the tile's start
  read_tiles(x, [&](const float* p, std::size_t n) {
    for (std::size_t j = 0; j < n; ++j, ++i) sums[(first + i) % cols] += std::fabs(static_cast<double>(p[j]));
  });
  return sums;
}

namespace {

// gather_columns over elements of type T (a copy: the bits move unchanged).
template <typename T>
std::size_t move_columns(Run dst, Run src, std::size_t first, std::size_t cols, const std::vector<std::uint32_t>& selected, bool scatter) {
  T* d = static_cast<T*>(dst.p);
  const T* s = static_cast<const T*>(src.p);
  const Run& run = scatter ? dst : src;  // the run of the matrix
  const std::size_t end = first + run.n;
  std::size_t j = 0;
  for (std::size_t row = first / cols; row * cols < end; ++row) {
    for (std::uint32_t c : selected) {
      const std::size_t e = row * cols + c;
      if (e < first || e >= end) continue;
      ZERO_CHECK(j < (scatter ? src.n : dst.n), "gather_columns: more selected elements than the packed span holds");
      if (scatter) d[e - first] = s[j++];
      else d[j++] = s[e - first];
    }
  }
  return j;
}

}  // namespace

void gather_columns(Run dst, Run src, std::size_t first, std::size_t cols, const std::vector<std::uint32_t>& selected, bool scatter) {
  ZERO_CHECK(dst.dtype == src.dtype, "gather_columns between ", dtype_label(src.dtype), " and ", dtype_label(dst.dtype));
  if ((scatter ? dst : src).n == 0) return;
  const std::size_t j = is_16bit(dst.dtype) ? move_columns<std::uint16_t>(dst, src, first, cols, selected, scatter)
                                            : move_columns<float>(dst, src, first, cols, selected, scatter);
  ZERO_CHECK(j == (scatter ? src.n : dst.n), "gather_columns: the packed span holds ", (scatter ? src.n : dst.n), " elements, not ", j);
}

}  // namespace zero::host_ops
