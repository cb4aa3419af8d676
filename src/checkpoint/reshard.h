// Resharding: where a range of a unit's elements lies in the rank files of a checkpoint written
// at another world size. Pure arithmetic on the writer's layout (manifest.h), tested alone.
#pragma once

#include <cstddef>
#include <vector>

#include "checkpoint/manifest.h"

namespace zero::checkpoint {

// Elements [dest, dest + count) of the asked range are elements [source, source + count) of
// rank `rank`'s slice of the unit, as written.
struct Piece {
  int rank = 0;
  std::size_t source = 0;
  std::size_t dest = 0;
  std::size_t count = 0;
};

// The pieces of elements [first, first + count) of a unit's flat buffer (any padding: elements
// from the unit's numel on are padding, zero, and in no piece), in ascending order.
std::vector<Piece> pieces_of(const UnitRecord& written, std::size_t first, std::size_t count);

}  // namespace zero::checkpoint
