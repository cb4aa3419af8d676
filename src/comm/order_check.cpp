// The order check (order_check.h): records, labels, the running hash, and
// Communicator::check_order, which runs on the comm thread before each collective's transport.
#include "comm/order_check.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

#include "comm/communicator.h"
#include "common/error.h"
#include "memory/ledger.h"  // format_bytes

namespace zero {
namespace {

constexpr std::uint64_t kFnvPrime = 0x100000001b3ull;

std::uint64_t fnv(std::uint64_t h, const void* data, std::size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * kFnvPrime;
  return h;
}

template <typename T>
std::uint64_t fnv_value(std::uint64_t h, const T& v) {
  return fnv(h, &v, sizeof v);
}

std::uint64_t fnv_text(std::uint64_t h, const std::string& s) {
  h = fnv_value(h, static_cast<std::uint64_t>(s.size()));  // length first: "ab"+"c" differs from "a"+"bc"
  return fnv(h, s.data(), s.size());
}

thread_local std::string current_label;

// One rank's description in the exchange after a mismatch: fixed size, so that every rank's
// exchange has the same shape.
using Description = std::array<char, 240>;

Description to_description(const std::string& text) {
  Description d{};
  std::memcpy(d.data(), text.data(), std::min(text.size(), d.size() - 1));
  return d;
}

// "rank 1", "ranks 0, 2, 3" for the ranks whose description equals `text`.
std::string ranks_with(const std::vector<std::string>& texts, const std::string& text) {
  std::vector<int> ranks;
  for (std::size_t r = 0; r < texts.size(); ++r)
    if (texts[r] == text) ranks.push_back(static_cast<int>(r));
  std::string out = ranks.size() == 1 ? "rank " : "ranks ";
  for (std::size_t i = 0; i < ranks.size(); ++i) out += cat(i ? ", " : "", ranks[i]);
  return out;
}

}  // namespace

std::uint64_t CollectiveRecord::digest() const {
  std::uint64_t h = 0xcbf29ce484222325ull;
  h = fnv_text(h, op);
  h = fnv_value(h, elements);
  h = fnv_value(h, element_bytes);
  h = fnv_value(h, root);
  h = fnv_text(h, label);
  return fnv_text(h, context);
}

std::string CollectiveRecord::describe() const {
  std::string s = cat(op);
  if (std::strcmp(op, "barrier") != 0 && std::strcmp(op, "split") != 0) {
    s += cat(" of ", format_bytes(elements * element_bytes), std::strcmp(op, "all_reduce") == 0 || std::strcmp(op, "broadcast") == 0 ? "" : " per rank");
  }
  if (pieces > 1) s += cat(" in ", pieces, " pieces");
  if (root >= 0) s += cat(" from rank ", root);
  if (!label.empty()) s += cat(" for ", label);
  if (!context.empty()) s += cat(" (", context, ")");
  return s;
}

CollectiveLabel::CollectiveLabel(std::string label) : previous_(std::move(current_label)) {
  current_label = std::move(label);
}

CollectiveLabel::~CollectiveLabel() { current_label = std::move(previous_); }

const std::string& CollectiveLabel::current() { return current_label; }

void OrderHash::add(std::uint64_t digest) {
  count += 1;
  running = fnv_value(running, digest);
}

void Communicator::check_order(const CollectiveRecord& record) {
  if (!diverged_.empty()) throw CommError(diverged_);  // the ranks already disagree: touch nothing
  order_.add(record.digest());
  if (size_ == 1) return;
  struct Header {
    std::uint64_t count, running;
  };
  const Header mine{order_.count, order_.running};
  std::vector<Header> all(static_cast<std::size_t>(size_));
  checking_ = &record;
  struct Done {
    const CollectiveRecord*& checking;
    ~Done() { checking = nullptr; }
  } done{checking_};
  transport_->all_gather(&mine, all.data(), sizeof mine);
  const bool agree = std::all_of(all.begin(), all.end(), [&](const Header& h) {
    return h.count == mine.count && h.running == mine.running;
  });
  if (agree) return;
  // Every rank saw the same headers, so every rank is here, at the same exchange: swap what each
  // was about to run, so the message can name it for every rank.
  const Description text = to_description(record.describe());
  std::vector<Description> texts(all.size());
  transport_->all_gather(text.data(), texts.data(), sizeof text);
  std::vector<std::string> issued;
  for (const Description& d : texts) issued.emplace_back(d.data());
  std::string variants;
  std::vector<std::string> seen;
  for (const std::string& t : issued) {
    if (std::find(seen.begin(), seen.end(), t) != seen.end()) continue;
    seen.push_back(t);
    variants += cat(seen.size() > 1 ? "; " : "", ranks_with(issued, t), " issued ", t);
  }
  diverged_ = cat("[comm] the ranks issued different collectives: at collective ", mine.count, " of this communicator, ",
                  variants, ". Every rank must issue the same collectives in the same order: the ranks took different "
                  "paths through the model (a branch on the rank, a unit skipped, or a different number of steps or "
                  "evaluations); stopped before running mismatched collectives");
  throw CommError(diverged_);
}

}  // namespace zero
