// Reading a data file: common/input_file.h's one way (regular files only, the name in every
// error, no hang on a FIFO), with the data layer's size limit.
#pragma once

#include <cstdint>
#include <string>

namespace zero::data {

// The most bytes zero reads from one data file, and the most a gzip file may decompress to:
// 4 GiB, as much as an llm.c token file can hold (2^31 - 1 uint16 tokens) with room to spare.
inline constexpr std::uint64_t kMaxDataFileBytes = std::uint64_t{1} << 32;

// The file's bytes; zero::Error ("[data] data file <path> ...") for a missing file, one that is
// not a regular file (a directory, FIFO or device), one that cannot be read, or one longer than
// kMaxDataFileBytes.
std::string read_data_file(const std::string& path);

}  // namespace zero::data
