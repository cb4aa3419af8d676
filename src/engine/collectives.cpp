#include "engine/collectives.h"

#include <algorithm>
#include <future>
#include <map>
#include <memory>
#include <set>

#include "common/task_queue.h"
#include "engine/quantized_reduce_scatter.h"
#include "memory/ledger.h"

#include "common/error.h"

namespace zero {
namespace {

// A bucket of B elements over N ranks is a piece of B / N elements per rank (at least one).
std::size_t per_rank(std::size_t bucket, int ranks) {
  if (bucket == 0) return 0;
  return std::max<std::size_t>(1, bucket / static_cast<std::size_t>(ranks));
}

}  // namespace

Collectives::Collectives(Communicator& comm, Device& device, std::size_t reduce_bucket, std::size_t gather_bucket, double predivide,
                         bool overlap)
    : comm_(comm), device_(device), overlap_(overlap), reduce_bucket_(reduce_bucket), reduce_segment_(per_rank(reduce_bucket, comm.size())),
      gather_segment_(per_rank(gather_bucket, comm.size())), predivide_(static_cast<float>(predivide)) {}

// The element type travels with the spans: 16-bit spans make 16-bit collectives (half the bytes
// on the wire, each element summed in f32 in rank order and rounded once).
Handle Collectives::reduce_scatter(const DeviceSpan& send, const DeviceSpan& recv, const std::string& unit) {
  const CollectiveLabel label("unit " + unit);
  if (predivide_ != 1.0f) device_.divide(device_.compute(), send, predivide_);
  ZERO_CHECK(send.dtype() == recv.dtype() && send.size() == recv.size() * static_cast<std::size_t>(size()),
             "reduce_scatter of ", send.size(), " ", dtype_label(send.dtype()), " into ", recv.size(), " ", dtype_label(recv.dtype()));
  if (quantized_) {  // host memory only (set_quantized_reduce); the dry run counts at issue
    return settle(quantized_->run_async(device_.transport(send), device_.transport(recv), recv.size(), recv.dtype(), "unit " + unit,
                                        comm_.context()));
  }
  const auto issue = [&](void* s, void* r) { return comm_.reduce_scatter_async(s, r, recv.size(), recv.dtype(), reduce_segment_); };
  Handle h = staged() ? through_host(send, recv, issue) : issue(device_.transport(send), device_.transport(recv));
  h = reserve_scratch(comm_, Collective::kReduceScatter, recv.size(), reduce_segment_, recv.dtype(), std::move(h));
  if (replicas_) h = across_replicas(std::move(h), recv, unit);
  return settle(std::move(h));
}

Collectives::~Collectives() = default;  // the chain runs what it was given, then joins

void Collectives::set_replicas(Communicator* replicas) {
  if (replicas && staged()) {
    throw ConfigError("[engine] hybrid sharding (zero_optimization.mics_shard_size) over a communicator that cannot read the device's "
                      "memory (its collectives staged through the host) is not supported yet: train on the cpu device, or remove "
                      "mics_shard_size");
  }
  replicas_ = replicas;
  replica_segment_ = replicas ? per_rank(reduce_bucket_, replicas->size()) : 0;
  if (replicas && !chain_) chain_ = std::make_unique<TaskQueue>();
}

void Collectives::set_quantized_reduce(QuantizedReduceScatter* quantized) { quantized_ = quantized; }

// In the dry run nothing runs, so the replicas' all-reduce is issued at once. Both scratches stay
// reserved until the pair is first waited for: the group's reduce-scatter's as in any stage (the
// compute thread goes on allocating while it runs), the all-reduce's on its own communicator,
// whose thread runs it while the group's runs the next collective (stage 1 issues every unit's
// reduction before it waits). Where the two ran one after the other, that bounds the running
// backend's peak by at most the all-reduce's scratch.
Handle Collectives::across_replicas(Handle group, const DeviceSpan& recv, const std::string& unit) {
  Communicator& replicas = *replicas_;
  void* data = device_.transport(recv);
  const std::size_t count = recv.size(), segment = replica_segment_;
  const Dtype dtype = recv.dtype();
  if (!device_.computes()) {
    replicas.set_context(comm_.context());
    const std::size_t k = count / static_cast<std::size_t>(replicas.size());
    const Handle all_reduce =
        reserve_scratch(replicas, Collective::kAllReduce, k, segment, dtype, replicas.all_reduce_async(data, count, dtype, segment));
    return Handle(std::async(std::launch::deferred, [group, all_reduce] {
      group.wait();
      all_reduce.wait();
    }).share());
  }
  // The order check hashes the label and the context: both are those of the group's collective,
  // so that every rank's chain issues what its compute thread meant, whatever it does meanwhile.
  const std::string label = "unit " + unit, context = comm_.context();
  return Handle(chain_->push([group, &replicas, data, count, dtype, segment, label, context] {
    group.wait();
    const CollectiveLabel labelled(label);
    replicas.set_context(context);  // only this thread issues on the replicas
    replicas.all_reduce_async(data, count, dtype, segment).wait();
  }));
}

Handle Collectives::all_gather(const DeviceSpan& send, const DeviceSpan& recv, const std::string& unit) {
  const CollectiveLabel label("unit " + unit);
  ZERO_CHECK(send.dtype() == recv.dtype() && recv.size() == send.size() * static_cast<std::size_t>(size()),
             "all_gather of ", send.size(), " ", dtype_label(send.dtype()), " into ", recv.size(), " ", dtype_label(recv.dtype()));
  const auto issue = [&](void* s, void* r) { return comm_.all_gather_async(s, r, send.size(), send.dtype(), gather_segment_); };
  Handle h = staged() ? through_host(send, recv, issue) : issue(device_.transport(send), device_.transport(recv));
  return reserve_scratch(comm_, Collective::kAllGather, send.size(), gather_segment_, send.dtype(), std::move(h));
}

Handle Collectives::all_reduce(const DeviceSpan& data, const std::string& unit) {
  const CollectiveLabel label("unit " + unit);
  if (predivide_ != 1.0f) device_.divide(device_.compute(), data, predivide_);
  const auto issue = [&](void*, void* r) { return comm_.all_reduce_async(r, data.size(), data.dtype(), reduce_segment_); };
  Handle h = staged() ? through_host(data, data, issue) : issue(nullptr, device_.transport(data));
  return settle(reserve_scratch(comm_, Collective::kAllReduce, data.size() / static_cast<std::size_t>(comm_.size()), reduce_segment_, data.dtype(),
                         std::move(h)));
}

// The scratch of the outstanding collectives, held in the ledger as the largest of each
// communicator's, summed over the communicators: each runs one collective at a time on its own
// comm thread, and hybrid sharding's group and replicas run theirs at the same time.
class Collectives::DryScratch {
 public:
  explicit DryScratch(Ledger& ledger) : ledger_(ledger) {}
  ~DryScratch() { set_held(0); }
  void add(const Communicator* comm, std::uint64_t bytes) {
    outstanding_[comm].insert(bytes);
    update();
  }
  void remove(const Communicator* comm, std::uint64_t bytes) {
    std::multiset<std::uint64_t>& o = outstanding_[comm];
    o.erase(o.find(bytes));
    update();
  }

 private:
  void update() {
    std::uint64_t held = 0;
    for (const auto& [comm, o] : outstanding_) held += o.empty() ? 0 : *o.rbegin();
    set_held(held);
  }
  void set_held(std::uint64_t bytes) {
    if (bytes > held_) ledger_.on_alloc(Tier::kDevice, Category::kCommBuffers, bytes - held_, "communication scratch");
    if (bytes < held_) ledger_.on_free(Tier::kDevice, Category::kCommBuffers, held_ - bytes);
    held_ = bytes;
  }
  Ledger& ledger_;
  std::map<const Communicator*, std::multiset<std::uint64_t>> outstanding_;
  std::uint64_t held_ = 0;
};

Handle Collectives::settle(Handle reduction) const {
  if (!overlap_) reduction.wait();
  return reduction;
}

Handle Collectives::reserve_scratch(const Communicator& comm, Collective kind, std::size_t k, std::size_t segment, Dtype dtype,
                                    Handle issued) {
  if (device_.computes()) return issued;  // a running backend accounts its own scratch
  const std::uint64_t bytes = comm.scratch_bytes(kind, k, segment, dtype);
  if (bytes == 0) return issued;
  if (!dry_) dry_ = std::make_shared<DryScratch>(device_.ledger());
  // Outstanding until the first wait; or until the last handle goes, if none ever waits.
  struct Token {
    Token(std::shared_ptr<DryScratch> s, const Communicator* c, std::uint64_t b) : scratch(std::move(s)), comm(c), bytes(b) {}
    Token(const Token&) = delete;
    Token& operator=(const Token&) = delete;
    std::shared_ptr<DryScratch> scratch;
    const Communicator* comm;
    std::uint64_t bytes;
    bool done = false;
    void end() {
      if (!done) scratch->remove(comm, bytes);
      done = true;
    }
    ~Token() { end(); }
  };
  dry_->add(&comm, bytes);
  auto token = std::make_shared<Token>(dry_, &comm, bytes);
  return Handle(std::async(std::launch::deferred, [issued, token] {
    issued.wait();
    token->end();
  }).share());
}

}  // namespace zero
