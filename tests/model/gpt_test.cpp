// The GPT against a plain double-precision reference: the forward loss agrees, and every
// parameter's analytic gradient matches central finite differences of the reference.
#include "model/gpt.h"

#include <gtest/gtest.h>

#include <cmath>

#include "backends/cuda/cuda_backend.h"
#include "common/error.h"
#include "zero/backend_facts.h"
#include "partition/init.h"

namespace zero {
namespace {

struct Tiny {
  GptShape shape;
  int B = 2;
  std::vector<std::int32_t> inputs, targets;
  explicit Tiny(GptShape s = {13, 6, 8, 2, 2}) : shape(s) {  // V T C L H
    for (int i = 0; i < B * shape.seq_len; ++i) {
      inputs.push_back((i * 7 + 3) % shape.vocab_size);
      targets.push_back((i * 5 + 1) % shape.vocab_size);
    }
  }
};

// Parameter tensors of the flat (world size 1) layout, by name.
struct Params {
  const FlatLayout& layout;
  const std::vector<double>& p;
  const double* operator()(int unit, int index) const {
    return p.data() + layout.unit(unit).flat_offset + layout.unit(unit).params[index].offset;
  }
};

std::vector<double> layernorm(const std::vector<double>& x, const double* w, const double* b, int N, int C) {
  std::vector<double> out(x.size());
  for (int n = 0; n < N; ++n) {
    double m = 0, v = 0;
    for (int i = 0; i < C; ++i) m += x[n * C + i];
    m /= C;
    for (int i = 0; i < C; ++i) v += (x[n * C + i] - m) * (x[n * C + i] - m);
    v /= C;
    for (int i = 0; i < C; ++i) out[n * C + i] = (x[n * C + i] - m) / std::sqrt(v + 1e-5) * w[i] + b[i];
  }
  return out;
}

std::vector<double> linear(const std::vector<double>& x, const double* w, const double* b, int N, int C, int OC) {
  std::vector<double> out(static_cast<std::size_t>(N) * OC);
  for (int n = 0; n < N; ++n)
    for (int o = 0; o < OC; ++o) {
      double s = b ? b[o] : 0.0;
      for (int i = 0; i < C; ++i) s += x[n * C + i] * w[o * C + i];
      out[n * OC + o] = s;
    }
  return out;
}

// The whole forward pass in double, written plainly from the GPT-2 definition.
double reference_loss(const Tiny& tiny, const FlatLayout& layout, const std::vector<double>& flat) {
  const Params P{layout, flat};
  const int B = tiny.B, T = tiny.shape.seq_len, C = tiny.shape.channels, V = tiny.shape.vocab_size;
  const int NH = tiny.shape.heads, hs = C / NH, N = B * T;
  std::vector<double> x(static_cast<std::size_t>(N) * C);
  for (int n = 0; n < N; ++n)
    for (int i = 0; i < C; ++i) x[n * C + i] = P(0, 0)[tiny.inputs[n] * C + i] + P(0, 1)[(n % T) * C + i];
  for (int l = 0; l < tiny.shape.layers; ++l) {
    const int u = l + 1;
    auto ln1 = layernorm(x, P(u, 0), P(u, 1), N, C);
    auto qkv = linear(ln1, P(u, 2), P(u, 3), N, C, 3 * C);
    std::vector<double> y(static_cast<std::size_t>(N) * C, 0.0);
    for (int b = 0; b < B; ++b)
      for (int h = 0; h < NH; ++h)
        for (int t = 0; t < T; ++t) {
          std::vector<double> a(t + 1);
          double mx = -1e300, sum = 0;
          for (int t2 = 0; t2 <= t; ++t2) {
            double s = 0;
            for (int i = 0; i < hs; ++i) s += qkv[(b * T + t) * 3 * C + h * hs + i] * qkv[(b * T + t2) * 3 * C + C + h * hs + i];
            a[t2] = s / std::sqrt(static_cast<double>(hs));
            mx = std::max(mx, a[t2]);
          }
          for (auto& e : a) sum += (e = std::exp(e - mx));
          for (int t2 = 0; t2 <= t; ++t2)
            for (int i = 0; i < hs; ++i) y[(b * T + t) * C + h * hs + i] += a[t2] / sum * qkv[(b * T + t2) * 3 * C + 2 * C + h * hs + i];
        }
    auto proj = linear(y, P(u, 4), P(u, 5), N, C, C);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] += proj[i];
    auto ln2 = layernorm(x, P(u, 6), P(u, 7), N, C);
    auto fc = linear(ln2, P(u, 8), P(u, 9), N, C, 4 * C);
    for (auto& f : fc) f = 0.5 * f * (1 + std::tanh(std::sqrt(2 / M_PI) * (f + 0.044715 * f * f * f)));
    auto mlp = linear(fc, P(u, 10), P(u, 11), N, 4 * C, C);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] += mlp[i];
  }
  const int head = tiny.shape.layers + 1;
  auto lnf = layernorm(x, P(head, 0), P(head, 1), N, C);
  auto logits = linear(lnf, P(0, 0), nullptr, N, C, V);
  double loss = 0;
  for (int n = 0; n < N; ++n) {
    double mx = -1e300, sum = 0;
    for (int v = 0; v < V; ++v) mx = std::max(mx, logits[n * V + v]);
    for (int v = 0; v < V; ++v) sum += std::exp(logits[n * V + v] - mx);
    loss += -(logits[n * V + tiny.targets[n]] - mx - std::log(sum));
  }
  return loss / N;
}

// Runs the float model's forward and backward over a world-size-1 flat buffer.
float model_loss_and_grads(const Tiny& tiny, const FlatLayout& layout, std::vector<float>& params, std::vector<float>& grads) {
  Ledger ledger;
  Gpt gpt(tiny.shape, tiny.B, ledger);
  gpt.set_batch(tiny.inputs.data(), tiny.targets.data());
  UnitViews views(layout);
  grads.assign(params.size(), 0.0f);
  for (int u = 0; u < layout.num_units(); ++u) views.set(u, params.data() + layout.unit(u).flat_offset, grads.data() + layout.unit(u).flat_offset);
  for (int u = 0; u < layout.num_units(); ++u) gpt.forward(u, views);
  for (int u = layout.num_units() - 1; u >= 0; --u) gpt.backward(u, views);
  EXPECT_EQ(ledger.usage(Tier::kDevice).total_current, Gpt::activation_bytes(tiny.shape, tiny.B).device);
  return gpt.loss();
}

TEST(Gpt, GradientMatchesFiniteDifferencesOfDoubleReference) {
  Tiny tiny;
  const FlatLayout layout(tiny.shape.units(), 1);
  std::vector<float> params(layout.padded_numel()), grads;
  for (int u = 0; u < layout.num_units(); ++u) {
    init_segments(layout.unit(u), layout.unit_segments(u), 5, params.data() + layout.unit(u).flat_offset);
  }
  // Larger than GPT-2's init so every path (attention included) carries a visible gradient.
  for (auto& p : params) p *= 10.0f;
  const float loss = model_loss_and_grads(tiny, layout, params, grads);
  std::vector<double> flat(params.begin(), params.end());
  const double ref = reference_loss(tiny, layout, flat);
  EXPECT_NEAR(loss, ref, 1e-5 * ref) << "forward loss against the double reference";

  // Central differences in double with h = 1e-5: truncation error ~h^2, rounding ~1e-16/h,
  // both far below the float gradient's own error (~1e-6 of the gradient scale).
  const double h = 1e-5;
  double max_err = 0, scale = 0;
  std::size_t checked = 0;
  for (std::size_t i = 0; i < layout.numel(); ++i) {
    const double keep = flat[i];
    flat[i] = keep + h;
    const double up = reference_loss(tiny, layout, flat);
    flat[i] = keep - h;
    const double down = reference_loss(tiny, layout, flat);
    flat[i] = keep;
    const double fd = (up - down) / (2 * h);
    max_err = std::max(max_err, std::abs(fd - grads[i]));
    scale = std::max(scale, std::abs(fd));
    ++checked;
  }
  std::printf("[ measured ] %zu parameters: max |analytic - finite difference| = %.3g, max |gradient| = %.3g\n", checked,
              max_err, scale);
  // The float model's gradient carries rounding of ~1e-6 relative per operation over a few
  // dozen operations: 1e-4 of the largest gradient bounds it with room to spare.
  EXPECT_LT(max_err, 1e-4 * scale);
  EXPECT_GT(scale, 1e-3) << "the check must see real gradients";
}

TEST(Gpt, InitialLossIsLogVocabulary) {
  Tiny tiny({256, 16, 32, 2, 4});
  const FlatLayout layout(tiny.shape.units(), 1);
  std::vector<float> params(layout.padded_numel()), grads;
  for (int u = 0; u < layout.num_units(); ++u) init_segments(layout.unit(u), layout.unit_segments(u), 5, params.data() + layout.unit(u).flat_offset);
  const float loss = model_loss_and_grads(tiny, layout, params, grads);
  EXPECT_NEAR(loss, std::log(256.0), 0.05) << "GPT-2 init gives near-uniform predictions";
}

TEST(Gpt, ActivationBytesAreWhatItAllocates) {
  GptShape shape{256, 64, 128, 4, 4};
  Ledger ledger;
  Gpt gpt(shape, 3, ledger);
  EXPECT_EQ(ledger.usage(Tier::kDevice).current[static_cast<int>(Category::kActivations)], Gpt::activation_bytes(shape, 3).device);
  // The cpu's attention softmaxes each block of scores in place, so its models hold no scores
  // scratch; a GPU's kernels keep one layer's scores and their gradient (B x heads x T x T f32 each).
  const std::uint64_t scores = 2ull * 3 * shape.heads * shape.seq_len * shape.seq_len * sizeof(float);
  EXPECT_EQ(Gpt::activation_bytes(shape, 3, {}, GptCompute{"cuda"}).device, Gpt::activation_bytes(shape, 3).device + scores);
  for (const char* d : {"cpu", "strict", "counting"}) EXPECT_FALSE(find_facts(d).attention_scores) << d;
  EXPECT_TRUE(find_facts("cuda").attention_scores);
}

// The kernel table is chosen by the device's name: the CPU devices share the cpu table; a name
// that is no device is an error naming the choices, not a silent fallback to the CPU.
TEST(GptKernelTable, ChosenByDeviceName) {
  for (const char* d : {"cpu", "strict", "counting"}) EXPECT_EQ(make_gpt_kernels({d, Dtype::kF32})->name(), "cpu") << d;
  try {
    make_gpt_kernels({"tpu", Dtype::kF32});
    ADD_FAILURE() << "no error for device tpu";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown device 'tpu'"), std::string::npos) << e.what();
  }
  std::string why;
  if (!gpt_cuda_available(&why)) {  // no GPU here (or no CUDA in the build): the cuda table says why
    EXPECT_FALSE(why.empty());
    EXPECT_THROW(make_gpt_kernels({"cuda", Dtype::kF32}), ConfigError);
  }
}

}  // namespace
}  // namespace zero
