// gzip decompression (zlib), so a data file may be stored compressed: `--data notes.txt.gz`, or
// the default text, which Debian ships gzipped.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace zero::data {

// True when `bytes` start with the gzip signature (1f 8b). No UTF-8 text starts so (0x8b is a
// continuation byte) and neither does an llm.c token file, so the check is unambiguous.
bool is_gzip(std::string_view bytes);

// The decompressed bytes of every gzip member in `bytes`, concatenated (as gunzip does).
// Corrupt or truncated input, or more than `max_bytes` decompressed, throws zero::Error naming
// `name`.
std::string gunzip(std::string_view bytes, const std::string& name, std::uint64_t max_bytes = std::uint64_t{1} << 32);

}  // namespace zero::data
