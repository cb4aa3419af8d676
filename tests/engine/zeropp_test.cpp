// ZeRO++ at stage 3 (docs/zeropp.md): qwZ (int8 parameter gathers) and hpZ (the secondary
// partition inside the node), alone and together, on thread ranks arranged as nodes.
//
// Quantiser: zero's packets and dequantised values equal an independent NumPy model exactly on
// swept sizes (one element, around the block of 2048, several blocks with a short last one, a
// block of zeros, outliers), and the error stays within m/254 a block.
// Bytes: every rank's bytes per step, in all and across nodes, equal a count over its peers from
// the formulas (per unit of P padded elements, k = P/N, e bytes an element, Q(k) = k + 4*ceil(k/2048)):
//   to every peer:       reduce-scatter k*e; forward gather Q(k) with qwZ, else k*e; backward
//                        gather, without hpZ, the same again
//   to its hpZ group:    with hpZ, the backward gather: P/H*e to each of the H-1 others (inside the node)
// Bits: hpZ alone gives stage 3's weights bit for bit (the backward gathers copies of the values
// the forward gathered); every option gives the same bits twice and on every rank.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <fstream>

#include "common/sha256.h"
#include "engine/mlp_run.h"
#include "engine/quantize.h"
#include "engine/text_run.h"
#include "memory/ledger.h"

namespace zero::testing {
namespace {

// ---- the quantiser against NumPy ----

float input(std::size_t k, std::size_t i) {
  // a mix of magnitudes: a sine, an outlier every 997 elements, a block of zeros at 4096..6143
  if (i >= 4096 && i < 6144) return 0.0f;
  const float base = 0.02f * std::sin(0.37f * static_cast<float>(i) + static_cast<float>(k));
  return i % 997 == 5 ? base * 300.0f : base;
}

TEST(ZeroppQuantizer, EqualsNumpyOnSweptSizes) {
  const std::vector<std::size_t> sizes = {1, 2, 7, 2047, 2048, 2049, 4097, 8192, 10000};
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "zeropp_quantizer";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream list(dir / "sizes.txt");
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const std::size_t k = sizes[i];
    std::vector<float> x(k), out(k);
    for (std::size_t j = 0; j < k; ++j) x[j] = input(k, j);
    std::vector<std::uint8_t> packet(quantized_bytes(k));
    quantize_int8(x.data(), k, packet.data());
    dequantize_int8(packet.data(), k, out.data());
    EXPECT_EQ(packet.size(), k + 4 * ((k + 2047) / 2048)) << k;
    list << k << '\n';
    std::ofstream(dir / cat("in_", i, ".f32"), std::ios::binary).write(reinterpret_cast<const char*>(x.data()), static_cast<std::streamsize>(k * 4));
    std::ofstream(dir / cat("packet_", i, ".bin"), std::ios::binary).write(reinterpret_cast<const char*>(packet.data()), static_cast<std::streamsize>(packet.size()));
    std::ofstream(dir / cat("out_", i, ".f32"), std::ios::binary).write(reinterpret_cast<const char*>(out.data()), static_cast<std::streamsize>(k * 4));
  }
  list.close();
  const std::string command = cat("/usr/bin/python3 ", ZERO_TEST_SOURCE_DIR, "/engine/quantize_reference.py ", dir.string());
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
}

// A block holding an Inf or a NaN dequantises to NaN (as the exact gather would spread it); the
// other blocks are untouched.
TEST(ZeroppQuantizer, ANonFiniteBlockComesBackNaNAndAloneSo) {
  for (float bad : {std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
    const std::size_t k = kQuantBlock + 5;
    std::vector<float> x(k), out(k), clean(k);
    for (std::size_t j = 0; j < k; ++j) x[j] = input(k, j);
    std::vector<std::uint8_t> packet(quantized_bytes(k));
    quantize_int8(x.data(), k, packet.data());
    dequantize_int8(packet.data(), k, clean.data());
    x[kQuantBlock + 2] = bad;
    quantize_int8(x.data(), k, packet.data());
    dequantize_int8(packet.data(), k, out.data());
    for (std::size_t j = 0; j < kQuantBlock; ++j) ASSERT_EQ(out[j], clean[j]) << j;
    for (std::size_t j = kQuantBlock; j < k; ++j) EXPECT_TRUE(std::isnan(out[j])) << bad << " at " << j;
  }
}

// ---- the engine ----

struct Options {
  bool qwz = false;
  int hpz = 1;
  bool qgz = false;  // qgZ (quantized_gradients_test.cpp has it alone; here with the others)
};

std::string name(const Options& o) {
  std::string n = cat(o.qwz ? "+qwZ" : "", o.hpz > 1 ? cat("+hpZ", o.hpz) : "", o.qgz ? "+qgZ" : "");
  return n.empty() ? "stage 3" : n.substr(1);
}

// Units of several quantiser blocks on 4 and 8 ranks (the first: 64*256+256 parameters).
MlpShape wide_shape() { return {{64, 256, 48, 8}, false}; }

MlpRun run_of(const Options& o, int ranks_per_node, int steps = 2) {
  MlpRun run;
  run.stage = 3;
  run.steps = steps;
  run.global_batch = 24;
  run.shape = wide_shape();
  run.ranks_per_node = ranks_per_node;
  run.quantized_weights = o.qwz;
  run.hpz_partition_size = o.hpz;
  run.quantized_gradients = o.qgz;
  return run;
}

struct Expected {
  std::uint64_t sent = 0, across = 0;
};

Expected expected_bytes(const Options& o, int r, int n, int per_node, const FlatLayout& layout) {
  Expected e;
  const std::uint64_t f32 = 4;
  const int h = o.hpz;
  for (int u = 0; u < layout.num_units(); ++u) {
    const std::uint64_t p = layout.unit(u).padded, k = p / static_cast<std::uint64_t>(n);
    const std::uint64_t gather = o.qwz ? k + 4 * ((k + 2047) / 2048) : k * f32;  // int8 values, an f32 scale a block of 2048
    const std::uint64_t to_peer = gather + (h > 1 ? 0 : gather);
    // The gradients: stage 3's slice of f32 to each peer; under qgZ (M nodes), M blocks of 4 bits
    // (a scale per 64) to each peer on the node, and one to the peer of the same place on each other node.
    const std::uint64_t q4 = (k + 1) / 2 + 4 * ((k + 63) / 64), nodes = static_cast<std::uint64_t>(n / per_node);
    for (int q = 0; q < n; ++q) {
      if (q == r) continue;
      const bool across = q / per_node != r / per_node;
      const bool same_hpz_group = h > 1 && q / h == r / h;  // H divides the ranks per node: consecutive groups of H
      const std::uint64_t grads = !o.qgz ? k * f32 : !across ? nodes * q4 : q % per_node == r % per_node ? q4 : 0;
      const std::uint64_t bytes = to_peer + grads + (same_hpz_group ? p / static_cast<std::uint64_t>(h) * f32 : 0);
      e.sent += bytes;
      if (across) e.across += bytes;
    }
  }
  return e;
}

TEST(Zeropp, BytesPerLinkEqualTheFormulas) {
  struct Case {
    int n, per_node;
    Options o;
  };
  const std::vector<Case> cases = {{4, 2, {false, 1}}, {4, 2, {true, 1}}, {4, 2, {false, 2}}, {4, 2, {true, 2}},
                                   {8, 4, {true, 1}},  {8, 4, {false, 4}}, {8, 4, {true, 4}}, {8, 4, {true, 2}}, {8, 2, {true, 2}},
                                   // all three together, and qgZ with each of the others
                                   {4, 2, {true, 2, true}}, {8, 4, {true, 4, true}}, {8, 2, {true, 2, true}}, {4, 2, {true, 1, true}},
                                   {4, 2, {false, 2, true}}};
  for (const Case& c : cases) {
    const std::vector<RankResult> results = run_threads(run_of(c.o, c.per_node), c.n);
    const FlatLayout layout(Mlp(wide_shape()).units(), c.n);
    for (int r = 0; r < c.n; ++r) {
      const Traffic& t = results[r].step_traffic;
      const Expected e = expected_bytes(c.o, r, c.n, c.per_node, layout);
      const std::string what = cat(name(c.o), " N=", c.n, " ranks per node ", c.per_node, " rank ", r);
      EXPECT_EQ(t.total_sent(), e.sent) << what;
      EXPECT_EQ(t.total_sent_across(), e.across) << what;
      EXPECT_EQ(t.total_received(), e.sent) << what;
    }
    if (c.n == 8 && c.per_node == 4 && c.o.qwz && c.o.hpz == 4) {
      const Expected plain = expected_bytes({}, 0, c.n, c.per_node, layout), both = expected_bytes(c.o, 0, c.n, c.per_node, layout);
      std::printf("[ measured ] N=8 on 2 nodes of 4, P=%zu: rank 0 across nodes per step: stage 3 %llu B, qwZ+hpZ4 %llu B (%.3f)\n",
                  results[0].padded, static_cast<unsigned long long>(plain.across), static_cast<unsigned long long>(both.across),
                  static_cast<double>(both.across) / static_cast<double>(plain.across));
    }
  }
}

std::string digest(const std::vector<float>& params) { return sha256_hex(params.data(), params.size() * sizeof(float)); }

// The weights read out (Engine::full_parameters: saved, exported, hashed) are the exact masters,
// never the quantised copy compute gathers: before any step they are stage 3's initial values.
TEST(Zeropp, WeightsReadOutAreTheExactMasters) {
  const std::vector<float> initial = run_threads(run_of({}, 2, 0), 4)[0].params;
  EXPECT_TRUE(same_bits(run_threads(run_of({true, 2}, 2, 0), 4)[0].params, initial));
  EXPECT_TRUE(same_bits(run_threads(run_of({true, 1}, 2, 0), 4)[2].params, initial));
}

TEST(Zeropp, HpzAloneGivesStage3sBitsAndEveryOptionRepeats) {
  const std::vector<float> stage3 = run_threads(run_of({}, 2, 4), 4)[0].params;
  EXPECT_TRUE(same_bits(run_threads(run_of({false, 2}, 2, 4), 4)[0].params, stage3)) << "hpZ2 on 2 nodes of 2";
  EXPECT_TRUE(same_bits(run_threads(run_of({false, 4}, 4, 4), 8)[3].params, run_threads(run_of({}, 4, 4), 8)[3].params)) << "hpZ4, N=8";
  {  // with DeepSpeed's schedule: units gathered ahead across the passes, and kept whole for reuse; two micro-batches
    MlpRun exact = run_of({}, 2, 3), hpz = run_of({false, 2}, 2, 3);
    for (MlpRun* r : {&exact, &hpz}) r->stage3.prefetch_bucket = 20'000, r->stage3.max_reuse_distance = 20'000, r->micro_batches = 2;
    EXPECT_TRUE(same_bits(run_threads(hpz, 4)[1].params, run_threads(exact, 4)[1].params)) << "hpZ2 with prefetch and reuse";
  }
  std::vector<float> qwz;
  for (const Options& o : {Options{true, 1}, Options{true, 2}}) {
    const std::vector<RankResult> a = run_threads(run_of(o, 2, 4), 4), b = run_threads(run_of(o, 2, 4), 4);
    if (o.hpz == 1) {
      qwz = a[0].params;
    } else {
      EXPECT_TRUE(same_bits(a[0].params, qwz)) << name(o) << ": hpZ changes no bit with qwZ either";
    }
    for (int r = 1; r < 4; ++r) EXPECT_TRUE(same_bits(a[r].params, a[0].params)) << name(o) << " rank " << r;
    EXPECT_EQ(digest(a[0].params), digest(b[0].params)) << name(o);
    // The quantised gathers are in use: the weights differ from stage 3's (how much that matters
    // to learning is ZeroppLearning's to say).
    const double diff = worst_tensor_difference(Mlp(wide_shape()).units(), a[0].params, stage3, true);
    std::printf("[ measured ] %s after 4 steps: worst relative L2 difference of a tensor to stage 3's weights %.3g\n", name(o).c_str(), diff);
    EXPECT_GT(diff, 0.0) << name(o);
  }
}

// The secondary partition is memory of category parameters: P/H elements beside the shard P/N.
TEST(Zeropp, SecondaryPartitionInTheLedger) {
  for (int h : {1, 2}) {
    const RankResult r = run_threads(run_of({false, h}, 2, 1), 4)[1];
    const std::uint64_t p = r.padded * 4;
    EXPECT_EQ(r.device.current[static_cast<int>(Category::kParameters)], p / 4 + (h > 1 ? p / h : 0)) << "H=" << h;
  }
}

TEST(Zeropp, RefusesNodesThatDoNotFit) {
  for (const auto& [n, per_node, h, message] :
       {std::tuple<int, int, int, const char*>{4, 2, 4, "is 4, which does not divide the 2 ranks per node"},
        {6, 4, 2, "needs the same number of ranks on every node, and the nodes have 4, 2"}}) {
    MlpRun run = run_of({false, h}, per_node);
    run.global_batch = 24;
    try {
      run_threads(run, n);
      ADD_FAILURE() << "no error for H=" << h;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  }
}

// ---- learning, on the default text ----

constexpr int kSteps = 60;

// A small GPT on 4 thread ranks (one node; hpZ groups of 2 inside it), stage 3 with every unit
// gathered per use (no persistence).
TrainResult train_text(const Options& o, int seed, int ranks = 2, int ranks_per_node = 0, int mics_shard_size = -1) {
  nlohmann::json j = {{"train_micro_batch_size_per_gpu", 8},
                      {"gradient_accumulation_steps", 1},
                      {"optimizer", {{"type", "AdamW"}, {"params", {{"lr", 3e-3}, {"betas", {0.9, 0.95}}, {"weight_decay", 0.1}}}}},
                      {"gradient_clipping", 1.0},
                      {"zero_optimization", {{"stage", 3}, {"stage3_param_persistence_threshold", 0}, {"zero_quantized_weights", o.qwz},
                                             {"zero_hpz_partition_size", o.hpz}, {"zero_quantized_gradients", o.qgz},
                                             {"mics_shard_size", mics_shard_size}}},
                      {"train_steps", kSteps},
                      {"seed", seed},
                      {"model", {{"type", "gpt"}, {"vocab_size", 256}, {"n_ctx", 32}, {"n_embd", 32}, {"n_layer", 1}, {"n_head", 4}}},
                      {"data", {{"val_fraction", 0.05}, {"seed", seed}}}};
  return train_on_default_text(j, ranks, ranks_per_node);
}

// The tolerance: the range of exact stage 3's validation losses over seeds 1-3 (what a change of
// seed alone moves it by). Each option at seed 1 must land within it of exact stage 3 at seed 1.
// hpZ changes no bit: alone it gives stage 3's weights, with qwZ those of qwZ alone (the backward
// then gathers the forward's dequantised values, which qwZ alone re-creates from the same slices).
// On 2 ranks (one node: hpZ's group is the world there; the bytes tests above cover nodes).
TEST(ZeroppLearning, WithinTheSpreadOfExactStage3AndHpzBitForBit) {
  std::vector<TrainResult> exact;
  for (int seed : {1, 2, 3}) exact.push_back(train_text({}, seed));
  float lo = exact[0].final_val_loss, hi = lo;
  for (const TrainResult& r : exact) lo = std::min(lo, r.final_val_loss), hi = std::max(hi, r.final_val_loss);
  const double range = hi - lo;
  EXPECT_LT(exact[0].final_val_loss, 3.7) << "stage 3 must have learned (ln 256 = 5.55 at the start)";
  std::string qwz_sha;
  for (const Options& o : {Options{true, 1}, Options{false, 2}, Options{true, 2}}) {
    const TrainResult r = train_text(o, 1);
    if (o.qwz && o.hpz == 1) qwz_sha = r.weights_sha256;
    std::printf("[ measured ] validation loss after %d steps: stage 3 %.4f %.4f %.4f (seeds 1-3, range %.4f); %s (seed 1) %.4f, %+.4f\n",
                kSteps, exact[0].final_val_loss, exact[1].final_val_loss, exact[2].final_val_loss, range, name(o).c_str(), r.final_val_loss,
                r.final_val_loss - exact[0].final_val_loss);
    EXPECT_LE(std::abs(r.final_val_loss - exact[0].final_val_loss), range) << name(o);
    if (!o.qwz) {
      EXPECT_EQ(r.weights_sha256, exact[0].weights_sha256) << "hpZ alone must give stage 3's weights";
    }
    if (o.qwz && o.hpz > 1) {
      EXPECT_EQ(r.weights_sha256, qwz_sha) << "with qwZ, hpZ must change no bit either";
    }
  }
}

// All three together need nodes (qgZ works across them, hpZ inside them): 4 ranks as 2 nodes of
// 2, against exact stage 3's spread over seeds on the same ranks; and hybrid sharding in groups
// of 2 there (docs/hybrid.md: exact but for the order of the sums across groups).
TEST(ZeroppLearning, AllThreeAndHybridOnTwoNodesWithinTheSpreadOfExactStage3) {
  std::vector<float> exact;
  for (int seed : {1, 2, 3}) exact.push_back(train_text({}, seed, 4, 2).final_val_loss);
  const double range = *std::max_element(exact.begin(), exact.end()) - *std::min_element(exact.begin(), exact.end());
  const Options all{true, 2, true};
  const TrainResult a = train_text(all, 1, 4, 2), b = train_text(all, 1, 4, 2);
  std::printf("[ measured ] 4 ranks as 2 nodes, %d steps: stage 3 %.4f %.4f %.4f (range %.4f); qwZ+hpZ2+qgZ %.4f, %+.4f\n", kSteps,
              exact[0], exact[1], exact[2], range, a.final_val_loss, a.final_val_loss - exact[0]);
  EXPECT_LT(exact[0], 3.7) << "stage 3 must have learned (ln 256 = 5.55 at the start)";
  EXPECT_LE(std::abs(a.final_val_loss - exact[0]), range) << name(all);
  EXPECT_EQ(a.weights_sha256, b.weights_sha256) << "the same run twice must give the same bits";
  const TrainResult hybrid = train_text({}, 1, 4, 2, 2);
  std::printf("[ measured ] hybrid sharding G=2 %.4f, %+.4f\n", hybrid.final_val_loss, hybrid.final_val_loss - exact[0]);
  EXPECT_LE(std::abs(hybrid.final_val_loss - exact[0]), range) << "hybrid sharding G=2";
}

}  // namespace
}  // namespace zero::testing
