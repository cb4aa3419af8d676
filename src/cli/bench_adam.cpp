// `zero bench adam`: how close the CPU Adam step runs to the speed of memory.
//
// The step is memory-bound (28 bytes per parameter: p, g, m, v read; p, m, v written in place),
// so its ceiling is not a FLOP count but a loop with the same traffic and no arithmetic to speak
// of: adam_traffic_ceiling, which runs with the same tiles, threads, vector width and stores.
// Memory bandwidth drifts by 20-30% between runs minutes apart, so the ceiling is measured in
// the same run, interleaved with the kernel (one repetition runs every variant once), and only
// ratios of times measured side by side are reported as ratios.
#include "cli/bench_adam.h"

#include <omp.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/output_file.h"
#include "optim/cpu_adam.h"

namespace zero {
namespace {

constexpr const char* kUsage =
    "usage: zero bench adam [flags]\n"
    "\n"
    "Times the CPU Adam step against the memory ceiling for its access pattern (a loop that reads\n"
    "p, g, m, v and writes p, m, v back in place), both measured in this run, interleaved, for 1\n"
    "thread and all threads. Also times the step with its fused bf16 copy (30 bytes/param).\n"
    "Speeds come from the median time of the repetitions, ratios from the median of ratios of\n"
    "pairs run side by side; --json also records the best and every time.\n"
    "\n"
    "flags:\n"
    "  --sizes LIST    parameter counts, K/M/G = 2^10/2^20/2^30 (default: 16M,64M,256M)\n"
    "  --threads N     'all threads' (default: OpenMP's maximum, here %d)\n"
    "  --reps N        timed repetitions per variant (default: 7, more for small sizes)\n"
    "  --isa NAME      auto, scalar, avx2 or avx512 (default: auto, here %s)\n"
    "  --json FILE     also write the results as JSON\n"
    "  --help          this text\n";

struct Flags {
  std::vector<std::size_t> sizes = {std::size_t{16} << 20, std::size_t{64} << 20, std::size_t{256} << 20};
  int threads = 0;
  int reps = 0;
  CpuIsa isa = CpuIsa::kAuto;
  std::string json;
  bool help = false;
};

std::size_t parse_size(const std::string& word) {
  std::size_t used = 0;
  unsigned long long x = 0;
  try {
    x = std::stoull(word, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  const std::string suffix = used == 0 ? "" : word.substr(used);
  const int shift = suffix.empty() ? 0 : suffix == "K" ? 10 : suffix == "M" ? 20 : suffix == "G" ? 30 : -1;
  if (used == 0 || shift < 0 || x == 0 || x > (1ull << 40 >> shift)) {
    throw ConfigError(cat("[cli] --sizes takes counts like 16M,64M,256M (K, M, G = 2^10, 2^20, 2^30), not '", word, "'"));
  }
  return static_cast<std::size_t>(x << shift);
}

int parse_int(const std::string& flag, const std::string& word, int min, int max) {
  std::size_t used = 0;
  long long x = 0;
  try {
    x = std::stoll(word, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != word.size() || x < min || x > max) {
    throw ConfigError(cat("[cli] --", flag, " must be an integer from ", min, " to ", max, ", not '", word, "'"));
  }
  return static_cast<int>(x);
}

bool known_value_flag(const std::string& name) {
  const std::vector<std::string> names = bench_adam_flag_names();
  return name.rfind("--", 0) == 0 && std::find(names.begin(), names.end(), name.substr(2)) != names.end();
}

Flags parse_flags(int argc, char** argv) {
  Flags f;
  for (int i = 0; i < argc; ++i) {
    std::string name = argv[i], value;
    if (name == "--help" || name == "-h") {
      f.help = true;
      continue;
    }
    const auto eq = name.find('=');
    if (eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    } else if (known_value_flag(name)) {
      if (i + 1 >= argc) throw ConfigError(cat("[cli] ", name, " needs a value; see zero bench adam --help"));
      value = argv[++i];
    }
    if (known_value_flag(name) && value.empty()) {
      throw ConfigError(cat("[cli] ", name, " is given an empty value: give it one or leave the flag out; see zero bench adam --help"));
    }
    if (name == "--sizes") {
      f.sizes.clear();
      for (std::size_t start = 0; start <= value.size();) {
        const std::size_t comma = std::min(value.find(',', start), value.size());
        f.sizes.push_back(parse_size(value.substr(start, comma - start)));
        start = comma + 1;
      }
    } else if (name == "--threads") {
      f.threads = parse_int("threads", value, 1, 4096);
    } else if (name == "--reps") {
      f.reps = parse_int("reps", value, 1, 1000);
    } else if (name == "--isa") {
      f.isa = cpu_isa_parse(value);
    } else if (name == "--json") {
      f.json = value;
    } else {
      throw ConfigError(cat("[cli] unknown flag '", argv[i], "' for zero bench adam; see zero bench adam --help"));
    }
  }
  return f;
}

// Page-aligned memory, asking for transparent huge pages (fewer TLB misses when streaming GBs;
// kernel and ceiling share the buffers, so both get the same pages).
struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
template <class T>
std::unique_ptr<T[], FreeDeleter> alloc_array(std::size_t n) {
  constexpr std::size_t kHuge = std::size_t{2} << 20;
  const std::size_t bytes = (n * sizeof(T) + kHuge - 1) / kHuge * kHuge;
  void* p = std::aligned_alloc(kHuge, bytes);
  if (p == nullptr) throw OutOfMemoryError(cat("[cli] bench adam could not allocate ", bytes >> 20, " MiB; pass smaller --sizes"));
  madvise(p, bytes, MADV_HUGEPAGE);  // advice only: failure changes speed, not results
  return std::unique_ptr<T[], FreeDeleter>(static_cast<T*>(p));
}

struct Buffers {  // (max_n) each: fp32 p, g, m, v and the bf16 copy
  std::size_t n;
  std::unique_ptr<float[], FreeDeleter> p, g, m, v;
  std::unique_ptr<std::uint16_t[], FreeDeleter> copy;
  explicit Buffers(std::size_t n_)
      : n(n_), p(alloc_array<float>(n)), g(alloc_array<float>(n)), m(alloc_array<float>(n)), v(alloc_array<float>(n)),
        copy(alloc_array<std::uint16_t>(n)) {
    // First touch from all threads. Gradients are positive and >= 1e-4 so that neither the
    // step nor the ceiling's in-place adds ever reach subnormals (slow on some CPUs) or NaN.
#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < static_cast<std::int64_t>(n); ++i) {
      const auto u = static_cast<std::uint32_t>(i) * 2654435761u;
      p[i] = static_cast<float>(u >> 8) * 0x1p-24f - 0.5f;
      g[i] = 1e-4f + static_cast<float>(u >> 16) * 0x1p-16f * 1e-2f;
      m[i] = v[i] = 0.0f;
      copy[i] = 0;
    }
  }
};

enum Variant { kCeiling, kAdam, kCeilingBf16, kAdamBf16, kVariants };
constexpr const char* kVariantName[kVariants] = {"ceiling", "adam", "ceiling_bf16", "adam_bf16"};
constexpr double kBytesPerParam[kVariants] = {28, 28, 30, 30};

double median(std::vector<double> x) {
  std::sort(x.begin(), x.end());
  const std::size_t h = x.size() / 2;
  return x.size() % 2 ? x[h] : 0.5 * (x[h - 1] + x[h]);
}

// Seconds per pass of each variant, [variant][rep], over the first n elements with `threads`.
// One repetition runs every variant once, in order on even repetitions and in reverse on odd
// ones, so each compared pair (ceiling and step, step and step+copy) runs side by side, and
// neither always goes first.
std::vector<std::vector<double>> measure(Buffers& b, std::size_t n, int threads, int reps, CpuIsa isa) {
  AdamConfig config;
  config.weight_decay = 0.01f;
  std::vector<std::vector<double>> seconds(kVariants);
  std::int64_t t = 0;
  for (int rep = -1; rep < reps; ++rep) {  // rep -1 warms up
    for (int k = 0; k < kVariants; ++k) {
      const int variant = rep % 2 == 0 ? k : kVariants - 1 - k;
      AdamOptions o;
      o.threads = threads;
      o.isa = isa;
      if (variant == kCeilingBf16 || variant == kAdamBf16) o.copy = {b.copy.get(), n};
      const std::span<float> p(b.p.get(), n), m(b.m.get(), n), v(b.v.get(), n);
      const std::span<const float> g(b.g.get(), n);
      const auto start = std::chrono::steady_clock::now();
      if (variant == kCeiling || variant == kCeilingBf16) {
        adam_traffic_ceiling(p, g, m, v, o);
      } else {
        adam_step(adam_step_scalars(config, ++t), true, p, g, m, v, o);
      }
      const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
      if (rep >= 0) seconds[variant].push_back(took.count());
    }
  }
  return seconds;
}

// The median over repetitions of a[rep] / b[rep]: a ratio of two times measured side by side.
double paired_ratio(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> r;
  for (std::size_t i = 0; i < a.size(); ++i) r.push_back(a[i] / b[i]);
  return median(r);
}

std::string human(std::size_t n) {
  if (n % (1u << 30) == 0) return cat(n >> 30, "G");
  if (n % (1u << 20) == 0) return cat(n >> 20, "M");
  if (n % (1u << 10) == 0) return cat(n >> 10, "K");
  return cat(n);
}

// Other work on the machine skews bandwidth figures (and, less, the ratios); say so when seen.
void warn_if_busy() {
  double load = 0;
  if (std::FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf", &load) != 1) load = 0;
    std::fclose(f);
  }
  if (load > 0.5) std::printf("note: load average %.2f: other work is running here and skews these figures\n", load);
}

int run(const Flags& f) {
  const int all = f.threads != 0 ? f.threads : omp_get_max_threads();
  const CpuIsa isa = f.isa == CpuIsa::kAuto ? adam_isa_active() : f.isa;
  if (!cpu_isa_supported(isa)) throw ConfigError(cat("[cli] this CPU cannot run the ", cpu_isa_name(isa), " kernel; try --isa auto"));
  const std::size_t max_n = *std::max_element(f.sizes.begin(), f.sizes.end());
  if (!f.json.empty()) check_output_path({"--json", f.json});  // before the measurements, not after
  std::printf("zero bench adam: %s kernel, %d threads for 'all'\n", cpu_isa_name(isa), all);
  std::printf("GB/s and Gparam/s: from the median time of the repetitions; GB/s counts 28 bytes/param (30 with the\n"
              "bf16 copy). ratio: ceiling time / kernel time, the median over repetitions of pairs run side by side.\n"
              "bf16 cost: the step's extra time with its bf16 copy, paired likewise (its extra traffic is 2/28 = +7.1%%).\n");
  warn_if_busy();
  std::printf("\n");
  std::printf("%7s %7s %4s | %9s %9s %8s %6s | %9s %9s %8s %6s %10s\n", "params", "threads", "reps", "ceil GB/s",
              "adam GB/s", "Gparam/s", "ratio", "c+bf GB/s", "a+bf GB/s", "Gparam/s", "ratio", "bf16 cost");
  Buffers b(max_n);
  nlohmann::json results = nlohmann::json::array();
  for (std::size_t n : f.sizes) {
    const int reps = f.reps != 0 ? f.reps : static_cast<int>(std::clamp<std::size_t>(7 * ((std::size_t{256} << 20) / n), 7, 51));
    std::vector<int> thread_counts = {1};
    if (all > 1) thread_counts.push_back(all);
    for (int threads : thread_counts) {
      const std::vector<std::vector<double>> t = measure(b, n, threads, reps, isa);
      auto seconds = [&](int v) { return median(t[v]); };
      auto gbs = [&](int v) { return kBytesPerParam[v] * static_cast<double>(n) / seconds(v) / 1e9; };
      auto gps = [&](int v) { return static_cast<double>(n) / seconds(v) / 1e9; };
      const double ratio = paired_ratio(t[kCeiling], t[kAdam]);
      const double ratio_bf16 = paired_ratio(t[kCeilingBf16], t[kAdamBf16]);
      const double bf16_cost = paired_ratio(t[kAdamBf16], t[kAdam]) - 1.0;  // its extra traffic: 2/28 = 7.1%
      std::printf("%7s %7d %4d | %9.1f %9.1f %8.3f %6.3f | %9.1f %9.1f %8.3f %6.3f %+9.1f%%\n", human(n).c_str(), threads,
                  reps, gbs(kCeiling), gbs(kAdam), gps(kAdam), ratio, gbs(kCeilingBf16), gbs(kAdamBf16), gps(kAdamBf16),
                  ratio_bf16, 100.0 * bf16_cost);
      std::fflush(stdout);
      nlohmann::json row = {{"params", n}, {"threads", threads}, {"reps", reps}, {"ratio_to_ceiling", ratio},
                            {"bf16_ratio_to_ceiling", ratio_bf16}, {"bf16_time_cost", bf16_cost}};
      for (int v = 0; v < kVariants; ++v) {
        row[kVariantName[v]] = {{"seconds_median", seconds(v)}, {"seconds_best", *std::min_element(t[v].begin(), t[v].end())},
                                {"seconds", t[v]}, {"bytes_per_param", kBytesPerParam[v]}, {"gb_per_s", gbs(v)},
                                {"gparams_per_s", gps(v)}};
      }
      results.push_back(row);
    }
  }
  warn_if_busy();
  if (!f.json.empty()) {
    const nlohmann::json j = {{"benchmark", "adam"}, {"isa", cpu_isa_name(isa)}, {"all_threads", all}, {"statistic", "median"},
                              {"results", results}};
    write_output_file({"--json", f.json}, j.dump(2) + "\n");
  }
  return 0;
}

}  // namespace

// Every flag takes a value; kUsage describes each (the help test checks it names them all).
std::vector<std::string> bench_adam_flag_names() { return {"sizes", "threads", "reps", "isa", "json"}; }

int bench_adam_main(int argc, char** argv) {
  Flags f;
  try {
    f = parse_flags(argc, argv);
  } catch (const Error& e) {
    std::fprintf(stderr, "zero: %s\n", e.what());
    return 2;
  }
  if (f.help) {
    std::printf(kUsage, omp_get_max_threads(), cpu_isa_name(adam_isa_active()));
    return 0;
  }
  try {
    return run(f);
  } catch (const Error& e) {
    std::fprintf(stderr, "zero: %s\n", e.what());
    return 1;
  }
}

}  // namespace zero
