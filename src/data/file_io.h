// Whole-file reads and all-or-nothing writes for the data layer. Errors are zero::Error with a
// "[data]" message that names the file and the reason (from the operating system).
#pragma once

#include <string>
#include <string_view>

namespace zero::data {

// The file's bytes. A missing file, a directory or an unreadable file throws.
std::string read_file_bytes(const std::string& path);

// Writes `bytes` to a temporary file beside `path`, then renames it over `path`, so a reader
// (or a crash) never sees a half-written file under the final name.
void write_file_atomically(const std::string& path, std::string_view bytes);

}  // namespace zero::data
