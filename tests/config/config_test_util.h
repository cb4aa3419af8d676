// Helpers of the config tests: the message a config fails with, and files written for a test.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "common/error.h"
#include "config/config.h"

namespace zero::config_test {

#define EXPECT_CONTAINS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << "message: " << (text)

inline std::string fixture(const std::string& name) { return std::string(ZERO_TEST_DATA_DIR) + "/config/" + name; }

// The message parse_config throws for j; a test failure if it throws none.
inline std::string error_of(const nlohmann::json& j, int world = 1, const ConfigOptions& options = {}) {
  try {
    parse_config(j, world, options);
  } catch (const ConfigError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no ConfigError for " << j.dump();
  return "";
}

// The same for a file.
inline std::string load_error(const std::string& path) {
  try {
    load_config(path, 1);
  } catch (const ConfigError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no ConfigError for " << path;
  return "";
}

inline std::string write_temp(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / ("zero_config_test_" + name);
  std::ofstream(path) << text;
  return path.string();
}

}  // namespace zero::config_test
