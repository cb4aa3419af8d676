// qgZ (zero_optimization.zero_quantized_gradients): stage 3's gradient reduce-scatter as a
// hierarchical all-to-all of 4-bit blocks, on thread ranks arranged as nodes.
//
// Values: the quantiser (bytes, dequantised values, the s/2 error bound; runs that are not a
// multiple of the block; a block with an Inf) and the whole reduce-scatter on 4, 6 and 8 ranks
// as 2 to 4 nodes equal an independent NumPy model (quantized_gradients_reference.py) exactly.
// Bytes: every rank's measured bytes per step, in all and across nodes, equal a count over its
// peers made here: the parameter all-gathers as in plain stage 3, and per unit (L-1) M Q(k)
// inside the node and (M-1) Q(k) across, Q(k) = 4 ceil(k/64) + ceil(k/2). Bits: the same run
// gives the same bits twice and on every rank; on one node it is stage 3 exactly (DeepSpeed's
// fallback). Learning: on the default text, qgZ's validation loss stays within the spread of
// exact stage 3 over seeds.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <numeric>
#include <filesystem>
#include <fstream>

#include "backends/registry.h"
#include "common/error_of.h"
#include "common/sha256.h"
#include "engine/gradient_quantize.h"
#include "engine/mlp_run.h"
#include "engine/quantized_reduce_scatter.h"
#include "engine/text_run.h"

namespace zero::testing {
namespace {

#define EXPECT_CONTAINS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << "message: " << (text)

// Mixed signs and magnitudes over six decades (a magnitude per 50 elements, so blocks see both
// flat and peaked runs), and a run of exact zeros.
float input(std::uint64_t seed, std::size_t i) {
  std::uint64_t x = (seed * 1000003u + i) * 0x9E3779B97F4A7C15ull;
  x ^= x >> 29;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 32;
  if (i % 1031 < 300 && seed % 3 == 0) return 0.0f;
  const float u = static_cast<float>(x % 20001) / 10000.0f - 1.0f;  // [-1, 1]
  return u * std::pow(10.0f, static_cast<float>(static_cast<int>((i / 50 + seed) % 7) - 3));
}

template <typename T>
void write(const std::filesystem::path& path, const std::vector<T>& v) {
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(T)));
}

std::filesystem::path fresh_dir(const std::string& name) {
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

void write_quantiser_runs(const std::filesystem::path& dir) {
  const std::vector<std::size_t> sizes = {1, 2, 3, 7, 63, 64, 65, 127, 255, 256, 257, 1000, 4097};
  std::vector<float> in, out;
  std::vector<std::uint8_t> bytes;
  std::ofstream list(dir / "quantiser.txt");
  for (std::size_t s = 0; s < sizes.size(); ++s) {
    const std::size_t n = sizes[s];
    std::vector<float> x(n);
    for (std::size_t i = 0; i < n; ++i) x[i] = input(s, i);
    if (n == 1000) x[300] = std::numeric_limits<float>::infinity();  // its block comes back NaN
    std::vector<std::uint8_t> q(int4_bytes(n));
    std::vector<float> back(n);
    quantize_int4(x.data(), n, q.data());
    dequantize_int4(q.data(), n, back.data());
    in.insert(in.end(), x.begin(), x.end());
    out.insert(out.end(), back.begin(), back.end());
    bytes.insert(bytes.end(), q.begin(), q.end());
    list << n << '\n';
  }
  write(dir / "quantiser_in.f32", in);
  write(dir / "quantiser_out.f32", out);
  write(dir / "quantiser_bytes.u8", bytes);
}

// Every rank of a world of n as nodes of per_node reduces slices of each k; inputs and outputs
// appended in the reference's order.
void reduce_on(int n, int per_node, const std::vector<std::size_t>& ks, std::vector<float>& in, std::vector<float>& out) {
  const std::size_t at_in = in.size(), at_out = out.size();
  std::size_t total_in = 0, total_out = 0;
  for (std::size_t k : ks) total_in += n * n * k, total_out += n * k;
  in.resize(at_in + total_in);
  out.resize(at_out + total_out);
  ThreadWorld world(n, {}, per_node);
  world.run([&](int r) {
    Ledger ledger;
    auto comm = world.communicator(r, &ledger);
    const std::unique_ptr<Device> device = make_device("cpu", ledger);
    QuantizedReduceScatter reduce(*comm, *device, *std::max_element(ks.begin(), ks.end()));
    std::size_t base_in = at_in, base_out = at_out;
    for (std::size_t k : ks) {
      float* mine = in.data() + base_in + static_cast<std::size_t>(r) * n * k;
      for (std::size_t i = 0; i < n * k; ++i) mine[i] = input(static_cast<std::uint64_t>(r + 10 * k), i);
      reduce.run(mine, out.data() + base_out + static_cast<std::size_t>(r) * k, k, Dtype::kF32);
      base_in += n * n * k;
      base_out += n * k;
    }
  });
}

TEST(QuantizedGradients, QuantiserAndHierarchicalReduceEqualNumPy) {
  const std::filesystem::path dir = fresh_dir("qgz_reference");
  write_quantiser_runs(dir);
  struct World {
    int n, per_node;
  };
  const std::vector<std::size_t> ks = {1, 63, 65, 600};
  std::vector<float> in, out;
  std::ofstream list(dir / "reduce.txt");
  for (const World w : {World{4, 2}, World{6, 3}, World{8, 2}, World{8, 4}, World{6, 2}}) {
    reduce_on(w.n, w.per_node, ks, in, out);
    list << w.n << ' ' << w.per_node;
    for (std::size_t k : ks) list << ' ' << k;
    list << '\n';
  }
  list.close();
  write(dir / "reduce_in.f32", in);
  write(dir / "reduce_out.f32", out);
  const std::string command = cat("/usr/bin/python3 ", ZERO_TEST_SOURCE_DIR, "/engine/quantized_gradients_reference.py ", dir.string());
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
}

constexpr int kLearningSteps = 150;

std::uint64_t quantised(std::uint64_t k) { return 4 * ((k + 63) / 64) + (k + 1) / 2; }

MlpRun qgz_run(int ranks_per_node, int steps = 1) {
  MlpRun run;
  run.stage = 3;
  run.steps = steps;
  run.global_batch = 24;
  run.ranks_per_node = ranks_per_node;
  run.quantized_gradients = true;
  return run;
}

TEST(QuantizedGradients, BytesPerLinkEqualTheCountOverPeers) {
  struct Case {
    int n, per_node;
  };
  for (const Case c : {Case{4, 2}, Case{8, 2}, Case{8, 4}}) {
    const std::vector<RankResult> results = run_threads(qgz_run(c.per_node), c.n);
    const FlatLayout layout(Mlp(MlpShape()).units(), c.n);
    const int nodes = c.n / c.per_node;
    for (int r = 0; r < c.n; ++r) {
      // The parameters: two all-gathers of every unit, this rank's slice of P/N f32 to each peer.
      std::uint64_t sent = 0, across = 0;
      for (int p = 0; p < c.n; ++p) {
        if (p == r) continue;
        const std::uint64_t bytes = 2 * layout.padded_numel() / c.n * 4;
        sent += bytes;
        if (p / c.per_node != r / c.per_node) across += bytes;
      }
      // The gradients: per unit, M quantised slices to each of the L-1 peers on the node, one
      // to each of the M-1 ranks of the same place on the other nodes.
      std::uint64_t gradients = 0, gradients_across = 0;
      for (int u = 0; u < layout.num_units(); ++u) {
        const std::uint64_t k = layout.unit(u).padded / c.n;
        gradients += static_cast<std::uint64_t>((c.per_node - 1) * nodes) * quantised(k) + (nodes - 1) * quantised(k);
        gradients_across += (nodes - 1) * quantised(k);
      }
      const Traffic& t = results[r].step_traffic;
      const std::string what = cat("N=", c.n, ", ", c.per_node, " ranks per node, rank ", r);
      EXPECT_EQ(t.sent[static_cast<int>(Collective::kReduceScatter)], gradients) << what;
      EXPECT_EQ(t.total_sent(), sent + gradients) << what;
      EXPECT_EQ(t.total_sent_across(), across + gradients_across) << what;
      EXPECT_EQ(t.total_received(), sent + gradients) << what;
      // Its scratch, for the largest unit's slice: step 2's blocks sent and received (N each),
      // step 4's (M each), a pair's exchange (2 M), and three f32 slices; in whole f32.
      const std::uint64_t k_max = layout.largest_unit() / c.n;
      const std::uint64_t scratch = (2 * c.n + 4 * nodes) * quantised(k_max) + 12 * k_max;
      EXPECT_EQ(results[r].device.current[static_cast<int>(Category::kCommBuffers)], (scratch + 3) / 4 * 4) << what;
      if (r == 0) {
        const std::uint64_t exact_across = (c.n - c.per_node) * layout.padded_numel() / c.n * 4;  // f32 stage 3's reduce-scatter
        std::printf("[ measured ] N=%d, %d per node: gradient bytes across nodes %llu, f32 stage 3's %llu (%.4f of it)\n", c.n,
                    c.per_node, static_cast<unsigned long long>(gradients_across), static_cast<unsigned long long>(exact_across),
                    static_cast<double>(gradients_across) / static_cast<double>(exact_across));
      }
    }
  }
}

std::string digest(const std::vector<float>& params) { return sha256_hex(params.data(), params.size() * sizeof(float)); }

TEST(QuantizedGradients, SameBitsRunAfterRunAndStage3OnOneNode) {
  const int n = 4;
  const std::vector<RankResult> a = run_threads(qgz_run(2, 3), n), b = run_threads(qgz_run(2, 3), n);
  for (int r = 1; r < n; ++r) EXPECT_TRUE(same_bits(a[r].params, a[0].params)) << "rank " << r;
  EXPECT_EQ(digest(a[0].params), digest(b[0].params));
  MlpRun exact = qgz_run(2, 3);
  exact.quantized_gradients = false;
  const std::vector<float> stage3 = run_threads(exact, n)[0].params;
  EXPECT_FALSE(same_bits(a[0].params, stage3)) << "qgZ changed no bit: were the gradients quantised?";
  EXPECT_TRUE(same_bits(run_threads(qgz_run(0, 3), n)[0].params, stage3)) << "on one node qgZ is stage 3's reduce-scatter";
}

TEST(QuantizedGradients, RefusedWhereItMeansNothingAndOnUnevenNodes) {
  const auto with = [](int stage, int mics) {
    nlohmann::json z = {{"stage", stage}, {"zero_quantized_gradients", true}};
    if (mics > 0) z["mics_shard_size"] = mics;
    return nlohmann::json{{"train_batch_size", 8}, {"zero_optimization", z}};
  };
  EXPECT_TRUE(parse_config(with(3, 0), 4).engine.zero_quantized_gradients);
  for (int stage : {0, 1, 2}) {
    EXPECT_CONTAINS(error_of([&] { parse_config(with(stage, 0), 4); }),
                    cat("zero_optimization.zero_quantized_gradients quantises stage 3's gradient reduce-scatter (ZeRO++'s qgZ), and this "
                        "run is stage ", stage));
  }
  EXPECT_CONTAINS(error_of([&] { parse_config(with(3, 2), 4); }), "zero_quantized_gradients with mics_shard_size is not supported");
  EXPECT_CONTAINS(error_of([] { QuantizedReduceScatter::check_nodes(block_topology(0, 6, 4), 6); }),
                  "needs the same number of ranks on every node (its second all-to-all joins the ranks of the same place on each "
                  "node), and the 2 nodes hold 4, 2 ranks");
}

// The default text on 2 thread ranks as 2 nodes of 1 (the smallest world where qgZ quantises:
// each node's sum is its one rank's gradient, quantised twice), stage 3, exact or with qgZ: the
// final validation loss.
float validation_loss(bool quantized, int seed) {
  const nlohmann::json j = {
      {"train_micro_batch_size_per_gpu", 8},
      {"gradient_accumulation_steps", 1},
      {"optimizer", {{"type", "AdamW"}, {"params", {{"lr", 3e-3}, {"betas", {0.9, 0.95}}, {"weight_decay", 0.1}}}}},
      {"gradient_clipping", 1.0},
      {"zero_optimization", {{"stage", 3}, {"zero_quantized_gradients", quantized}}},
      {"train_steps", kLearningSteps},
      {"seed", seed},
      {"model", {{"type", "gpt"}, {"vocab_size", 256}, {"n_ctx", 32}, {"n_embd", 32}, {"n_layer", 2}, {"n_head", 4}}},
      {"data", {{"val_fraction", 0.05}, {"seed", seed}}}};
  return train_on_default_text(j, 2, 1).final_val_loss;
}

struct Losses {
  std::vector<double> values;
  double mean() const { return std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size()); }
  double range() const { return *std::max_element(values.begin(), values.end()) - *std::min_element(values.begin(), values.end()); }
};

Losses losses(bool quantized) {
  Losses l;
  for (int seed : {1, 2, 3}) l.values.push_back(validation_loss(quantized, seed));
  std::printf("[ measured ] %s validation loss after %d steps, seeds 1-3:", quantized ? "qgZ" : "stage 3", kLearningSteps);
  for (double v : l.values) std::printf(" %.4f", v);
  std::printf(" (mean %.4f, range %.4f)\n", l.mean(), l.range());
  return l;
}

// The tolerance is exact stage 3's own range over the seeds (initial weights and batch order):
// what a change of seed alone moves a run by, measured in the same run. Measured here
// (2026-12-03, AVX2): stage 3 2.8381 2.8443 2.8204 (range 0.0238), qgZ 2.8094 2.8096 2.8497
// (mean -0.0114, -0.40%). On 4 ranks as 2 nodes of 2 (200 steps, seeds 1-5; too slow for the
// suite) qgZ ended +0.0254 (+0.92%) above stage 3, within stage 3's range of 0.0376 there.
TEST(QuantizedGradients, LearnsAsStage3WithinItsSpreadOverSeeds) {
  const Losses exact = losses(false);
  EXPECT_LT(exact.mean(), 3.5) << "the exact runs must have learned (ln 256 = 5.55 at the start)";
  const Losses quantized = losses(true);
  std::printf("[ measured ] qgZ - stage 3: %+.4f (%+.2f%%); band %.4f\n", quantized.mean() - exact.mean(),
              100 * (quantized.mean() / exact.mean() - 1), exact.range());
  EXPECT_LE(std::abs(quantized.mean() - exact.mean()), exact.range());
}

}  // namespace
}  // namespace zero::testing
