// SPDX-License-Identifier: Apache-2.0
// The duration grammar is core's (core/duration.h); these names stay for the recorder's callers.
#pragma once

#include "trainmon/core/duration.h"

namespace trainmon::recorder {

using trainmon::duration_syntax;
using trainmon::format_duration_ms;
using trainmon::kMaxDurationNs;
using trainmon::parse_duration_ns;

}  // namespace trainmon::recorder
