// The order check: every rank must issue the same collectives, in the same order. A rank that
// takes another path through the model (a rank-dependent branch, a unit skipped, an extra
// evaluation) would otherwise meet the others in a mismatched collective: a hang until the
// timeout, or under MPI a truncation error or silently mixed buffers.
//
// Words used here:
//   record   what one collective is, as every rank must agree on it: the operation, its size
//            (elements per rank, element bytes), the root, the label in force when it was
//            issued (CollectiveLabel: "unit h.2") and the communicator's context ("step 3,
//            micro-batch 1").
//   order hash  a running hash of the records a rank has executed, in execution order.
// Before the transport runs a collective, the comm thread folds its record into the order hash
// and the ranks exchange (count, hash): 16 bytes each, one tiny all_gather of the same shape on
// every rank whatever collective each is about to run, so the exchanges line up even when the
// collectives do not. Equal hashes: go on. Different: every rank learns it at the same exchange,
// the ranks swap the descriptions of the collective each was about to run, and each fails with
// one CommError naming them, before any mismatched transport call (Communicator::check_order).
#pragma once

#include <cstdint>
#include <string>

namespace zero {

struct CollectiveRecord {
  CollectiveRecord(const char* op_name, std::uint64_t elements_per_rank, std::uint32_t bytes_per_element = 4, std::int32_t root_rank = -1)
      : op(op_name), elements(elements_per_rank), element_bytes(bytes_per_element), root(root_rank) {}

  const char* op = "";            // "all_reduce", "reduce_scatter", "all_gather", "broadcast", "barrier", "split"
  std::uint64_t elements = 0;     // per rank (all_reduce, broadcast: of the whole buffer)
  std::uint32_t element_bytes = 4;
  std::int32_t root = -1;         // broadcast only
  std::uint64_t pieces = 1;       // transport calls it runs as (segmented.cpp), for messages
  std::string label;              // the CollectiveLabel in force on the issuing thread, or empty
  std::string context;            // Communicator::set_context's text when issued, or empty

  std::uint64_t digest() const;   // FNV-1a over every field
  // "reduce_scatter of 4.0 KiB per rank for unit h.2 (step 3, micro-batch 1)"
  std::string describe() const;
};

// Names what the collectives issued from this thread are for while it lives, for the order
// check's hash and messages: { CollectiveLabel l("unit h.2"); comm.reduce_scatter_async(...); }.
// Nested labels restore the outer one.
class CollectiveLabel {
 public:
  explicit CollectiveLabel(std::string label);
  ~CollectiveLabel();
  CollectiveLabel(const CollectiveLabel&) = delete;
  CollectiveLabel& operator=(const CollectiveLabel&) = delete;
  static const std::string& current();  // this thread's label, or empty

 private:
  std::string previous_;
};

// The running hash of the records a rank has executed (comm thread only).
struct OrderHash {
  std::uint64_t count = 0;
  std::uint64_t running = 0xcbf29ce484222325ull;  // FNV-1a offset basis
  void add(std::uint64_t digest);
};

}  // namespace zero
