// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for the training-event parser (docs/python.md "Fuzzing").
//   cmake -S . -B build/fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang \
//         -DTRAINMON_FUZZ=ON -DTRAINMON_BUILD_BENCH=OFF
//   cmake --build build/fuzz --target fuzz_train_event
//   build/fuzz/tests/fuzz/fuzz_train_event -max_len=70000 -max_total_time=60 \
//         build/fuzz/tests/fuzz/corpus tests/fuzz/corpus
// Properties checked: no crash / sanitizer report; an accepted message re-parses from its canonical
// JSON to the same value; a rejected one names a known reason.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "trainmon/diagnose/train_message.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace trainmon::diagnose;
  std::string_view input(reinterpret_cast<const char*>(data), size);
  // parse_train_event_into rather than parse_train_event: clang 14 cannot destroy libstdc++ 12's
  // std::expected<TrainMessage, Error> (P0848), and the fuzzer is built with clang.
  TrainMessage m;
  if (auto error = parse_train_event_into(input, m)) {
    if (reject_reason_name(reject_reason_of(*error)) != error->name) std::abort();
    return 0;
  }
  TrainMessage again;
  if (parse_train_event_into(to_json(m), again) || !(again == m)) std::abort();
  return 0;
}
