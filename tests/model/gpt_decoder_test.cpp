// The KV-cached decoders (GPT and LLaMA) against their model's own full forward pass: the same
// next-token distribution at every position, and after the window slides; and the sampler's rules.
#include <gtest/gtest.h>

#include <cmath>

#include "comm/communicator.h"
#include "common/error.h"
#include "engine/engine.h"
#include "model/gpt.h"
#include "model/gpt_decoder.h"
#include "model/llama.h"
#include "model/llama_decoder.h"
#include "partition/init.h"

namespace zero {
namespace {

struct Model {
  GptShape shape{61, 12, 24, 2, 3};  // odd sizes: V, T, C and heads not powers of two
  Ledger ledger;
  std::unique_ptr<Communicator> comm = make_communicator("self");
  Gpt gpt{shape, 1, ledger};
  std::unique_ptr<Engine> engine;
  Model() {
    EngineConfig c;
    c.seed = 99;
    engine = std::make_unique<Engine>(c, gpt, *comm, ledger);
  }
  // The full forward's distribution at each of the first n positions of `tokens`.
  std::vector<std::vector<float>> full(const std::vector<int>& tokens) {
    std::vector<std::int32_t> in(shape.seq_len, 0), tgt(shape.seq_len, 0);
    std::copy(tokens.begin(), tokens.end(), in.begin());
    gpt.set_batch(in.data(), tgt.data());
    engine->evaluate();
    std::vector<std::vector<float>> out;
    for (std::size_t t = 0; t < tokens.size(); ++t) out.emplace_back(gpt.probs(0, static_cast<int>(t)), gpt.probs(0, static_cast<int>(t)) + shape.vocab_size);
    return out;
  }
};

double max_diff(const float* a, const std::vector<float>& b) {
  double d = 0;
  for (std::size_t i = 0; i < b.size(); ++i) d = std::max(d, std::abs(static_cast<double>(a[i]) - b[i]));
  return d;
}

TEST(GptDecoder, EqualsTheFullForwardAtEveryPosition) {
  Model m;
  std::vector<int> tokens;
  for (int t = 0; t < m.shape.seq_len; ++t) tokens.push_back(static_cast<int>(counter_uniform(5, t) * m.shape.vocab_size));
  const auto want = m.full(tokens);
  GptDecoder d(m.shape, m.engine->full_parameters());
  double worst = 0;
  for (int t = 0; t < m.shape.seq_len; ++t) worst = std::max(worst, max_diff(d.feed(tokens[t]), want[t]));
  EXPECT_LT(worst, 1e-5);
  std::printf("max |decoder - full forward| over %d positions: %.2e\n", m.shape.seq_len, worst);
  // Past the window: the last T/2 tokens are kept, and the new one follows them from position 0.
  const int extra = 17;
  const float* p = d.feed(extra);
  std::vector<int> window(tokens.end() - m.shape.seq_len / 2, tokens.end());
  window.push_back(extra);
  EXPECT_EQ(d.position(), static_cast<int>(window.size()));
  EXPECT_LT(max_diff(p, m.full(window).back()), 1e-5);
}

TEST(GptDecoder, RefusesOtherWeightsAndTokens) {
  GptShape s{61, 12, 24, 2, 3};
  EXPECT_THROW(GptDecoder(s, std::vector<float>(10)), ConfigError);
  Model m;
  GptDecoder d(m.shape, m.engine->full_parameters());
  EXPECT_THROW(d.feed(61), ConfigError);
}

// The LLaMA, over grouped-query ratios 1, 2 and 3, tied and untied heads, an odd T.
struct LlamaModel {
  LlamaShape shape;
  Ledger ledger;
  std::unique_ptr<Communicator> comm = make_communicator("self");
  std::unique_ptr<Llama> llama;
  std::unique_ptr<Engine> engine;
  // Trained a few steps at a high learning rate on one sequence first, so that its distributions
  // are far from the uniform ones of the initial weights (a wrong position or head shows).
  explicit LlamaModel(const LlamaShape& s) : shape(s), llama(std::make_unique<Llama>(s, 1, ledger)) {
    EngineConfig c;
    c.seed = 7;
    c.adam.lr = 3e-2f;
    engine = std::make_unique<Engine>(c, *llama, *comm, ledger);
    std::vector<std::int32_t> in(s.seq_len), tgt(s.seq_len);
    for (int t = 0; t < s.seq_len; ++t) in[t] = static_cast<std::int32_t>(counter_uniform(3, t) * s.vocab_size);
    for (int t = 0; t < s.seq_len; ++t) tgt[t] = in[(t + 1) % s.seq_len];
    llama->set_batch(in.data(), tgt.data());
    for (int i = 0; i < 30; ++i) engine->train_step();
  }
  std::vector<std::vector<float>> full(const std::vector<int>& tokens) {
    std::vector<std::int32_t> in(shape.seq_len, 0), tgt(shape.seq_len, 0);
    std::copy(tokens.begin(), tokens.end(), in.begin());
    llama->set_batch(in.data(), tgt.data());
    engine->evaluate();
    std::vector<std::vector<float>> out;
    for (std::size_t t = 0; t < tokens.size(); ++t) {
      const float* p = llama->probs(0, static_cast<int>(t));
      out.emplace_back(p, p + shape.vocab_size);
    }
    return out;
  }
};

TEST(LlamaDecoder, EqualsTheFullForwardAtEveryPosition) {
  for (const auto& [kv, tied, theta] : {std::tuple{6, false, 10000.0}, std::tuple{3, true, 500000.0}, std::tuple{2, false, 10000.0}}) {
    LlamaShape s;
    s.vocab_size = 53, s.seq_len = 11, s.hidden = 24, s.intermediate = 40, s.layers = 2, s.heads = 6, s.kv_heads = kv;
    s.tie_word_embeddings = tied, s.rope_theta = theta, s.rms_norm_eps = 1e-6f;
    LlamaModel m(s);
    std::vector<int> tokens;
    for (int t = 0; t < s.seq_len; ++t) tokens.push_back(static_cast<int>(counter_uniform(11, t) * s.vocab_size));
    const auto want = m.full(tokens);
    LlamaDecoder d(s, m.engine->full_parameters());
    double worst = 0;
    for (int t = 0; t < s.seq_len; ++t) worst = std::max(worst, max_diff(d.feed(tokens[t]), want[t]));
    EXPECT_LT(worst, 1e-5) << s.describe();
    std::printf("LLaMA %s: max |decoder - full forward| over %d positions: %.2e\n", s.describe().c_str(), s.seq_len, worst);
    const float* p = d.feed(5);  // past the window: the last T/2 tokens, then the new one from position 0
    std::vector<int> window(tokens.end() - s.seq_len / 2, tokens.end());
    window.push_back(5);
    EXPECT_EQ(d.position(), static_cast<int>(window.size()));
    EXPECT_LT(max_diff(p, m.full(window).back()), 1e-5) << s.describe();
  }
}

TEST(LlamaDecoder, RefusesOtherWeightsAndTokens) {
  LlamaShape s;
  EXPECT_THROW(LlamaDecoder(s, std::vector<float>(10)), ConfigError);
  s.vocab_size = 40, s.seq_len = 8, s.hidden = 16, s.intermediate = 24, s.layers = 1, s.heads = 2, s.kv_heads = 1;
  LlamaModel m(s);
  LlamaDecoder d(s, m.engine->full_parameters());
  EXPECT_THROW(d.feed(40), ConfigError);
  EXPECT_THROW(d.feed(-1), ConfigError);
}

TEST(SampleToken, TemperatureAndTopK) {
  const std::vector<float> p = {0.1f, 0.5f, 0.15f, 0.25f};
  for (double u : {0.0, 0.3, 0.99}) {
    EXPECT_EQ(sample_token(p.data(), 4, 0.0, 0, u), 1);  // temperature 0: the most likely
    EXPECT_EQ(sample_token(p.data(), 4, 1.0, 1, u), 1);  // top-1
  }
  // top-2 at T = 1: tokens 1 and 3 with 0.5/0.75 and 0.25/0.75.
  EXPECT_EQ(sample_token(p.data(), 4, 1.0, 2, 0.66), 1);
  EXPECT_EQ(sample_token(p.data(), 4, 1.0, 2, 0.67), 3);
  // All tokens at T = 1, in order of probability: 1 (0.5), 3 (0.25), 2 (0.15), 0 (0.1).
  EXPECT_EQ(sample_token(p.data(), 4, 1.0, 0, 0.76), 2);
  EXPECT_EQ(sample_token(p.data(), 4, 1.0, 0, 0.95), 0);
  // A high temperature flattens: at T = 1e6 every token is about 1/4.
  EXPECT_EQ(sample_token(p.data(), 4, 1e6, 0, 0.26), 3);
}

// A low temperature concentrates on the most likely token: p^(1/T) underflows to 0 for every
// token at T = 0.001 (0.5^1000), so the weights are taken in log space, relative to the most
// likely. Swept over temperatures down to 1e-300 and over u in [0, 1), against the sampling
// distribution computed here in long double from the same formula softmax(log p / T).
TEST(SampleToken, LowTemperaturesPickTheMostLikelyNeverTheLeast) {
  const std::vector<float> p = {0.1f, 0.5f, 0.15f, 0.25f};
  // (At T = 0.01 the next token keeps 2^-100 of the top one's weight, below double's resolution
  // of u; at higher temperatures u just below 1 rightly draws another token.)
  for (double t : {1e-300, 1e-30, 1e-3, 0.01}) {
    for (double u : {0.0, 0.25, 0.5, 0.999, std::nextafter(1.0, 0.0)}) {
      EXPECT_EQ(sample_token(p.data(), 4, t, 0, u), 1) << "T " << t << ", u " << u;
      EXPECT_EQ(sample_token(p.data(), 4, t, 3, u), 1) << "T " << t << ", u " << u << ", top-3";
    }
  }
  // The reported case: a flatter distribution (the most likely token at 0.3: 0.3^1000 = 1e-523)
  // at --temperature 0.001 drew the least likely token every time.
  const std::vector<float> flat = {0.2f, 0.25f, 0.3f, 0.25f};
  for (double u : {0.0, 0.5, 0.99}) EXPECT_EQ(sample_token(flat.data(), 4, 0.001, 0, u), 2) << "u " << u;
  // At T = 0.2 the next most likely token (3) keeps (0.25/0.5)^5 = 1/32 of token 1's weight.
  for (double t : {0.2, 0.5, 2.0}) {
    long double w[4], total = 0;
    for (int i = 0; i < 4; ++i) total += w[i] = std::exp((std::log(static_cast<long double>(p[i])) - std::log(0.5L)) / t);
    const int order[4] = {1, 3, 2, 0};
    long double acc = 0;
    for (int i = 0; i < 4; ++i) {
      const long double lo = acc;
      acc += w[order[i]] / total;
      const double mid = static_cast<double>((lo + acc) / 2);  // inside token order[i]'s interval
      EXPECT_EQ(sample_token(p.data(), 4, t, 0, mid), order[i]) << "T " << t << ", u " << mid;
    }
  }
  // A token of probability 0 is never drawn, even at u just below 1.
  const std::vector<float> z = {0.0f, 1.0f, 0.0f};
  for (double t : {1e-3, 1.0, 1e6}) EXPECT_EQ(sample_token(z.data(), 3, t, 0, std::nextafter(1.0, 0.0)), 1) << "T " << t;
}

}  // namespace
}  // namespace zero
