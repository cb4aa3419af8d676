#include "engine/module.h"

#include "common/error.h"

namespace zero {

UnitViews::UnitViews(const FlatLayout& layout)
    : layout_(&layout), params_(layout.num_units(), nullptr), grads_(layout.num_units(), nullptr),
      params_bf16_(layout.num_units(), nullptr) {}

void UnitViews::set(int unit, const float* params, float* grads, const std::uint16_t* params_bf16) {
  params_.at(unit) = params;
  grads_.at(unit) = grads;
  params_bf16_.at(unit) = params_bf16;
}

const float* UnitViews::param(int unit, int index) const {
  ZERO_CHECK(unit >= 0 && unit < layout_->num_units(), "unit ", unit);
  if (params_[unit] == nullptr) {
    throw ConfigError(cat("[engine] the model read unit '", layout_->unit(unit).name,
                          "', which the running unit neither is nor borrows: declare it in UnitSpec::borrows"));
  }
  return params_[unit] + layout_->unit(unit).params.at(index).offset;
}

const std::uint16_t* UnitViews::param_bf16(int unit, int index) const {
  if (params_bf16_.at(unit) == nullptr) return nullptr;
  return params_bf16_[unit] + layout_->unit(unit).params.at(index).offset;
}

float* UnitViews::grad(int unit, int index) const {
  ZERO_CHECK(unit >= 0 && unit < layout_->num_units(), "unit ", unit);
  if (grads_[unit] == nullptr) {
    throw ConfigError(cat("[engine] the model asked for the gradient of unit '", layout_->unit(unit).name,
                          "' outside backward, or without declaring it as a borrow"));
  }
  return grads_[unit] + layout_->unit(unit).params.at(index).offset;
}

}  // namespace zero
