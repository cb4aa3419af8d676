// Internal to the engine: bytes of a swap file on the NVMe tier, held in the ledger's nvme tier
// for as long as the file lives (the optimizer's state, the stage-3 parameter shard).
#pragma once

#include <cstdint>
#include <string>

#include "memory/ledger.h"

namespace zero {

class DiskBytes {
 public:
  DiskBytes(Ledger& ledger, Category c, std::uint64_t bytes, const std::string& what) : ledger_(ledger), c_(c), bytes_(bytes) {
    ledger_.on_alloc(Tier::kNvme, c_, bytes_, what);
  }
  ~DiskBytes() { ledger_.on_free(Tier::kNvme, c_, bytes_); }
  DiskBytes(const DiskBytes&) = delete;
  DiskBytes& operator=(const DiskBytes&) = delete;

 private:
  Ledger& ledger_;
  Category c_;
  std::uint64_t bytes_;
};

}  // namespace zero
