// The shard rule of a Hugging Face directory (checkpoint/hf_export.h), alone: tensors in order,
// whole, fill a shard until the next would pass the limit; a tensor above the limit is alone;
// the shards keep the tensors' order. (hf_export.sh checks the rule again on real exports.)
#include <gtest/gtest.h>

#include "checkpoint/hf_export.h"

namespace zero::checkpoint {
namespace {

using Shards = std::vector<int>;

TEST(HfShards, FillInOrderUntilTheNextWouldPassTheLimit) {
  EXPECT_EQ(shard_of_tensors({3, 3, 3}, 6), (Shards{0, 0, 1}));  // exactly the limit fits
  EXPECT_EQ(shard_of_tensors({4, 3, 3}, 6), (Shards{0, 1, 1}));
  EXPECT_EQ(shard_of_tensors({1, 1, 1, 1}, 100), (Shards{0, 0, 0, 0}));
  EXPECT_EQ(shard_of_tensors({6, 6}, 6), (Shards{0, 1}));
  EXPECT_EQ(shard_of_tensors({}, 6), Shards{});
}

TEST(HfShards, ATensorAboveTheLimitIsAloneAndTheOrderKept) {
  EXPECT_EQ(shard_of_tensors({10, 1, 1}, 5), (Shards{0, 1, 1}));
  EXPECT_EQ(shard_of_tensors({1, 10, 1}, 5), (Shards{0, 1, 2}));  // the shard before it closes
  EXPECT_EQ(shard_of_tensors({1, 10, 10, 1}, 5), (Shards{0, 1, 2, 3}));
  EXPECT_EQ(shard_of_tensors({10}, 5), (Shards{0}));
}

}  // namespace
}  // namespace zero::checkpoint
