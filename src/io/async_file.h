// The disk tier's file I/O: asynchronous reads and writes through Linux io_uring, with O_DIRECT
// (the page cache bypassed, as ZeRO-Infinity reads and writes its swap files) where the file
// system allows it, and several requests in flight.
//
// Words:
//   request  one read() or write() of the caller: `bytes` at `offset` of the file, from or into
//            `data`. Its Ticket is waited on; many may be in flight at once.
//   chunk    a piece of a request of at most block_size bytes: what is submitted to the ring.
//            At most queue_depth chunks are in the kernel at once (DeepSpeed's aio.block_size and
//            aio.queue_depth).
//   aligned  O_DIRECT asks that the offset, the length and the buffer's address be multiples of
//            kDirectAlignment. A chunk that is not (an unaligned tail or offset, a buffer from
//            anywhere) goes through a second, buffered descriptor of the same file: any request
//            works, aligned ones at the disk's speed. (Linux keeps the two coherent: a direct
//            transfer writes back and drops the page cache's pages of its range.)
//
// A file system that refuses O_DIRECT (tmpfs) gets buffered I/O for everything, said once per
// process on stderr.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/error.h"

namespace zero::io {

class IoError : public Error {  // a file of the disk tier could not be opened, read or written
 public:
  using Error::Error;
};

inline constexpr std::size_t kDirectAlignment = 4096;

struct IoOptions {
  std::size_t block_size = 1'048'576;  // aio.block_size: bytes per submitted chunk (DeepSpeed's default)
  int queue_depth = 8;                 // aio.queue_depth: chunks in flight at once (DeepSpeed's default)
  bool direct = true;                  // try O_DIRECT (falls back to buffered where refused)
};

// A file opened for asynchronous I/O. Created (or truncated) if `create`. Not thread-safe: one
// thread submits and waits. The destructor waits for what is still in flight.
class AsyncFile {
 public:
  using Ticket = std::uint64_t;

  AsyncFile(const std::string& path, const IoOptions& options, bool create);
  ~AsyncFile();
  AsyncFile(const AsyncFile&) = delete;
  AsyncFile& operator=(const AsyncFile&) = delete;

  // Starts a transfer; `data` must stay valid (and, for a write, unchanged) until it is waited on.
  Ticket write(std::uint64_t offset, const void* data, std::size_t bytes);
  Ticket read(std::uint64_t offset, void* data, std::size_t bytes);
  // Blocks until the request is done; IoError naming the file on a failure (ENOSPC, EIO, a read
  // past the end). A request is waited on at most once; wait_all() waits for every one.
  void wait(Ticket t);
  void wait_all();

  const std::string& path() const { return path_; }
  bool direct() const { return direct_fd_ >= 0; }
  std::uint64_t bytes_read() const { return bytes_read_; }
  std::uint64_t bytes_written() const { return bytes_written_; }

 private:
  struct Chunk {
    Ticket ticket;
    bool write;
    std::uint64_t offset;
    char* data;
    std::size_t bytes;
  };
  struct Ring;

  Ticket submit(bool write, std::uint64_t offset, char* data, std::size_t bytes);
  void fill_ring();
  void reap_one();
  void complete(const Chunk& c, long result);
  int fd_for(const Chunk& c) const;

  std::string path_;
  IoOptions options_;
  int fd_ = -1;         // buffered descriptor: unaligned chunks, and everything without O_DIRECT
  int direct_fd_ = -1;  // O_DIRECT descriptor, -1 when the file system refuses it
  std::unique_ptr<Ring> ring_;
  std::deque<Chunk> queued_;         // chunks not yet submitted, in order
  std::vector<Chunk> in_flight_;     // slot i: the chunk whose user_data is i (bytes 0: free)
  int in_flight_count_ = 0;
  Ticket next_ticket_ = 1;
  std::map<Ticket, std::size_t> remaining_;  // chunks not yet done, by request
  std::map<Ticket, std::string> failures_;   // a request's first failure, thrown by its wait
  std::uint64_t bytes_read_ = 0, bytes_written_ = 0;
};

}  // namespace zero::io
