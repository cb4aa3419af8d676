// The LLaMA against an independent NumPy reference (llama_reference.py, float64): zero's fp32
// logits and loss within 1e-5 relative, and every tensor's gradient against central finite
// differences of the reference, over a sweep of small shapes: query/key-value head ratios 1, 2
// and 4, odd T, C not a multiple of 8 (ratios 1 and 2: with 4 query heads per key/value head and
// an even head size C is a multiple of 8), tied and untied heads. This test writes the weights and
// tokens as raw files, runs the script with Debian's /usr/bin/python3 (python3-numpy), and
// asserts its verdict; the script prints the measured errors.
#include "model/llama.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "partition/init.h"

namespace zero {
namespace {

struct Case {
  const char* name;
  LlamaShape shape;
};

LlamaShape make_shape(int V, int T, int C, int F, int L, int NH, int NKV, bool tied) {
  LlamaShape s;
  s.vocab_size = V, s.seq_len = T, s.hidden = C, s.intermediate = F, s.layers = L, s.heads = NH, s.kv_heads = NKV;
  s.tie_word_embeddings = tied;
  s.rope_theta = 500.0;  // a small theta: the angles vary a lot over a short T, so RoPE shows
  s.rms_norm_eps = 1e-5f;
  return s;
}

template <typename T>
void write_raw(const std::filesystem::path& path, const T* data, std::size_t n) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(n * sizeof(T)));
  ZERO_CHECK(out.good(), "writing ", path.string());
}

// shape.txt, params.txt and every parameter and gradient as <name>.f32 / grad.<name>.f32 (the
// layout llama_reference.py reads).
void write_model(const std::filesystem::path& dir, const LlamaShape& s, int B, const std::vector<UnitSpec>& specs,
                 const FlatLayout& layout, const std::vector<float>& params, const std::vector<float>& grads) {
  const int T = s.seq_len, V = s.vocab_size;
  {
    std::ofstream shape(dir / "shape.txt");
    shape << "batch " << B << "\nvocab_size " << V << "\nmax_position_embeddings " << T << "\nhidden_size " << s.hidden
          << "\nnum_hidden_layers " << s.layers << "\nnum_attention_heads " << s.heads << "\nnum_key_value_heads "
          << s.kv_heads << "\nrms_norm_eps " << std::scientific << s.rms_norm_eps << "\nrope_theta " << s.rope_theta
          << "\ntie_word_embeddings " << (s.tie_word_embeddings ? 1 : 0) << "\n";
    std::ofstream list(dir / "params.txt");
    for (int u = 0; u < layout.num_units(); ++u) {
      for (std::size_t i = 0; i < layout.unit(u).params.size(); ++i) {
        const ParamSpec& spec = specs[u].params[i];
        const std::size_t at = layout.unit(u).flat_offset + layout.unit(u).params[i].offset;
        list << spec.name;
        for (std::int64_t d : spec.shape) list << ' ' << d;
        list << '\n';
        write_raw(dir / (spec.name + ".f32"), params.data() + at, static_cast<std::size_t>(spec.numel()));
        write_raw(dir / ("grad." + spec.name + ".f32"), grads.data() + at, static_cast<std::size_t>(spec.numel()));
      }
    }
  }
}

class LlamaReference : public ::testing::TestWithParam<Case> {};

TEST_P(LlamaReference, LogitsLossAndGradientsMatchNumpy) {
  const LlamaShape& s = GetParam().shape;
  const int B = 2, T = s.seq_len, V = s.vocab_size;
  Ledger ledger;
  Llama model(s, B, ledger);
  const std::vector<UnitSpec> specs = model.units();
  const FlatLayout layout(specs, 1);
  // Weights far from the init's 0.02, so attention is not uniform and every path counts: matrices
  // U(-b, b) with b = 1.5/sqrt(fan_in), norm weights around 1.
  std::vector<float> params(layout.padded_numel()), grads(layout.padded_numel(), 0.0f);
  for (int u = 0; u < layout.num_units(); ++u) {
    for (std::size_t i = 0; i < layout.unit(u).params.size(); ++i) {
      const ParamPlace& place = layout.unit(u).params[i];
      const ParamSpec& spec = specs[u].params[i];
      const bool norm = spec.shape.size() == 1;
      const double b = norm ? 0.3 : 1.5 / std::sqrt(static_cast<double>(spec.shape.back()));
      for (std::size_t e = 0; e < place.numel; ++e) {
        const double r = 2.0 * counter_uniform(hash_name(spec.name), e) - 1.0;
        params[layout.unit(u).flat_offset + place.offset + e] = static_cast<float>((norm ? 1.0 : 0.0) + b * r);
      }
    }
  }
  std::vector<std::int32_t> inputs(static_cast<std::size_t>(B) * T), targets(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    inputs[i] = static_cast<std::int32_t>(counter_uniform(7, i) * V);
    targets[i] = static_cast<std::int32_t>(counter_uniform(8, i) * V);
  }
  model.set_batch(inputs.data(), targets.data());
  UnitViews views(layout);
  for (int u = 0; u < layout.num_units(); ++u) {
    views.set(u, params.data() + layout.unit(u).flat_offset, grads.data() + layout.unit(u).flat_offset);
  }
  for (int u = 0; u < layout.num_units(); ++u) model.forward(u, views);
  std::vector<float> logits;
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t) logits.insert(logits.end(), model.logits(b, t), model.logits(b, t) + V);
  const float loss = model.loss();
  for (int u = layout.num_units() - 1; u >= 0; --u) model.backward(u, views);

  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / cat("llama_ref_", GetParam().name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  write_model(dir, s, B, specs, layout, params, grads);
  write_raw(dir / "inputs.i32", inputs.data(), inputs.size());
  write_raw(dir / "targets.i32", targets.data(), targets.size());
  write_raw(dir / "logits.f32", logits.data(), logits.size());
  write_raw(dir / "loss.f32", &loss, 1);
  const std::string command = cat("/usr/bin/python3 ", ZERO_TEST_SOURCE_DIR, "/model/llama_reference.py ", dir.string());
  const int rc = std::system(command.c_str());
  EXPECT_EQ(rc, 0) << s.describe() << ": the NumPy reference disagrees (its output above says where)";
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, LlamaReference,
    ::testing::Values(Case{"mha_untied", make_shape(13, 5, 12, 20, 2, 2, 2, false)},
                      Case{"gqa2_tied", make_shape(17, 7, 20, 28, 2, 2, 1, true)},
                      Case{"gqa4_untied", make_shape(11, 9, 32, 44, 2, 4, 1, false)},
                      Case{"gqa2_untied_3layers", make_shape(19, 6, 36, 52, 3, 6, 3, false)},
                      Case{"gqa4_tied_T1", make_shape(9, 1, 24, 16, 1, 4, 1, true)}),
    [](const auto& p) { return std::string(p.param.name); });

}  // namespace
}  // namespace zero
