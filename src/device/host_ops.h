// The element-wise operations of the devices that compute on the CPU (backends/cpu/), on host
// addresses. f32 runs compute directly; 16-bit runs are processed in tiles: widened into f32,
// computed with the same f32 expression, rounded once (to nearest even) on the way back. So an
// operation on a 16-bit run is exactly the f32 operation on its widened values, rounded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/dtype.h"
#include "optim/adamw.h"
#include "optim/lamb.h"
#include "partition/layout.h"

namespace zero::host_ops {

// n elements of `dtype` at p (host memory).
struct Run {
  void* p = nullptr;
  std::size_t n = 0;
  Dtype dtype = Dtype::kF32;
};

void fill(Run dst, float value);
void add(Run dst, Run src);  // src: dst's dtype or f32; into f32, any dtype (widened)
void divide(Run x, float d);
void scale(Run x, float c);
double sum_squares(Run x, double acc);
bool nonfinite(Run x);
void convert(Run dst, Run src);
// Adam over `segments` of p (f32), g (any dtype, widened), m, v (f32); `copy` (16-bit or empty)
// receives the updated parameters rounded, through the CPU Adam's fused copy.
void adam(const AdamStep& step, const std::vector<Segment>& segments, Run p, Run g, Run m, Run v, Run copy);
// Lamb's two phases (device.h: Device::lamb_moments, lamb_update) through the CPU Lamb kernel.
std::vector<LambNorms> lamb_moments(const LambStep& step, const std::vector<Segment>& segments, Run p, Run g, Run m, Run v,
                                    std::size_t norm_begin, std::size_t norm_numel);
void lamb_update(const LambStep& step, const std::vector<Segment>& segments, const std::vector<float>& coef, Run p, Run m, Run v,
                 Run copy);
// ZenFlow's column operations (device.h: Device::column_abs_sums, gather_columns), runs of any
// dtype (the sums widen 16-bit; a gather moves elements of one dtype); scatter: src's selected
// elements go back into dst instead.
std::vector<double> column_abs_sums(Run x, std::size_t first, std::size_t cols);
void gather_columns(Run dst, Run src, std::size_t first, std::size_t cols, const std::vector<std::uint32_t>& selected, bool scatter);
void init(const UnitPlace& unit, const std::vector<Segment>& segments, std::uint64_t seed, Run out);

}  // namespace zero::host_ops
