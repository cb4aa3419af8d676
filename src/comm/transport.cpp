#include "comm/transport.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "common/error.h"

namespace zero {

Transport::Transport(int rank, int size) : rank_(rank), size_(size), topology_{rank, size, 0, 1, std::vector<int>(static_cast<std::size_t>(size), 0)} {}

Transport::~Transport() = default;

std::unique_ptr<Transport> Transport::split(int, int) {
  throw CommError(cat("[comm] the '", backend(), "' backend cannot split a communicator: use threads, mpi or self"));
}

std::unique_ptr<Transport> Transport::split_members(const std::vector<int>& members) {
  const auto me = std::find(members.begin(), members.end(), rank_);
  ZERO_CHECK(me != members.end(), "split_members: rank ", rank_, " is not among the members");
  return split(members.front(), static_cast<int>(me - members.begin()));
}

// The ranks on this rank's node are local_size of the group's (this one included): the rest are
// across. O(1), as the planner counts every collective of every configuration it tries.
int NodeTopology::peers_across() const { return node_of.empty() ? 0 : static_cast<int>(node_of.size()) - local_size; }

std::size_t Transport::max_elements(std::size_t) const { return static_cast<std::size_t>(-1); }

std::uint64_t Transport::scratch_bytes(Collective, std::size_t, std::size_t) const { return 0; }

bool Transport::native_reduction(Dtype) const { return false; }

void Transport::native_reduce_scatter(const void*, void*, std::size_t, Dtype) {
  ZERO_CHECK(false, "the '", backend(), "' backend has no native reduce_scatter");
}

void Transport::native_all_reduce(void*, std::size_t, Dtype) {
  ZERO_CHECK(false, "the '", backend(), "' backend has no native all_reduce");
}

std::uint64_t Transport::native_scratch_bytes(std::size_t, std::size_t) const { return 0; }
bool Transport::reference_all_reduce(float*, std::size_t) { return false; }
void Transport::exchange_all_reduce(void*, std::size_t, Dtype) {
  throw CommError(cat("[comm] the ", backend(), " transport has no all-reduce of its own; the communicator composes one"));
}

void Transport::copy_local(void* dst, const void* src, std::size_t bytes) { std::memcpy(dst, src, bytes); }

std::shared_ptr<void> Transport::local_scratch(std::size_t) { return nullptr; }

void Transport::abort(int code) { std::_Exit(code); }

// A transport always runs under the communicator that owns it (attach()); these checks keep a
// transport used alone (a test's) from reading a null host.
std::string Transport::op_label(const char* op, std::size_t bytes) const {
  ZERO_CHECK(host_ != nullptr, "a transport's call ran before a communicator attached it");
  return host_->op_label(op, bytes);
}

std::chrono::milliseconds Transport::timeout() const {
  ZERO_CHECK(host_ != nullptr, "a transport's call ran before a communicator attached it");
  return host_->timeout();
}

Ledger* Transport::ledger() const {
  ZERO_CHECK(host_ != nullptr, "a transport's call ran before a communicator attached it");
  return host_->ledger();
}

}  // namespace zero
