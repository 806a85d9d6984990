// Values to frames and back: numbers, text, lists and tensors (contiguous, and views
// compacted) survive the round trip through the wire decoder; a large tensor is handed
// to the transport from its own storage, a small one copied; a received tensor adopts
// its frame when it can and copies it when the frame is misaligned for its dtype.
#include <QtTest/QtTest>

#include "rpc/message_codec.h"
#include "rpc/rref.h"
#include "test_registry.h"

using namespace ddpscope;
using namespace ddpscope::rpc;

namespace {

constexpr std::string_view kToken = "codec-token";

struct Sent {
  std::vector<std::string> frames;  // token, header, body, tensor bytes
};

Sent encode(const Value& v) {
  wire::BodyWriter body;
  std::vector<Tensor> tensors;
  encode_value(v, body, tensors, [](const RRef&) { return wire::RRefMeta{}; });
  wire::Header h;
  h.type = static_cast<uint8_t>(wire::MessageType::Response);
  h.src = 0;
  h.dst = 1;
  h.num_tensors = static_cast<uint32_t>(tensors.size());
  Sent s;
  s.frames = {std::string(kToken), std::string(reinterpret_cast<const char*>(&h), sizeof h), body.take()};
  for (const Tensor& t : tensors) {
    const OutgoingFrame f = tensor_frame(t, false);
    s.frames.emplace_back(static_cast<const char*>(f.data), f.size);
  }
  return s;
}

// Decodes `s` as the agent does; tensor frames are owned by `keep` (offset by `shift`
// bytes into it, to misalign them on purpose).
Value decode(const Sent& s, std::vector<std::shared_ptr<std::string>>& keep, size_t shift = 0) {
  std::vector<wire::FrameView> views;
  for (const auto& f : s.frames)
    views.push_back({reinterpret_cast<const uint8_t*>(f.data()), f.size()});
  const wire::DecodedMessage m = wire::decode_message(views, kToken);
  std::vector<IncomingFrame> frames;
  for (const auto& v : m.tensor_frames) {
    auto copy = std::make_shared<std::string>(std::string(shift, '\0') +
                                              std::string(reinterpret_cast<const char*>(v.data), v.size));
    keep.push_back(copy);
    frames.push_back({reinterpret_cast<const uint8_t*>(copy->data()) + shift, v.size, copy});
  }
  return decode_value(m.body, frames, [](const wire::RRefMeta&) -> RRef { throw Error("no RRefs here", "", 0); });
}

}  // namespace

class TestMessageCodec : public QObject {
  Q_OBJECT

 private slots:
  void testValuesSurviveTheRoundTrip() {
    Tensor matrix = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
    Tensor view = matrix.transpose(0, 1);  // not contiguous: compacted on the way
    const Value sent(ValueList{Value(int64_t{7}), Value(2.5), Value(std::string("hi")), Value(true), Value(),
                               Value(matrix), Value(view), Value(ValueList{Value(int64_t{1})})});
    std::vector<std::shared_ptr<std::string>> keep;
    const Value got = decode(encode(sent), keep);
    const ValueList& l = got.list();
    QCOMPARE(l.size(), size_t{8});
    QCOMPARE(l[0].to_int(), int64_t{7});
    QCOMPARE(l[1].to_double(), 2.5);
    QCOMPARE(l[2].str(), std::string("hi"));
    QVERIFY(l[3].to_bool());
    QVERIFY(l[4].is_none());
    QCOMPARE(l[5].tensor().sizes(), (Shape{2, 3}));
    QCOMPARE(l[5].tensor().to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
    QCOMPARE(l[6].tensor().sizes(), (Shape{3, 2}));
    QCOMPARE(l[6].tensor().to_vector<float>(), (std::vector<float>{1, 4, 2, 5, 3, 6}));
    QCOMPARE(l[7].list()[0].to_int(), int64_t{1});
  }

  void testLargeTensorsGoFromTheirStorage() {
    Tensor big = Tensor::zeros({int64_t(kZeroCopyBytes / 4 + 16)}, DType::F32);
    const OutgoingFrame aliased = tensor_frame(big, true);
    QCOMPARE(aliased.data, big.raw_data());
    QVERIFY(aliased.owner != nullptr);                   // the storage lives until the transport sent it
    QVERIFY(tensor_frame(big, false).owner == nullptr);  // someone may write it: copied
    Tensor small = Tensor::zeros({4}, DType::F32);
    QVERIFY(tensor_frame(small, true).owner == nullptr);
  }

  void testAReceivedTensorAdoptsOrCopiesItsFrame() {
    const Value sent(Tensor::from_vector<double>({1.5, -2.5}, {2}));
    std::vector<std::shared_ptr<std::string>> keep;
    const Value aligned = decode(encode(sent), keep, 0);
    const auto* frame = reinterpret_cast<const void*>(keep.back()->data());
    QCOMPARE(aligned.tensor().raw_data(), frame);  // adopted: no copy
    const Value shifted = decode(encode(sent), keep, 3);
    QVERIFY(shifted.tensor().raw_data() != static_cast<const void*>(keep.back()->data() + 3));  // copied
    QCOMPARE(shifted.tensor().to_vector<double>(), (std::vector<double>{1.5, -2.5}));
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestMessageCodec)
#include "tst_message_codec.moc"
