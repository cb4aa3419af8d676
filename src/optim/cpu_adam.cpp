// The CPU Adam step's front: checks the spans, picks the kernel for this CPU, and splits the
// elements across OpenMP threads in tiles. The kernels themselves are cpu_adam_body.h.
#include "optim/cpu_adam.h"

#include <omp.h>

#include <algorithm>
#include <cstdint>

#include "common/error.h"
#include "optim/cpu_adam_body.h"

namespace zero {
namespace {

using cpu_adam::KernelTable;

// Elements per tile. 16Ki elements is 256 KiB of p, g, m and v: a slice of L2 per tile, large
// enough that handing out a tile costs nothing beside streaming it.
constexpr std::size_t kDefaultTile = std::size_t{1} << 14;
// Vector loads and stores are fastest from cache-line-aligned addresses, so the first few
// elements up to p's next 64-byte boundary run alone and the tiles start aligned after them.
constexpr std::size_t kAlignBytes = 64;
// From this many elements on, the copy is written with streaming stores (cpu_adam_body.h,
// run_lanes): 2^20 elements is 30 MiB of traffic, more than this kind of CPU caches.
constexpr std::size_t kStreamCopyMin = std::size_t{1} << 20;

// One of the spans adam_step is given, untyped, for the checks.
struct Region {
  const char* name;
  const void* data;
  std::size_t count;       // elements
  std::size_t elem_bytes;
  bool optional;           // the copy: empty means none
};

void check_regions(const char* fn, std::size_t n, std::initializer_list<Region> regions, int threads) {
  for (const Region& r : regions) {
    if (r.data == nullptr && r.count != 0) {
      throw ConfigError(cat("[optim] ", fn, ": the ", r.name, " span is null but has ", r.count,
                            " elements; pass its buffer, or an empty span for an empty run"));
    }
    if (r.count != n && !(r.optional && r.count == 0)) {
      throw ConfigError(cat("[optim] ", fn, ": the ", r.name, " span has ", r.count, " elements but the parameters have ",
                            n, "; pass spans of one length (one shard's worth each)", r.optional ? ", or no copy" : ""));
    }
  }
  for (auto a = regions.begin(); a != regions.end(); ++a) {
    for (auto b = a + 1; b != regions.end(); ++b) {
      const auto a0 = reinterpret_cast<std::uintptr_t>(a->data), b0 = reinterpret_cast<std::uintptr_t>(b->data);
      const std::size_t a_bytes = a->count * a->elem_bytes, b_bytes = b->count * b->elem_bytes;
      if (a_bytes != 0 && b_bytes != 0 && a0 < b0 + b_bytes && b0 < a0 + a_bytes) {
        throw ConfigError(cat("[optim] ", fn, ": the ", a->name, " and ", b->name,
                              " spans overlap; give each of p, g, m, v and the copy its own memory"));
      }
    }
  }
  if (threads < 0) throw ConfigError(cat("[optim] ", fn, ": threads must be >= 0 (0: all), not ", threads));
}

void check_spans(const char* fn, std::span<const float> p, std::span<const float> g, std::span<const float> m,
                 std::span<const float> v, const AdamOptions& o) {
  const char* copy_name = o.copy_format == HalfFormat::kBf16 ? "bf16 copy" : "fp16 copy";
  check_regions(fn, p.size(),
                {{"parameter", p.data(), p.size(), sizeof(float), false},
                 {"gradient", g.data(), g.size(), sizeof(float), false},
                 {"first-moment (m)", m.data(), m.size(), sizeof(float), false},
                 {"second-moment (v)", v.data(), v.size(), sizeof(float), false},
                 {copy_name, o.copy.data(), o.copy.size(), sizeof(std::uint16_t), true}},
                o.threads);
}

const KernelTable& kernels_for(CpuIsa isa) {
  const CpuIsa chosen = isa == CpuIsa::kAuto ? adam_isa_active() : isa;
  if (!cpu_isa_supported(chosen)) {
    throw ConfigError(cat("[optim] the ", cpu_isa_name(chosen), " Adam kernel cannot run here (not built in, or this CPU",
                          " lacks the instructions); use isa auto, or one of those cpu_isa_supported() accepts"));
  }
  switch (chosen) {
    case CpuIsa::kAvx512: return *cpu_adam::kernels_avx512();
    case CpuIsa::kAvx2: return *cpu_adam::kernels_avx2();
    default: return *cpu_adam::kernels_scalar();
  }
}

// Runs tile(begin, count) over [0, n): a short head alone up to p's alignment boundary, then
// tiles of `tile` elements handed to threads in contiguous blocks (OpenMP static schedule).
template <class TileFn>
void run_tiles(const float* p, std::size_t n, const AdamOptions& o, TileFn&& tile_fn) {
  const std::size_t misalign = (reinterpret_cast<std::uintptr_t>(p) % kAlignBytes) / sizeof(float);
  const std::size_t head = std::min(n, misalign == 0 ? 0 : kAlignBytes / sizeof(float) - misalign);
  if (head != 0) tile_fn(0, head);
  const std::size_t rest = n - head;
  const std::size_t tile = o.tile != 0 ? o.tile : kDefaultTile;
  const auto tiles = static_cast<std::int64_t>((rest + tile - 1) / tile);
  const int threads = static_cast<int>(std::min<std::int64_t>(o.threads != 0 ? o.threads : omp_get_max_threads(), tiles));
  if (threads <= 1) {
    if (rest != 0) tile_fn(head, rest);
    return;
  }
#pragma omp parallel for num_threads(threads) schedule(static)
  for (std::int64_t t = 0; t < tiles; ++t) {
    const std::size_t begin = head + static_cast<std::size_t>(t) * tile;
    tile_fn(begin, std::min(tile, n - begin));
  }
}

cpu_adam::Copy copy_kind(const AdamOptions& o) {
  if (o.copy.empty()) return cpu_adam::Copy::kNone;
  return o.copy_format == HalfFormat::kBf16 ? cpu_adam::Copy::kBf16 : cpu_adam::Copy::kFp16;
}

}  // namespace

namespace cpu_adam {
namespace {
constexpr KernelTable kScalarTable = make_kernel_table<VecScalar>();
}  // namespace
const KernelTable* kernels_scalar() { return &kScalarTable; }
}  // namespace cpu_adam

const char* cpu_isa_name(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kAuto: return "auto";
    case CpuIsa::kScalar: return "scalar";
    case CpuIsa::kAvx2: return "avx2";
    case CpuIsa::kAvx512: return "avx512";
  }
  return "?";
}

CpuIsa cpu_isa_parse(std::string_view name) {
  for (CpuIsa isa : {CpuIsa::kAuto, CpuIsa::kScalar, CpuIsa::kAvx2, CpuIsa::kAvx512}) {
    if (name == cpu_isa_name(isa)) return isa;
  }
  throw ConfigError(cat("[optim] unknown instruction set '", name, "'; use auto, scalar, avx2 or avx512"));
}

bool cpu_isa_supported(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kAuto:
    case CpuIsa::kScalar: return true;
    // The CPU first: kernels_avx2/avx512 live in files built with those flags.
    case CpuIsa::kAvx2: return cpu_adam::cpu_runs_avx2() && cpu_adam::kernels_avx2() != nullptr;
    case CpuIsa::kAvx512: return cpu_adam::cpu_runs_avx512() && cpu_adam::kernels_avx512() != nullptr;
  }
  return false;
}

CpuIsa adam_isa_active() {
  static const CpuIsa best = cpu_isa_supported(CpuIsa::kAvx512) ? CpuIsa::kAvx512
                             : cpu_isa_supported(CpuIsa::kAvx2) ? CpuIsa::kAvx2
                                                                : CpuIsa::kScalar;
  return best;
}

void adam_step(const AdamStep& s, bool decay, std::span<float> p, std::span<const float> g, std::span<float> m,
               std::span<float> v, const AdamOptions& o) {
  check_spans("adam_step", p, g, m, v, o);
  const std::size_t n = p.size();
  const KernelTable& k = kernels_for(o.isa);
  const auto d = !decay ? cpu_adam::Decay::kNone : s.decoupled ? cpu_adam::Decay::kDecoupled : cpu_adam::Decay::kL2;
  const cpu_adam::AdamTileFn fn = k.adam[static_cast<int>(d)][static_cast<int>(copy_kind(o))];
  std::uint16_t* copy = o.copy.empty() ? nullptr : o.copy.data();
  const bool stream = n >= kStreamCopyMin;
  run_tiles(p.data(), n, o, [&](std::size_t begin, std::size_t count) {
    fn(s, p.data() + begin, g.data() + begin, m.data() + begin, v.data() + begin, copy ? copy + begin : nullptr, count,
       stream);
  });
}

void adam_traffic_ceiling(std::span<float> p, std::span<const float> g, std::span<float> m, std::span<float> v,
                          const AdamOptions& o) {
  check_spans("adam_traffic_ceiling", p, g, m, v, o);
  const std::size_t n = p.size();
  const cpu_adam::CeilingTileFn fn = kernels_for(o.isa).ceiling[static_cast<int>(copy_kind(o))];
  std::uint16_t* copy = o.copy.empty() ? nullptr : o.copy.data();
  const bool stream = n >= kStreamCopyMin;
  run_tiles(p.data(), n, o, [&](std::size_t begin, std::size_t count) {
    fn(p.data() + begin, g.data() + begin, m.data() + begin, v.data() + begin, copy ? copy + begin : nullptr, count,
       stream);
  });
}

}  // namespace zero
