#include "common/error.h"

namespace zero::detail {

void check_failed(const char* expr, const char* file, int line, const std::string& msg) {
  throw std::logic_error(cat("[internal] check failed: ", expr, " at ", file, ":", line,
                             msg.empty() ? "" : " — ", msg, " (this is a bug in zero; please report it)"));
}

}  // namespace zero::detail
