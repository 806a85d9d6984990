// PickleReader: reads the subset of Python's pickle format that plain data uses (dict,
// list, tuple, str, bytes, int, float, bool, None; protocols 2 to 5, and the opcodes of
// torch's own pickler), without importing or calling anything. A pickle that asks for a
// global, a reduce, an instance, a set, a persistent id or an out-of-band buffer is
// refused, naming the opcode and its byte; so is one nested deeper than kMaxDepth or with
// an integer wider than 64 bits.
//
// The values are replayed as SAX events (SaxSink), so a pickle and a JSON document feed
// the same builder. One list may be streamed: the value of a key of the root dictionary
// (a flight-recorder dump's "entries"), whose items are handed to a callback as they are
// appended and then dropped, so memory stays bounded by one item, not by the file.
//
//   PickleReader reader(stream);
//   reader.stream_root_list("entries", [&](const PickleValue& item) { return replay(item, sink); });
//   PickleValue root = reader.read();
//   replay(root, sink);   // the streamed list replays as an empty list
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "ddpscope/error.h"
#include "gz_stream.h"

namespace ddpscope::probes {

class PickleError : public Error {
 public:
  using Error::Error;
};

// The events a SAX-style document reader gives; every one returns false to stop.
class SaxSink {
 public:
  virtual ~SaxSink() = default;
  virtual bool Null() = 0;
  virtual bool Bool(bool b) = 0;
  virtual bool Int64(int64_t i) = 0;
  virtual bool Uint64(uint64_t u) = 0;
  virtual bool Double(double d) = 0;
  virtual bool String(std::string_view s) = 0;
  virtual bool Key(std::string_view s) = 0;
  virtual bool StartObject() = 0;
  virtual bool EndObject() = 0;
  virtual bool StartArray() = 0;
  virtual bool EndArray() = 0;
};

struct PickleObject;

struct PickleValue {
  enum class Type : uint8_t { None, Bool, Int, Float, Str, Bytes, List, Tuple, Dict };
  Type type = Type::None;
  bool b = false;
  int64_t i = 0;
  double d = 0;
  std::shared_ptr<PickleObject> obj;  // Str, Bytes (text), List, Tuple (items), Dict (key, value, ...)
};

struct PickleObject {
  std::string text;
  std::vector<PickleValue> items;
  bool streamed = false;   // a streamed list: its items went to the callback
  bool placed = false;     // put in another container: frozen from then on
  int depth = 0;           // levels of containers inside it
  int64_t memo_slot = -1;  // the memo slot last set to it
};

// Replays a value as SAX events: a dict as an object (keys that are not strings are
// written as their text: ints in decimal), a list or tuple as an array, bytes as a string.
bool replay(const PickleValue& v, SaxSink& sink);

class PickleReader {
 public:
  static constexpr int kMaxDepth = 200;
  explicit PickleReader(GzStream& in) : in_(in) {}
  void stream_root_list(std::string key, std::function<bool(const PickleValue&)> on_item) {
    stream_key_ = std::move(key);
    on_item_ = std::move(on_item);
  }
  // Stops after the first key of the root dictionary: for telling what a file is
  // without reading all of it (first_root_key() says which).
  void stop_at_first_root_key() { probe_ = true; }
  const std::string& first_root_key() const { return first_root_key_; }
  // Runs the pickle to its STOP; throws PickleError (file, byte, what) on anything else.
  // A callback that returns false stops the read: read() then returns None.
  PickleValue read();

 private:
  [[noreturn]] void fail(const std::string& why) const;
  uint8_t byte();
  uint64_t uint_le(int n);
  std::string bytes(uint64_t n);
  std::string line();
  uint64_t text_index(const char* opcode);
  void push(PickleValue v);
  PickleValue pop();
  size_t pop_mark();
  PickleValue text_value(PickleValue::Type t, std::string s);
  PickleValue container(PickleValue::Type t);
  void append_items(size_t from);
  void set_items(size_t from);
  void place(PickleValue& item, PickleObject& into);
  bool at_root_value_slot() const;
  void memo_put(uint64_t index);
  const PickleValue& memo_get(uint64_t index) const;
  int64_t decode_long(const std::string& le) const;
  PickleValue tuple_of(size_t from);
  void load_opcode();
  void load_proto();
  void load_dict();
  void load_list();
  void load_small_tuple();
  void load_append();
  void load_setitem();
  void load_long4();
  void load_text_int();
  void load_binfloat();
  void load_float();
  void load_dup();
  [[noreturn]] void refuse_opcode() const;

  GzStream& in_;
  std::vector<PickleValue> stack_;
  std::vector<size_t> marks_;
  std::vector<PickleValue> memo_;
  std::vector<bool> memo_set_;
  std::unordered_set<uint64_t> memo_dropped_;  // slots of streamed items, forgotten
  std::string stream_key_;
  std::function<bool(const PickleValue&)> on_item_;
  bool probe_ = false, stopped_ = false;
  std::string first_root_key_;
  size_t op_at_ = 0;
  uint8_t op_ = 0;
};

}  // namespace ddpscope::probes
