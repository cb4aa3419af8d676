// libFuzzer harness: a checkpoint's manifest (src/checkpoint/manifest.cpp), the file that zero
// train --resume, ckpt inspect / export, eval and generate read first. The input is the file's
// text. A manifest that is read must then be safe for every reader's arithmetic: each tensor's
// byte offset, the rank files' size, the engine counters, and the rank-file pieces of every
// parameter (checkpoint/reshard.h) within the units and rank files it describes. A refusal must
// be a zero::Error (see fuzz_guard.h).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "checkpoint/manifest.h"
#include "checkpoint/reshard.h"
#include "engine/engine.h"
#include "fuzz/fuzz_guard.h"

namespace {

void require(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "zero-fuzz: manifest: a manifest that was read breaks: %s\n", what);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace zero;
  const std::string text(reinterpret_cast<const char*>(data), size);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);  // read_manifest turns a syntax error into a CheckpointError
  } catch (const nlohmann::json::exception&) {
    return 0;
  }
  fuzz::expect_only_zero_errors("manifest", [&] {
    const checkpoint::Manifest m = checkpoint::from_json(j, "manifest.json");
    const std::uint64_t file_bytes = m.rank_file_bytes();
    for (std::size_t u = 0; u < m.units.size(); ++u) {
      for (std::size_t t = 0; t < m.tensors.size(); ++t) {
        const std::uint64_t at = m.tensor_byte(static_cast<int>(u), static_cast<int>(t));
        require(at + sizeof(float) * m.units[u].slice <= file_bytes, "a tensor's slice ends past the rank file");
      }
    }
    for (const checkpoint::FileRecord& f : m.files) require(f.bytes == file_bytes, "a rank file's size");
    (void)checkpoint::counters_of(m);
    for (const nlohmann::json& p : m.parameters) {  // as ParameterReader::read gathers one parameter
      std::uint64_t numel = 1;
      for (const nlohmann::json& d : p.at("shape")) numel *= d.get<std::uint64_t>();
      const checkpoint::UnitRecord& unit = m.units.at(p.at("unit").get<std::size_t>());
      (void)p.at("name").get<std::string>();
      std::uint64_t covered = 0;
      for (const checkpoint::Piece& piece : checkpoint::pieces_of(unit, p.at("unit_offset").get<std::size_t>(), numel)) {
        require(piece.rank >= 0 && piece.rank < m.world_size && piece.source + piece.count <= unit.slice, "a piece outside its rank's slice");
        covered += piece.count;
      }
      require(covered == numel, "a parameter's pieces do not cover it");
    }
  });
  return 0;
}
