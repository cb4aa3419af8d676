#include "data/file_io.h"

#include "common/input_file.h"

namespace zero::data {

std::string read_data_file(const std::string& path) {
  return read_input_file({.path = path, .component = "data", .role = "data file", .max_bytes = kMaxDataFileBytes});
}

}  // namespace zero::data
