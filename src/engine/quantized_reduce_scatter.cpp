#include "engine/quantized_reduce_scatter.h"

#include <algorithm>
#include <cstring>

#include "common/error.h"
#include "common/task_queue.h"
#include "engine/gradient_quantize.h"
#include "engine/pair_rounds.h"

namespace zero {

void QuantizedReduceScatter::check_nodes(const NodeTopology& topology, int size) {
  std::vector<int> ranks_on(static_cast<std::size_t>(topology.num_nodes), 0);
  for (int r = 0; r < size; ++r) ranks_on.at(static_cast<std::size_t>(topology.node_of.empty() ? 0 : topology.node_of.at(r))) += 1;
  if (std::all_of(ranks_on.begin(), ranks_on.end(), [&](int n) { return n == ranks_on.front(); })) return;
  std::string sizes;
  for (std::size_t m = 0; m < ranks_on.size(); ++m) sizes += cat(m == 0 ? "" : ", ", ranks_on[m]);
  throw ConfigError(cat("[engine] zero_optimization.zero_quantized_gradients needs the same number of ranks on every node (its second "
                        "all-to-all joins the ranks of the same place on each node), and the ", topology.num_nodes,
                        " nodes hold ", sizes, " ranks: run the same number on each node (--ranks a multiple of --ranks-per-node), "
                        "or remove zero_quantized_gradients"));
}

std::uint64_t QuantizedReduceScatter::scratch_bytes(std::size_t k, int ranks, int nodes) {
  return (2 * static_cast<std::uint64_t>(ranks) + 4 * static_cast<std::uint64_t>(nodes)) * int4_bytes(k) + 3 * k * sizeof(float);
}

QuantizedReduceScatter::QuantizedReduceScatter(Communicator& world, Device& device, std::size_t max_k)
    : world_(world), computes_(device.computes()), max_k_(max_k) {
  const NodeTopology& t = world.topology();
  check_nodes(t, world.size());
  node_ranks_.resize(static_cast<std::size_t>(t.num_nodes));
  for (int r = 0; r < world.size(); ++r) node_ranks_.at(static_cast<std::size_t>(t.node_of.empty() ? 0 : t.node_of.at(r))).push_back(r);
  const std::vector<int>& mine = node_ranks_.at(static_cast<std::size_t>(t.node));
  const int local = static_cast<int>(std::find(mine.begin(), mine.end(), world.rank()) - mine.begin());
  std::vector<int> same_place;  // the ranks of this local index, one per node, in node order
  for (const std::vector<int>& node : node_ranks_) same_place.push_back(node.at(static_cast<std::size_t>(local)));
  intra_ = make_group(mine);  // every rank splits the same number of times: L and M are the same everywhere
  inter_ = make_group(same_place);
  if (!device.transport_is_host() || world.reads_device_memory()) {
    throw ConfigError("[engine] zero_optimization.zero_quantized_gradients quantises the gradients on the CPU, and this run keeps them in "
                      "GPU memory or communicates through a GPU library: train on the cpu device with the threads or mpi communicator, "
                      "or remove zero_quantized_gradients");
  }
  const std::uint64_t bytes = scratch_bytes(max_k, world.size(), t.num_nodes);
  blocks_ = device.alloc(Tier::kDevice, Category::kCommBuffers, (bytes + 3) / 4, "qgZ scratch (quantised gradient blocks)", Dtype::kF32,
                         false);  // written before read
  if (computes_) {
    base_ = static_cast<float*>(device.transport(blocks_.span()));  // host memory, read and written on this object's thread
    thread_ = std::make_unique<TaskQueue>();
  }
}

void QuantizedReduceScatter::lay_out(std::size_t k) {
  ZERO_CHECK(k <= max_k_, "qgZ of a slice of ", k, " elements; its scratch holds ", max_k_);
  const std::size_t nodes = node_ranks_.size(), ranks = static_cast<std::size_t>(world_.size()), q = int4_bytes(k);
  if (!computes_) {  // nothing is computed; a pair's exchange still reads and writes its bytes
    dry_.resize(3 * nodes * q);
    return;
  }
  // The f32 arrays first (aligned: blocks_ is f32), then the quantised regions.
  slice_ = base_;
  acc_ = slice_ + k;
  run_ = acc_ + k;
  local_send_ = reinterpret_cast<std::uint8_t*>(run_ + k);
  local_recv_ = local_send_ + ranks * q;
  node_send_ = local_recv_ + ranks * q;
  node_recv_ = node_send_ + nodes * q;
  both_ = node_recv_ + nodes * q;
}

QuantizedReduceScatter::~QuantizedReduceScatter() = default;  // the thread runs what it was given, then joins

QuantizedReduceScatter::Group QuantizedReduceScatter::make_group(std::vector<int> members) {
  Group g;
  g.members = std::move(members);
  const int size = static_cast<int>(g.members.size()), me = world_.rank();
  g.index = static_cast<int>(std::find(g.members.begin(), g.members.end(), me) - g.members.begin());
  for (int t = 0; t < (size > 1 ? pair_rounds(size) : 0); ++t) {
    const int p = partner_in_round(g.index, size, t);
    const int other = p < 0 ? me : g.members[static_cast<std::size_t>(p)];
    std::unique_ptr<Communicator> pair;
    if (computes_) {
      // A pair's colour is its lower world rank; a rank sitting out gets its own, which no pair has.
      pair = world_.split(std::min(me, other), me);
    } else {  // the planner's counting communicator splits by the list of members (it is rank 0 of every group it is in)
      pair = world_.split_members(p < 0 ? std::vector<int>{me} : std::vector<int>{std::min(me, other), std::max(me, other)});
    }
    g.partner.push_back(p);
    g.pairs.push_back(p < 0 ? nullptr : std::move(pair));
  }
  return g;
}

void QuantizedReduceScatter::exchange(Group& group, const std::uint8_t* send, std::uint8_t* recv, std::size_t b) {
  const auto index = static_cast<std::size_t>(group.index);
  if (computes_) std::memcpy(recv + index * b, send + index * b, b);
  for (std::size_t t = 0; t < group.pairs.size(); ++t) {
    const int p = group.partner[t];
    if (p < 0) continue;
    const auto at = static_cast<std::size_t>(p);
    if (!computes_) {  // counted only: any b bytes will do, and none copied (all_gather_bytes would fill both slots)
      group.pairs[t]->all_gather_bytes_async(dry_.data(), b, dry_.data() + b, 0).wait();
      continue;
    }
    group.pairs[t]->all_gather_bytes(send + at * b, b, both_);
    const std::size_t theirs = group.members[at] < group.members[index] ? 0 : 1;  // the pair ranks by world rank
    std::memcpy(recv + at * b, both_ + theirs * b, b);
  }
}

void QuantizedReduceScatter::sum_runs(const std::uint8_t* first, std::size_t stride, std::size_t count, std::size_t k) {
  dequantize_int4(first, k, acc_);
  for (std::size_t c = 1; c < count; ++c) {
    dequantize_int4(first + c * stride, k, run_);
    for (std::size_t i = 0; i < k; ++i) acc_[i] += run_[i];
  }
}

void QuantizedReduceScatter::run(const void* send, void* recv, std::size_t k, Dtype dtype) {
  const std::size_t nodes = node_ranks_.size(), local = node_ranks_.front().size(), q = int4_bytes(k), eb = dtype_bytes(dtype);
  lay_out(k);
  if (computes_) {  // 1: every slice quantised, in the order of step 2's blocks
    for (std::size_t j = 0; j < local; ++j) {
      for (std::size_t m = 0; m < nodes; ++m) {
        const auto r = static_cast<std::size_t>(node_ranks_[m][j]);
        widen_to_f32(static_cast<const char*>(send) + r * k * eb, dtype, slice_, k);
        quantize_int4(slice_, k, local_send_ + (j * nodes + m) * q);
      }
    }
  }
  exchange(intra_, local_send_, local_recv_, nodes * q);  // 2
  if (computes_) {  // 3: local peer i's run m is at (i * nodes + m) * q
    for (std::size_t m = 0; m < nodes; ++m) {
      sum_runs(local_recv_ + m * q, nodes * q, local, k);
      quantize_int4(acc_, k, node_send_ + m * q);
    }
  }
  exchange(inter_, node_send_, node_recv_, q);  // 4
  if (computes_) {  // 5
    sum_runs(node_recv_, q, nodes, k);
    narrow_from_f32(acc_, dtype, recv, k);
  }
}

Handle QuantizedReduceScatter::run_async(const void* send, void* recv, std::size_t k, Dtype dtype, std::string label, std::string context) {
  if (!computes_) {
    run(send, recv, k, dtype);  // counted at issue, as the counting communicator counts
    return Handle();
  }
  return Handle(thread_->push([this, send, recv, k, dtype, label = std::move(label), context = std::move(context)] {
    const CollectiveLabel labelled(label);
    for (Group* g : {&intra_, &inter_})
      for (const auto& pair : g->pairs)
        if (pair) pair->set_context(context);  // only this thread issues on the pairs
    run(send, recv, k, dtype);
  }));
}

Traffic QuantizedReduceScatter::traffic() const {
  Traffic sum;
  for (const Group* g : {&intra_, &inter_})
    for (const auto& pair : g->pairs)
      if (pair) sum = sum + pair->traffic();
  Traffic filed;  // the pairs' all-gathers are the reduce-scatter's exchanges
  const int gather = static_cast<int>(Collective::kAllGather), reduce = static_cast<int>(Collective::kReduceScatter);
  filed.sent[reduce] = sum.sent[gather];
  filed.received[reduce] = sum.received[gather];
  filed.sent_across[reduce] = sum.sent_across[gather];
  filed.received_across[reduce] = sum.received_across[gather];
  filed.calls[reduce] = sum.calls[gather];
  filed.pieces[reduce] = sum.pieces[gather];
  return filed;
}

}  // namespace zero
