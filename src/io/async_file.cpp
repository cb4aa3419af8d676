#include "io/async_file.h"

#include <fcntl.h>
#include <liburing.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace zero::io {

namespace {

bool aligned(std::uint64_t x) { return x % kDirectAlignment == 0; }

// One line per process for each way the I/O is slower than asked: the reader learns it once.
void say_once(std::atomic<bool>& said, const std::string& line) {
  if (!said.exchange(true)) std::fprintf(stderr, "zero: [io] %s\n", line.c_str());
}
std::atomic<bool> said_buffered{false}, said_no_ring{false};

std::string folder_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

}  // namespace

// The ring (liburing's io_uring), released with the file. Absent where the kernel refuses
// io_uring (a seccomp profile, io_uring_disabled): then every chunk runs as a pread/pwrite.
struct AsyncFile::Ring {
  io_uring ring{};
  explicit Ring(unsigned entries) {
    const int rc = io_uring_queue_init(entries, &ring, 0);
    if (rc < 0) throw IoError(cat("[io] io_uring: ", std::strerror(-rc)));
  }
  ~Ring() { io_uring_queue_exit(&ring); }
};

AsyncFile::AsyncFile(const std::string& path, const IoOptions& options, bool create) : path_(path), options_(options) {
  ZERO_CHECK(options.block_size > 0 && options.queue_depth > 0, "I/O options: block_size ", options.block_size, ", queue_depth ",
             options.queue_depth);
  // Whole direct chunks: a block size that is not a multiple of the alignment would leave every
  // chunk but the first unaligned.
  options_.block_size = std::max(kDirectAlignment, options.block_size / kDirectAlignment * kDirectAlignment);
  const int flags = O_RDWR | O_CLOEXEC | (create ? O_CREAT | O_TRUNC : 0);
  fd_ = ::open(path.c_str(), flags, 0600);
  if (fd_ < 0) {
    throw IoError(cat("[io] cannot ", create ? "create " : "open ", path, ": ", std::strerror(errno),
                      create ? "; the folder must exist and be writable" : ""));
  }
  if (options.direct) {
    direct_fd_ = ::open(path.c_str(), O_RDWR | O_CLOEXEC | O_DIRECT);
    if (direct_fd_ < 0) {
      say_once(said_buffered, cat(folder_of(path), " does not take O_DIRECT (", std::strerror(errno),
                                  "; tmpfs does not): buffered I/O through the page cache"));
    }
  }
  try {
    ring_ = std::make_unique<Ring>(static_cast<unsigned>(options.queue_depth));
  } catch (const IoError& e) {
    say_once(said_no_ring, cat(e.what(), ": the kernel refuses io_uring; synchronous reads and writes, one at a time"));
  }
  in_flight_.resize(static_cast<std::size_t>(options.queue_depth));
}

AsyncFile::~AsyncFile() {
  try {
    while (in_flight_count_ > 0) reap_one();
  } catch (...) {
  }
  ring_.reset();
  if (direct_fd_ >= 0) ::close(direct_fd_);
  if (fd_ >= 0) ::close(fd_);
}

AsyncFile::Ticket AsyncFile::write(std::uint64_t offset, const void* data, std::size_t bytes) {
  bytes_written_ += bytes;
  return submit(true, offset, static_cast<char*>(const_cast<void*>(data)), bytes);
}

AsyncFile::Ticket AsyncFile::read(std::uint64_t offset, void* data, std::size_t bytes) {
  bytes_read_ += bytes;
  return submit(false, offset, static_cast<char*>(data), bytes);
}

// A request is cut into chunks of block_size bytes (the last one shorter); with O_DIRECT an
// unaligned tail becomes a chunk of its own, so the aligned part before it stays direct.
AsyncFile::Ticket AsyncFile::submit(bool write, std::uint64_t offset, char* data, std::size_t bytes) {
  const Ticket t = next_ticket_++;
  std::size_t chunks = 0;
  for (std::size_t done = 0; done < bytes;) {
    std::size_t n = std::min(options_.block_size, bytes - done);
    const std::size_t whole = n / kDirectAlignment * kDirectAlignment;
    if (direct() && whole > 0 && whole < n && aligned(offset + done)) n = whole;
    queued_.push_back({t, write, offset + done, data + done, n});
    done += n;
    ++chunks;
  }
  if (chunks > 0) remaining_[t] = chunks;
  fill_ring();
  return t;
}

int AsyncFile::fd_for(const Chunk& c) const {
  const bool can_go_direct = aligned(c.offset) && aligned(c.bytes) && aligned(reinterpret_cast<std::uintptr_t>(c.data));
  return direct() && can_go_direct ? direct_fd_ : fd_;
}

// Moves queued chunks into the kernel while fewer than queue_depth are there.
void AsyncFile::fill_ring() {
  if (!ring_) {  // no io_uring: each chunk now, in order
    while (!queued_.empty()) {
      const Chunk c = queued_.front();
      queued_.pop_front();
      const long r = c.write ? ::pwrite(fd_for(c), c.data, c.bytes, static_cast<off_t>(c.offset))
                             : ::pread(fd_for(c), c.data, c.bytes, static_cast<off_t>(c.offset));
      complete(c, r < 0 ? -errno : r);
    }
    return;
  }
  int added = 0;
  while (!queued_.empty() && in_flight_count_ < options_.queue_depth) {
    std::size_t slot = 0;
    while (in_flight_[slot].data != nullptr) ++slot;
    in_flight_[slot] = queued_.front();
    queued_.pop_front();
    const Chunk& c = in_flight_[slot];
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_->ring);
    ZERO_CHECK(sqe != nullptr, "io_uring submission queue full with ", in_flight_count_, " in flight");
    if (c.write) io_uring_prep_write(sqe, fd_for(c), c.data, static_cast<unsigned>(c.bytes), c.offset);
    else io_uring_prep_read(sqe, fd_for(c), c.data, static_cast<unsigned>(c.bytes), c.offset);
    io_uring_sqe_set_data64(sqe, slot);
    ++in_flight_count_;
    ++added;
  }
  if (added == 0) return;
  const int rc = io_uring_submit(&ring_->ring);
  if (rc < 0) throw IoError(cat("[io] ", path_, ": io_uring_submit: ", std::strerror(-rc)));
}

void AsyncFile::reap_one() {
  io_uring_cqe* cqe = nullptr;
  int rc;
  do rc = io_uring_wait_cqe(&ring_->ring, &cqe);
  while (rc == -EINTR);
  if (rc < 0) throw IoError(cat("[io] ", path_, ": io_uring_wait_cqe: ", std::strerror(-rc)));
  const std::size_t slot = io_uring_cqe_get_data64(cqe);
  const long result = cqe->res;
  io_uring_cqe_seen(&ring_->ring, cqe);
  const Chunk c = in_flight_.at(slot);
  in_flight_[slot] = Chunk{};
  --in_flight_count_;
  complete(c, result);
}

// A short transfer queues its remainder first (a buffered chunk if it is no longer aligned);
// an error, or a read that reaches the end of the file, fails the request.
void AsyncFile::complete(const Chunk& c, long result) {
  const auto left = remaining_.find(c.ticket);
  ZERO_CHECK(left != remaining_.end(), "a completion for a request not in flight");
  if (result > 0 && static_cast<std::size_t>(result) < c.bytes) {
    const auto n = static_cast<std::size_t>(result);
    queued_.push_front({c.ticket, c.write, c.offset + n, c.data + n, c.bytes - n});
    return;
  }
  if (result <= 0 && !failures_.count(c.ticket)) {
    const std::string why = result < 0 ? std::strerror(static_cast<int>(-result))
                                       : (c.write ? "the disk took no bytes" : "the file ends before the bytes asked for");
    std::string hint;
    if (result == -ENOSPC) hint = ": the file system is full; free space or point nvme_path at a larger one";
    failures_[c.ticket] = cat("[io] cannot ", c.write ? "write " : "read ", c.bytes, " bytes at offset ", c.offset, " of ", path_,
                              ": ", why, hint);
  }
  if (--left->second == 0) remaining_.erase(left);
}

void AsyncFile::wait(Ticket t) {
  while (remaining_.count(t)) {
    fill_ring();
    if (remaining_.count(t)) reap_one();
  }
  const auto f = failures_.find(t);
  if (f == failures_.end()) return;
  const std::string message = f->second;
  failures_.erase(f);
  throw IoError(message);
}

void AsyncFile::wait_all() {
  while (!remaining_.empty()) {
    fill_ring();
    if (in_flight_count_ > 0) reap_one();
  }
  if (failures_.empty()) return;
  const std::string message = failures_.begin()->second;
  failures_.clear();
  throw IoError(message);
}

}  // namespace zero::io
