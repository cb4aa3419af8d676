// The one host-staged fallback: how an operation runs on a backend whose device lacks it
// (Device::supports). Device-tier operands are copied into host memory, the CPU devices' own
// operation (host_ops.h) runs on the host copies, and the operands it wrote are copied back, so
// the result has the CPU's bits on every backend. Host-tier operands are used where they are.
// It waits for the stream before and after: slow, and only for what a backend has not written
// yet (a GPU device's Lamb, initial values and ZenFlow's column operations, today).
#include <vector>

#include "common/error.h"
#include "device/device.h"
#include "device/host_ops.h"

namespace zero {

struct Device::HostStaged {
  std::vector<DeviceBuffer> host;  // host copies of device-tier spans, in the order given
  std::vector<host_ops::Run> runs;
};

Device::HostStaged Device::stage_on_host(Stream& s, const std::vector<DeviceSpan>& spans, const std::vector<bool>& read,
                                         const char* what) {
  s.synchronize();  // the work before it (e.g. the gradient's reduction) has landed
  HostStaged st;
  for (std::size_t i = 0; i < spans.size(); ++i) {
    const DeviceSpan& x = spans[i];
    if (x.empty() || x.tier() == Tier::kHost) {
      st.host.emplace_back();
      st.runs.push_back({raw(x), x.size(), x.dtype()});
      continue;
    }
    st.host.push_back(alloc(Tier::kHost, Category::kOther, x.size(), what, x.dtype(), false));
    const DeviceSpan h = st.host.back().span();
    if (read[i]) do_copy(s, h, x);
    st.runs.push_back({raw(h), h.size(), h.dtype()});
  }
  s.synchronize();
  return st;
}

void Device::unstage(Stream& s, HostStaged& st, const std::vector<DeviceSpan>& spans, const std::vector<bool>& written) {
  for (std::size_t i = 0; i < spans.size(); ++i) {
    if (written[i] && !st.host[i].empty()) do_copy(s, spans[i], st.host[i].span());
  }
  s.synchronize();  // before the host copies go
}

namespace {
void same_size(const DeviceSpan& a, const DeviceSpan& b, const char* op) {
  ZERO_CHECK(a.size() == b.size(), op, ": spans of ", a.size(), " and ", b.size(), " elements");
}
}  // namespace

std::vector<LambNorms> Device::lamb_moments(Stream& s, const LambStep& step, const std::vector<Segment>& segments, DeviceSpan p,
                                            DeviceSpan g, DeviceSpan m, DeviceSpan v, std::size_t norm_begin,
                                            std::size_t norm_numel) {
  if (supports(DeviceOp::kLamb)) return do_lamb_moments(s, step, segments, p, g, m, v, norm_begin, norm_numel);
  same_size(p, g, "lamb_moments");
  same_size(p, m, "lamb_moments");
  same_size(p, v, "lamb_moments");
  const std::vector<DeviceSpan> spans{p, g, m, v};
  HostStaged st = stage_on_host(s, spans, {true, true, true, true}, "a Lamb operand staged on the host");
  std::vector<LambNorms> out = host_ops::lamb_moments(step, segments, st.runs[0], st.runs[1], st.runs[2], st.runs[3], norm_begin, norm_numel);
  unstage(s, st, spans, {false, false, true, true});
  return out;
}

void Device::lamb_update(Stream& s, const LambStep& step, const std::vector<Segment>& segments, const std::vector<float>& coef,
                         DeviceSpan p, DeviceSpan m, DeviceSpan v, DeviceSpan copy) {
  if (supports(DeviceOp::kLamb)) return do_lamb_update(s, step, segments, coef, p, m, v, copy);
  same_size(p, m, "lamb_update");
  same_size(p, v, "lamb_update");
  if (!copy.empty()) same_size(p, copy, "lamb_update");
  const std::vector<DeviceSpan> spans{p, m, v, copy};
  // copy is read too: lamb_update writes only the segments' elements, so its padding must survive.
  HostStaged st = stage_on_host(s, spans, {true, true, true, true}, "a Lamb operand staged on the host");
  host_ops::lamb_update(step, segments, coef, st.runs[0], st.runs[1], st.runs[2], st.runs[3]);
  unstage(s, st, spans, {true, false, false, true});
}

void Device::init(Stream& s, const UnitPlace& unit, const std::vector<Segment>& segments, std::uint64_t seed, DeviceSpan out) {
  if (supports(DeviceOp::kInit)) return do_init(s, unit, segments, seed, out);
  // Every element is written (padding zero), so nothing is copied in.
  HostStaged st = stage_on_host(s, {out}, {false}, "initial values on the host");
  host_ops::init(unit, segments, seed, st.runs[0]);
  unstage(s, st, {out}, {true});
}

// A backend that says it supports an operation overrides it; these are never reached otherwise.
std::vector<LambNorms> Device::do_lamb_moments(Stream&, const LambStep&, const std::vector<Segment>&, DeviceSpan, DeviceSpan,
                                               DeviceSpan, DeviceSpan, std::size_t, std::size_t) {
  ZERO_CHECK(false, "device ", name(), " says it supports Lamb but does not implement it");
  return {};
}
void Device::do_lamb_update(Stream&, const LambStep&, const std::vector<Segment>&, const std::vector<float>&, DeviceSpan,
                            DeviceSpan, DeviceSpan, DeviceSpan) {
  ZERO_CHECK(false, "device ", name(), " says it supports Lamb but does not implement it");
}
void Device::do_init(Stream&, const UnitPlace&, const std::vector<Segment>&, std::uint64_t, DeviceSpan) {
  ZERO_CHECK(false, "device ", name(), " says it supports init but does not implement it");
}

// ZenFlow's column operations (device.h).
// A packed copy between the tiers crosses the link as copy() does: only its packed elements.
void Device::count_packed(const DeviceSpan& dst, const DeviceSpan& src, std::uint64_t bytes) {
  if (dst.tier() == Tier::kHost && src.tier() == Tier::kDevice) to_host_ += bytes;
  if (dst.tier() == Tier::kDevice && src.tier() == Tier::kHost) to_device_ += bytes;
}

std::vector<double> Device::column_abs_sums(Stream& s, DeviceSpan x, std::size_t first, std::size_t cols) {
  ZERO_CHECK(cols > 0, "column_abs_sums: a matrix without columns");
  if (supports(DeviceOp::kColumns)) return do_column_abs_sums(s, x, first, cols);
  HostStaged st = stage_on_host(s, {x}, {true}, "a ZenFlow gradient staged on the host");
  std::vector<double> out = host_ops::column_abs_sums(st.runs[0], first, cols);
  unstage(s, st, {x}, {false});
  return out;
}

void Device::gather_columns(Stream& s, DeviceSpan dst, DeviceSpan src, std::size_t first, std::size_t cols,
                            const std::vector<std::uint32_t>& selected) {
  ZERO_CHECK(cols > 0, "gather_columns: a matrix without columns");
  count_packed(dst, src, dst.bytes());
  if (supports(DeviceOp::kColumns)) return do_gather_columns(s, dst, src, first, cols, selected, false);
  HostStaged st = stage_on_host(s, {dst, src}, {false, true}, "ZenFlow's columns staged on the host");
  host_ops::gather_columns(st.runs[0], st.runs[1], first, cols, selected, false);
  unstage(s, st, {dst, src}, {true, false});
}

void Device::scatter_columns(Stream& s, DeviceSpan dst, DeviceSpan src, std::size_t first, std::size_t cols,
                             const std::vector<std::uint32_t>& selected) {
  ZERO_CHECK(cols > 0, "scatter_columns: a matrix without columns");
  count_packed(dst, src, src.bytes());
  if (supports(DeviceOp::kColumns)) return do_gather_columns(s, dst, src, first, cols, selected, true);
  // dst is read too: only its selected elements are written.
  HostStaged st = stage_on_host(s, {dst, src}, {true, true}, "ZenFlow's columns staged on the host");
  host_ops::gather_columns(st.runs[0], st.runs[1], first, cols, selected, true);
  unstage(s, st, {dst, src}, {true, false});
}

std::vector<double> Device::do_column_abs_sums(Stream&, DeviceSpan, std::size_t, std::size_t) {
  ZERO_CHECK(false, "device ", name(), " says it supports the column operations but does not implement them");
  return {};
}
void Device::do_gather_columns(Stream&, DeviceSpan, DeviceSpan, std::size_t, std::size_t, const std::vector<std::uint32_t>&, bool) {
  ZERO_CHECK(false, "device ", name(), " says it supports the column operations but does not implement them");
}

}  // namespace zero
