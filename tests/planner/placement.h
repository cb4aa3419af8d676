// Test helper: engine settings of a stage and an offload placement, as zero estimate's rows
// name them ("2+opt", "3+opt+param", "2+opt+dpu").
#pragma once

#include "engine/settings.h"

namespace zero {

inline EngineSettings placement(int stage, bool offload_optimizer = false, bool offload_param = false, bool delayed_update = false) {
  EngineSettings s;
  s.stage = stage;
  s.offload.optimizer = offload_optimizer;
  s.offload.params = offload_param;
  s.offload.delayed_update = delayed_update;
  return s;
}

}  // namespace zero
