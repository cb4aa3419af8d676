#include "checkpoint/reshard.h"

#include <algorithm>

namespace zero::checkpoint {

std::vector<Piece> pieces_of(const UnitRecord& written, std::size_t first, std::size_t count) {
  std::vector<Piece> out;
  const std::size_t end = std::min(first + count, written.numel);  // padding is no one's data
  for (std::size_t e = first; e < end;) {
    const std::size_t rank = e / written.slice, within = e - rank * written.slice;
    const std::size_t n = std::min(end - e, written.slice - within);
    out.push_back({static_cast<int>(rank), within, e - first, n});
    e += n;
  }
  return out;
}

}  // namespace zero::checkpoint
