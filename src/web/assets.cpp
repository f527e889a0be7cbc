// SPDX-License-Identifier: Apache-2.0
#include "trainmon/web/assets.h"

namespace trainmon::web {

const Asset* find_asset(std::string_view name) noexcept {
  for (const auto& a : all_assets())
    if (a.name == name) return &a;
  return nullptr;
}

}  // namespace trainmon::web
