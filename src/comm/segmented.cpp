// Segmented collectives: one collective as several transport calls ("pieces") of at most s
// elements per rank, in the Communicator base class so that every backend inherits it.
//
// Why: a transport call has limits (MPI counts are ints, so one call cannot move a slice of more
// than INT_MAX elements), and a backend's scratch grows with the call (MPI's reduce-scatter receives
// N*k elements). Cutting a collective into pieces of s elements per rank bounds both by s.
#include "comm/segmented.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "comm/communicator.h"
#include "common/error.h"
#include "memory/ledger.h"

namespace zero {

Pieces split_into_pieces(std::size_t k, std::size_t s) {
  ZERO_CHECK(s >= 1, "a segment holds at least one element");
  Pieces p;
  p.k = k;
  p.s = s;
  p.count = k == 0 ? 1 : (k - 1) / s + 1;  // ceil(k/s) without overflow
  return p;
}

std::size_t max_segment_elements(std::size_t element_bytes, std::size_t limit) {
  ZERO_CHECK(element_bytes >= 1, "an element has at least one byte");
  std::size_t unit = 8;  // the widest of 8, 4, 2, 1 bytes dividing the element: the count's unit
  while (element_bytes % unit != 0) unit /= 2;
  return std::max<std::size_t>(1, limit / (element_bytes / unit));
}

// The packing scratch of one collective: allocated at its first use, then reused by every piece
// (and by both phases of an all_reduce). Held by a shared_ptr so a failed collective can leave it
// to orphaned_scratch_: after a failure the transport may still write into it.
class Communicator::Scratch {
 public:
  Scratch(Communicator& comm, Ledger* ledger) : comm_(comm), ledger_(ledger) {}

  // At least `bytes` bytes, float-aligned.
  void* bytes(std::size_t bytes) {
    const std::size_t numel = (bytes + sizeof(float) - 1) / sizeof(float);
    if (numel <= size_) return data_;
    if (auto local = comm_.transport_->local_scratch(numel * sizeof(float))) {  // the backend's own memory (GPU)
      local_ = std::move(local);
      data_ = static_cast<float*>(local_.get());
    } else if (ledger_) {
      owned_ = Buffer(*ledger_, Tier::kDevice, Category::kCommBuffers, numel, "segment scratch", false);  // written before read
      data_ = owned_.data();
    } else {
      unaccounted_.resize(numel);
      data_ = unaccounted_.data();
    }
    size_ = numel;
    return data_;
  }

 private:
  Communicator& comm_;
  Ledger* ledger_;
  std::shared_ptr<void> local_;     // from the backend's local_scratch, if it has its own
  Buffer owned_;                    // with a ledger: accounted as comm_buffers, device tier
  std::vector<float> unaccounted_;  // without one
  float* data_ = nullptr;
  std::size_t size_ = 0;  // floats
};

void Communicator::run_pieces(const std::function<void(Scratch&)>& body) {
  auto scratch = std::make_shared<Scratch>(*this, options_.ledger);
  try {
    body(*scratch);
  } catch (const CommError&) {
    orphaned_scratch_.push_back(scratch);
    piece_index_ = 0, piece_count_ = 1;
    throw;
  }
  piece_index_ = 0, piece_count_ = 1;
}

void Communicator::begin_piece(Collective kind, std::size_t index, std::size_t count) {
  piece_index_ = index;
  piece_count_ = count;
  pieces_[static_cast<int>(kind)] += 1;
}

// reduce_scatter in pieces. The whole collective reduces send (N, k) into recv (k): rank r gets
// column block r, summed over the N rows. Piece j covers elements [j*s, j*s+len) of every rank's
// slice, i.e. N runs of len elements spaced k apart in `send`; the transport wants them as one
// contiguous (N, len) array, so each piece first packs them into scratch, then reduce-scatters
// the packed array into recv + j*s. Each element is still summed over the ranks in rank order by
// the backend, so the result is bit-identical to one unsegmented call. In place (recv is this
// rank's slice of send) is safe: piece j writes only the elements of this rank's slice that
// piece j has already packed, and later pieces read other elements. One piece needs no packing:
// it is the transport call on the caller's buffers. `native` (fast mode): each piece is the
// transport's own reduce-scatter instead, on the same packed pieces.
void Communicator::segmented_reduce_scatter(const void* send, void* recv, std::size_t k, Dtype dtype, std::size_t s,
                                            Scratch& scratch, bool native) {
  const auto reduce = [&](const void* in, void* out, std::size_t len) {
    if (native) {
      transport_->native_reduce_scatter(in, out, len, dtype);
    } else {
      transport_->reduce_scatter(in, out, len, dtype);
    }
  };
  const Pieces p = split_into_pieces(k, s);
  if (p.count == 1) {
    begin_piece(running_, 0, 1);
    reduce(send, recv, k);
    return;
  }
  const std::size_t n = static_cast<std::size_t>(size_);
  const std::size_t eb = dtype_bytes(dtype);
  const auto* src = static_cast<const char*>(send);
  auto* dst = static_cast<char*>(recv);
  auto* packed = static_cast<char*>(scratch.bytes(n * p.s * eb));  // (N, len) elements, piece j of every slice
  for (std::size_t j = 0; j < p.count; ++j) {
    const std::size_t off = p.offset(j), len = p.length(j);
    for (std::size_t r = 0; r < n; ++r) transport_->copy_local(packed + r * len * eb, src + (r * k + off) * eb, len * eb);
    begin_piece(running_, j, p.count);
    reduce(packed, dst + off * eb, len);
  }
}

// fast mode's all_reduce: the data is one contiguous run on every rank, so the transport's own
// all_reduce runs in place on runs of N*s elements (as many pieces as the two phases of the
// rank-order path take, within the transport's limit per call); no packing, no scratch.
void Communicator::segmented_native_all_reduce(void* data, std::size_t count, Dtype dtype, std::size_t s) {
  const std::size_t eb = dtype_bytes(dtype), n = static_cast<std::size_t>(size_);
  const std::size_t limit = transport_->max_elements(eb);
  const Pieces p = split_into_pieces(count, s > limit / n ? limit : s * n);
  run_pieces([&](Scratch&) {
    for (std::size_t j = 0; j < p.count; ++j) {
      begin_piece(Collective::kAllReduce, j, p.count);
      transport_->native_all_reduce(static_cast<char*>(data) + p.offset(j) * eb, p.length(j), dtype);
    }
  });
}

// all_gather in pieces, the mirror image: piece j gathers elements [j*s, j*s+len) of every
// rank's slice into a packed (N, len) scratch, then unpacks row r to recv + r*k + j*s. This
// rank's piece is copied into its own row first, so the transport runs in place (MPI_IN_PLACE:
// no extra copy inside MPI). In place for the caller (send is this rank's slot of recv) is safe:
// unpacking writes this rank's slot with the bytes it already holds. Elements are
// `element_bytes` bytes: 4 for the float collectives, 1 for all_gather_bytes.
void Communicator::segmented_all_gather(const void* send, void* recv, std::size_t k, std::size_t element_bytes,
                                        std::size_t s, Scratch& scratch) {
  const Pieces p = split_into_pieces(k, s);
  if (p.count == 1) {
    begin_piece(running_, 0, 1);
    transport_->all_gather(send, recv, k * element_bytes);
    return;
  }
  const std::size_t n = static_cast<std::size_t>(size_);
  const auto* src = static_cast<const char*>(send);
  auto* dst = static_cast<char*>(recv);
  auto* packed = static_cast<char*>(scratch.bytes(n * p.s * element_bytes));  // (N, len) elements
  for (std::size_t j = 0; j < p.count; ++j) {
    const std::size_t off = p.offset(j) * element_bytes, len = p.length(j) * element_bytes;  // bytes
    char* mine = packed + static_cast<std::size_t>(rank_) * len;
    transport_->copy_local(mine, src + off, len);
    begin_piece(running_, j, p.count);
    transport_->all_gather(mine, packed, len);
    for (std::size_t r = 0; r < n; ++r) transport_->copy_local(dst + r * k * element_bytes + off, packed + r * len, len);
  }
}

// broadcast in pieces: the data is one contiguous run on every rank, so piece j is simply
// elements [j*s, j*s+len), sent from the root in place; no scratch.
void Communicator::segmented_broadcast(void* data, std::size_t k, std::size_t element_bytes, std::size_t s, int root) {
  const Pieces p = split_into_pieces(k, s);
  auto* bytes = static_cast<char*>(data);
  for (std::size_t j = 0; j < p.count; ++j) {
    begin_piece(running_, j, p.count);
    transport_->broadcast(bytes + p.offset(j) * element_bytes, p.length(j) * element_bytes, root);
  }
}


std::uint64_t Communicator::scratch_bytes(Collective kind, std::size_t k, std::size_t segment, Dtype dtype) const {
  const std::size_t eb = dtype_bytes(dtype);
  const Pieces p = split_into_pieces(k, resolve_segment(segment, eb));
  // The scratch is allocated in whole floats (Scratch::bytes).
  const std::uint64_t packing = p.count > 1 ? (static_cast<std::uint64_t>(size_) * p.s * eb + 3) / 4 * 4 : 0;
  const std::size_t len = p.largest();  // the backend's scratch is largest for the first piece
  if (native(dtype) && kind == Collective::kAllReduce) return 0;  // in place, in the transport
  if (native(dtype) && kind == Collective::kReduceScatter) return packing + transport_->native_scratch_bytes(len, eb);
  switch (kind) {
    case Collective::kBarrier: return 0;
    case Collective::kBroadcast: return transport_->scratch_bytes(Collective::kBroadcast, len, eb);
    case Collective::kReduceScatter: return packing + transport_->scratch_bytes(Collective::kReduceScatter, len, eb);
    case Collective::kAllGather: return packing + transport_->scratch_bytes(Collective::kAllGather, len, eb);
    case Collective::kAllReduce:
      if (p.count == 1 && transport_->exchanges_all_reduce()) return transport_->scratch_bytes(Collective::kAllReduce, len, eb);
      return packing + std::max(transport_->scratch_bytes(Collective::kReduceScatter, len, eb),
                                transport_->scratch_bytes(Collective::kAllGather, len, eb));
  }
  return 0;
}

}  // namespace zero
