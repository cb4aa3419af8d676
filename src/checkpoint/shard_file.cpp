#include "checkpoint/shard_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace zero::checkpoint {
namespace {

std::string os_error() { return std::strerror(errno); }

std::uint32_t crc_update(std::uint32_t crc, const unsigned char* p, std::size_t n) {
  while (n > 0) {  // zlib takes a uInt length
    const auto chunk = static_cast<uInt>(std::min<std::size_t>(n, 1u << 30));
    crc = static_cast<std::uint32_t>(crc32(crc, p, chunk));
    p += chunk;
    n -= chunk;
  }
  return crc;
}

}  // namespace

void maybe_kill(const char* point, std::int64_t step) {
  const char* spec = std::getenv("ZERO_CHECKPOINT_TEST_KILL");
  if (!spec) return;
  const std::string want = std::string(point) + ":" + std::to_string(step);
  if (want == spec) std::raise(SIGKILL);
}

void sync_directory(const std::string& dir_or_empty) {
  const std::string dir = dir_or_empty.empty() ? "." : dir_or_empty;  // a relative file name's directory
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) throw CheckpointError(cat("[checkpoint] cannot open the directory ", dir, ": ", os_error()));
  const int rc = ::fsync(fd);
  const int saved = errno;
  ::close(fd);
  if (rc != 0 && saved != EINVAL) {  // some file systems cannot sync a directory; the rename stands
    errno = saved;
    throw CheckpointError(cat("[checkpoint] cannot sync the directory ", dir, ": ", os_error()));
  }
}

void write_file_durably(const std::string& path, const std::string& bytes) {
  ShardWriter w(path, kDefaultBlockBytes);
  w.append(bytes.data(), bytes.size());
  w.finish();
}

ShardWriter::ShardWriter(std::string path, std::uint64_t block_bytes)
    : path_(std::move(path)), partial_(path_ + ".partial"), block_bytes_(block_bytes) {
  ZERO_CHECK(block_bytes_ > 0, "block of 0 bytes");
  // A new file, never an existing one: whatever has the .partial name (a FIFO would block the
  // open, a symlink would write elsewhere) is removed first.
  ::unlink(partial_.c_str());
  fd_ = ::open(partial_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd_ < 0) throw CheckpointError(cat("[checkpoint] cannot create ", partial_, ": ", os_error(), ". Check that the directory is writable"));
  record_.name = std::filesystem::path(path_).filename().string();
}

ShardWriter::~ShardWriter() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(partial_.c_str());
  }
}

void ShardWriter::write_all(const unsigned char* p, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd_, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      throw CheckpointError(cat("[checkpoint] writing ", partial_, " failed after ", record_.bytes, " bytes: ", os_error(),
                                " (disk full?). The previous checkpoint, if any, is untouched"));
    }
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

void ShardWriter::append(const void* data, std::size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  write_all(p, bytes);
  record_.crc32 = crc_update(record_.crc32, p, bytes);
  while (bytes > 0) {  // the CRC of each block, across appends
    const std::size_t n = std::min<std::uint64_t>(bytes, block_bytes_ - in_block_);
    block_crc_ = crc_update(block_crc_, p, n);
    in_block_ += n;
    p += n;
    bytes -= n;
    if (in_block_ == block_bytes_) {
      record_.block_crc32.push_back(block_crc_);
      block_crc_ = 0;
      in_block_ = 0;
    }
  }
  record_.bytes += static_cast<std::uint64_t>(p - static_cast<const unsigned char*>(data));
}

FileRecord ShardWriter::finish() {
  if (in_block_ > 0) record_.block_crc32.push_back(block_crc_);
  in_block_ = 0;
  if (::fsync(fd_) != 0) throw CheckpointError(cat("[checkpoint] cannot sync ", partial_, ": ", os_error()));
  if (::close(fd_) != 0) {
    fd_ = -1;
    throw CheckpointError(cat("[checkpoint] closing ", partial_, " failed: ", os_error(), " (disk full?)"));
  }
  fd_ = -1;
  if (::rename(partial_.c_str(), path_.c_str()) != 0) {
    const std::string why = os_error();
    ::unlink(partial_.c_str());
    throw CheckpointError(cat("[checkpoint] cannot rename ", partial_, " to ", path_, ": ", why));
  }
  sync_directory(std::filesystem::path(path_).parent_path().string());
  return record_;
}

ShardReader::ShardReader(std::string path, const FileRecord& record, std::uint64_t block_bytes)
    : path_(std::move(path)), record_(record), block_bytes_(block_bytes) {
  try {
    fd_ = open_input_file({path_, "checkpoint", "rank file", ~std::uint64_t{0}});
  } catch (const Error& e) {
    throw CheckpointError(cat(e.what(), ". The checkpoint lacks this rank file; restore it, or resume from another checkpoint"));
  }
  const std::uint64_t size = fd_.size();
  if (size != record_.bytes) {
    throw CheckpointError(cat("[checkpoint] ", path_, " is ", size, " bytes but the manifest says ", record_.bytes, ": the file is ",
                              size < record_.bytes ? "truncated" : "longer than written", ". Resume from another checkpoint"));
  }
  const std::uint64_t blocks = (record_.bytes + block_bytes_ - 1) / block_bytes_;
  if (record_.block_crc32.size() != blocks) {
    throw CheckpointError(cat("[checkpoint] the manifest lists ", record_.block_crc32.size(), " block checksums for ", path_,
                              ", which has ", blocks, " blocks: the manifest is damaged"));
  }
}

void ShardReader::load_block(std::uint64_t b) {
  if (b == block_index_) return;
  const std::uint64_t start = b * block_bytes_;
  const std::size_t n = static_cast<std::size_t>(std::min(block_bytes_, record_.bytes - start));
  block_.resize(n);
  std::size_t got = 0;
  while (got < n) {
    const ssize_t r = ::pread(fd_.get(), block_.data() + got, n - got, static_cast<off_t>(start + got));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) throw CheckpointError(cat("[checkpoint] reading ", path_, " at byte ", start + got, " failed: ", r < 0 ? os_error() : "end of file"));
    got += static_cast<std::size_t>(r);
  }
  bytes_read_ += n;
  const std::uint32_t crc = crc_update(0, block_.data(), n);
  if (crc != record_.block_crc32[b]) {
    block_index_ = ~0ULL;
    throw CheckpointError(cat("[checkpoint] ", path_, " is corrupt: bytes ", start, "-", start + n - 1, " have CRC-32 ", crc,
                              " but the manifest says ", record_.block_crc32[b], ". Resume from another checkpoint"));
  }
  block_index_ = b;
}

void ShardReader::read(std::uint64_t offset, std::size_t bytes, void* out) {
  ZERO_CHECK(offset + bytes <= record_.bytes, "read past the end of ", path_);
  auto* dst = static_cast<unsigned char*>(out);
  while (bytes > 0) {
    const std::uint64_t b = offset / block_bytes_, within = offset - b * block_bytes_;
    load_block(b);
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(bytes, block_.size() - within));
    std::memcpy(dst, block_.data() + within, n);
    dst += n;
    offset += n;
    bytes -= n;
  }
}

}  // namespace zero::checkpoint
