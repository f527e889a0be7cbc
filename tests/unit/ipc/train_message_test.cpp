// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <string>

#include "trainmon/diagnose/train_message.h"
#include "trainmon/ipc/train_channel.h"

using namespace trainmon;
using namespace trainmon::ipc;
using namespace trainmon::diagnose;  // the training-event parser (diagnose/train_message.h)

namespace {

RejectReason reason_of(std::string_view text) {
  auto r = parse_train_event(text);
  EXPECT_FALSE(r.has_value()) << text;
  return r ? RejectReason::queue_full : reject_reason_of(r.error());
}

}  // namespace

TEST(IpcParse, FullEpochEndMessage) {
  auto r = parse_train_event(
      R"({"v":1,"type":"epoch_end","t":1718000000.25,"seq":17,"pid":4242,"rank":0,"gpu":1,"epoch":44,)"
      R"("epochs":200,"batch":99,"batches":100,"step":4499,"batch_size":128,"imgsz":640,"loss":0.731,)"
      R"("lr":0.01,"rss_bytes":5476083302,"dropped":3,"framework":"ultralytics","run_id":"12",)"
      R"("torch":{"allocated_bytes":3328599654,"reserved_bytes":4294967296,"peak_bytes":3865470566,)"
      R"("num_alloc_retries":2,"num_ooms":0},"future_field":[1,2]})");
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->type, EventType::epoch_end);
  EXPECT_DOUBLE_EQ(r->time_unix_s, 1718000000.25);
  EXPECT_EQ(r->seq, 17);
  EXPECT_EQ(r->pid, 4242);
  EXPECT_EQ(r->rank, 0);
  EXPECT_EQ(r->gpu, 1);
  EXPECT_EQ(r->epoch, 44);
  EXPECT_EQ(r->epochs, 200);
  EXPECT_EQ(r->batch, 99);
  EXPECT_EQ(r->batches, 100);
  EXPECT_EQ(r->step, 4499);
  EXPECT_EQ(r->batch_size, 128);
  EXPECT_EQ(r->imgsz, 640);
  ASSERT_TRUE(r->loss.has_value());
  EXPECT_DOUBLE_EQ(*r->loss, 0.731);
  EXPECT_DOUBLE_EQ(*r->lr, 0.01);
  EXPECT_EQ(r->rss_bytes, 5476083302);
  EXPECT_EQ(r->dropped, 3);
  EXPECT_EQ(r->framework, "ultralytics");
  EXPECT_EQ(r->run_id, "12");
  EXPECT_DOUBLE_EQ(r->torch.allocated_bytes, 3328599654.0);
  EXPECT_DOUBLE_EQ(r->torch.reserved_bytes, 4294967296.0);
  EXPECT_DOUBLE_EQ(r->torch.peak_bytes, 3865470566.0);
  EXPECT_DOUBLE_EQ(r->torch.num_alloc_retries, 2.0);
  EXPECT_DOUBLE_EQ(r->torch.num_ooms, 0.0);
}

TEST(IpcParse, MinimalMessageLeavesEverythingUnknown) {
  auto r = parse_train_event(R"({"v":1,"type":"hello","t":1718000000})");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->type, EventType::hello);
  EXPECT_EQ(r->epoch, -1);
  EXPECT_EQ(r->batch_size, -1);
  EXPECT_FALSE(r->loss.has_value());
  EXPECT_DOUBLE_EQ(r->torch.allocated_bytes, -1);
  EXPECT_TRUE(r->framework.empty());
}

TEST(IpcParse, NullFieldsAreAbsentAndIntegralFloatsAreIntegers) {
  auto r =
      parse_train_event(R"({"v":1,"type":"batch_end","t":1718000000,"epoch":3.0,"loss":null,"torch":null})");
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->epoch, 3);
  EXPECT_FALSE(r->loss.has_value());
}

TEST(IpcParse, RejectsEachKindOfBadMessage) {
  EXPECT_EQ(reason_of(std::string(kMaxMessageBytes + 1, ' ')), RejectReason::too_large);
  EXPECT_EQ(reason_of("{\"v\":1,"), RejectReason::not_json);
  EXPECT_EQ(reason_of(""), RejectReason::not_json);
  EXPECT_EQ(reason_of("\xff\xfe"), RejectReason::not_json);
  EXPECT_EQ(reason_of("{\"v\":1,\"type\":\"hello\",\"t\":1718000000,\"framework\":\"\xc3\"}"),
            RejectReason::not_json);
  EXPECT_EQ(reason_of("[[[[[[[[[[1]]]]]]]]]]"), RejectReason::too_deep);
  EXPECT_EQ(reason_of(std::string(10000, '[')), RejectReason::too_deep);
  EXPECT_EQ(reason_of("[1,2]"), RejectReason::not_object);
  EXPECT_EQ(reason_of("42"), RejectReason::not_object);
  EXPECT_EQ(reason_of(R"({"type":"hello","t":1718000000})"), RejectReason::bad_version);
  EXPECT_EQ(reason_of(R"({"v":4,"type":"hello","t":1718000000})"), RejectReason::bad_version);
  EXPECT_EQ(reason_of(R"({"v":"1","type":"hello","t":1718000000})"), RejectReason::bad_version);
  EXPECT_EQ(reason_of(R"({"v":1,"t":1718000000})"), RejectReason::unknown_type);
  EXPECT_EQ(reason_of(R"({"v":1,"type":"reboot","t":1718000000})"), RejectReason::unknown_type);
  EXPECT_EQ(reason_of(R"({"v":1,"type":7,"t":1718000000})"), RejectReason::unknown_type);
}

TEST(IpcParse, ValidatesEveryFieldTypeAndRange) {
  auto bad = [](const std::string& fields) {
    return reason_of(R"({"v":1,"type":"batch_end","t":1718000000,)" + fields + "}");
  };
  EXPECT_EQ(reason_of(R"({"v":1,"type":"batch_end"})"), RejectReason::bad_field);  // t missing
  EXPECT_EQ(bad(R"("epoch":-1)"), RejectReason::bad_field);
  EXPECT_EQ(bad(R"("epoch":"3")"), RejectReason::bad_field);
  EXPECT_EQ(bad(R"("epoch":2.5)"), RejectReason::bad_field);
  EXPECT_EQ(bad(R"("epoch":1e300)"), RejectReason::bad_field);
  EXPECT_EQ(bad(R"("epoch":18446744073709551615)"), RejectReason::bad_field);
  EXPECT_EQ(bad(R"("batch_size":0)"), RejectReason::bad_field);
  EXPECT_EQ(bad(R"("rank":70000)"), RejectReason::bad_field);
  EXPECT_EQ(bad(R"("gpu":true)"), RejectReason::bad_field);
  EXPECT_EQ(bad(R"("loss":1e999)"), RejectReason::not_json);  // overflows: the JSON parser refuses it
  EXPECT_EQ(bad(R"("loss":"nan")"), RejectReason::bad_field);
  EXPECT_EQ(bad(R"("lr":-0.1)"), RejectReason::bad_field);
  EXPECT_EQ(bad(R"("framework":")" + std::string(129, 'x') + "\""), RejectReason::bad_field);
  EXPECT_EQ(bad(R"("framework":"a\u0000b")"), RejectReason::bad_field);
  EXPECT_EQ(bad(R"("framework":"caf\u00e9")"), RejectReason::bad_field);
  EXPECT_EQ(bad(R"("framework":12)"), RejectReason::bad_field);
  EXPECT_EQ(bad(R"("torch":[1])"), RejectReason::bad_field);
  EXPECT_EQ(bad(R"("torch":{"allocated_bytes":-5})"), RejectReason::bad_field);
  EXPECT_EQ(bad(R"("torch":{"num_ooms":1e20})"), RejectReason::bad_field);
  EXPECT_EQ(reason_of(R"({"v":1,"type":"hello","t":5})"), RejectReason::bad_field);  // 1970
}

TEST(IpcParse, ErrorNamesTheFieldAndReason) {
  auto r = parse_train_event(R"({"v":1,"type":"batch_end","t":1718000000,"batch_size":-3})");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().name, "bad_field");
  EXPECT_NE(r.error().message.find("batch_size"), std::string::npos) << r.error().message;
}

TEST(IpcParse, CanonicalJsonRoundTrips) {
  TrainMessage m;
  m.type = EventType::batch_end;
  m.time_unix_s = 1718000000.5;
  m.seq = 5;
  m.epoch = 2;
  m.epochs = 10;
  m.batch = 31;
  m.batch_size = 64;
  m.loss = 1.25;
  m.torch.allocated_bytes = 1024;
  m.torch.num_ooms = 0;
  m.framework = "loop";
  std::string text = to_json(m);
  EXPECT_EQ(text.find("\"imgsz\""), std::string::npos) << text;  // absent fields stay absent
  auto back = parse_train_event(text);
  ASSERT_TRUE(back.has_value()) << back.error().message;
  EXPECT_EQ(*back, m);
}

TEST(IpcParse, ConvertsToDiagnoseAndStoreEvents) {
  auto m = parse_train_event(
      R"({"v":1,"type":"epoch_end","t":1718000100.5,"epoch":4,"batch_size":32,"gpu":0,)"
      R"("torch":{"allocated_bytes":100,"reserved_bytes":200,"peak_bytes":150,"num_alloc_retries":1,"num_ooms":0}})");
  ASSERT_TRUE(m.has_value());
  const RunClock clock{1718000000.0};
  auto d = to_diagnose_event(*m, clock.of(*m));
  EXPECT_DOUBLE_EQ(d.t, 100.5);
  EXPECT_EQ(d.kind, "epoch_end");
  EXPECT_EQ(d.epoch, 4);
  EXPECT_EQ(d.batch, -1);
  EXPECT_EQ(d.batch_size, 32);
  EXPECT_EQ(d.gpu, 0);
  EXPECT_DOUBLE_EQ(d.torch_reserved_bytes, 200);
  EXPECT_DOUBLE_EQ(d.num_alloc_retries, 1);
  auto s = to_store_event(*m, 1718000100500000000LL);
  EXPECT_EQ(s.time_unix_ns, 1718000100500000000LL);
  EXPECT_EQ(s.kind, "epoch_end");
  EXPECT_NE(s.json.find("\"epoch\":4"), std::string::npos) << s.json;
}

TEST(IpcParse, TypeNamesRoundTrip) {
  for (std::size_t i = 0; i < kEventTypeCount; ++i) {
    auto t = static_cast<EventType>(i);
    EXPECT_EQ(event_type_from_name(event_type_name(t)), t);
  }
  EXPECT_FALSE(event_type_from_name("epoch").has_value());
  EXPECT_EQ(reject_reason_name(RejectReason::wrong_user), "wrong_user");
}
