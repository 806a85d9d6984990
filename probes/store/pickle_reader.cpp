#include "pickle_reader.h"

#include <bit>
#include <cstring>

namespace ddpscope::probes {
namespace {

using Type = PickleValue::Type;

PickleValue int_value(int64_t i) {
  PickleValue v;
  v.type = Type::Int;
  v.i = i;
  return v;
}

PickleValue bool_value(bool b) {
  PickleValue v;
  v.type = Type::Bool;
  v.b = b;
  return v;
}

PickleValue float_value(double d) {
  PickleValue v;
  v.type = Type::Float;
  v.d = d;
  return v;
}

bool is_container(Type t) { return t == Type::List || t == Type::Tuple || t == Type::Dict; }

bool replay_at(const PickleValue& v, SaxSink& sink, int depth) {
  if (depth > PickleReader::kMaxDepth)
    throw PickleError(detail::concat("the pickle nests deeper than ", PickleReader::kMaxDepth,
                                     " levels (or refers to itself): not plain data"),
                      __FILE__, __LINE__);
  switch (v.type) {
    case Type::None: return sink.Null();
    case Type::Bool: return sink.Bool(v.b);
    case Type::Int: return sink.Int64(v.i);
    case Type::Float: return sink.Double(v.d);
    case Type::Str:
    case Type::Bytes: return sink.String(v.obj->text);
    case Type::List:
    case Type::Tuple:
      if (!sink.StartArray()) return false;
      for (const PickleValue& item : v.obj->items)
        if (!replay_at(item, sink, depth + 1)) return false;
      return sink.EndArray();
    case Type::Dict: {
      if (!sink.StartObject()) return false;
      const auto& items = v.obj->items;
      for (size_t k = 0; k + 1 < items.size(); k += 2) {
        const PickleValue& key = items[k];
        bool ok = false;
        if (key.type == Type::Str || key.type == Type::Bytes) {
          ok = sink.Key(key.obj->text);
        } else if (key.type == Type::Int) {
          ok = sink.Key(std::to_string(key.i));  // pg_status is keyed by pg_id in some versions
        } else {
          throw PickleError("a dictionary key is neither text nor an integer: not data this reader takes", __FILE__,
                            __LINE__);
        }
        if (!ok || !replay_at(items[k + 1], sink, depth + 1)) return false;
      }
      return sink.EndObject();
    }
  }
  return false;
}

const char* opcode_name(uint8_t op) {
  switch (op) {
    case 'c': return "GLOBAL (a class or function to import)";
    case 0x93: return "STACK_GLOBAL (a class or function to import)";
    case 'R': return "REDUCE (a call)";
    case 'b': return "BUILD (an object's state)";
    case 'i': return "INST (an instance)";
    case 'o': return "OBJ (an instance)";
    case 0x81: return "NEWOBJ (an instance)";
    case 0x92: return "NEWOBJ_EX (an instance)";
    case 0x82:
    case 0x83:
    case 0x84: return "EXT (a registered extension)";
    case 'P':
    case 'Q': return "PERSID (a persistent id)";
    case 0x97:
    case 0x98: return "an out-of-band buffer";
    case 0x8f:
    case 0x90:
    case 0x91: return "a set";
    default: return nullptr;
  }
}

}  // namespace

bool replay(const PickleValue& v, SaxSink& sink) { return replay_at(v, sink, 0); }

void PickleReader::fail(const std::string& why) const {
  throw PickleError(detail::concat("the pickle's byte ", op_at_, ": ", why), __FILE__, __LINE__);
}

uint8_t PickleReader::byte() {
  if (in_.at_end()) fail("the pickle ends before its STOP (the file is truncated)");
  return static_cast<uint8_t>(in_.Take());
}

uint64_t PickleReader::uint_le(int n) {
  uint64_t v = 0;
  for (int k = 0; k < n; ++k)
    v |= static_cast<uint64_t>(byte()) << (8 * k);
  return v;
}

std::string PickleReader::bytes(uint64_t n) {
  // A length past the file's end is damage, not a reason to allocate (the file may be
  // compressed, so its decompressed size is not known: read in pieces).
  std::string s;
  constexpr uint64_t kPiece = 1 << 20;
  while (n > 0) {
    const uint64_t take = std::min(n, kPiece);
    const size_t old = s.size();
    s.resize(old + take);
    if (!in_.read(s.data() + old, take)) fail("a string runs past the end of the file (the file is truncated)");
    n -= take;
  }
  return s;
}

std::string PickleReader::line() {
  std::string s;
  for (;;) {
    const char c = static_cast<char>(byte());
    if (c == '\n') return s;
    if (s.size() > 4096) fail("a text argument longer than 4 KiB");
    s += c;
  }
}

// The decimal memo index of protocol 0's PUT and GET, on a line of its own.
uint64_t PickleReader::text_index(const char* opcode) {
  const std::string s = line();
  uint64_t index = 0;
  for (char c : s) {
    if (c < '0' || c > '9' || index > 100'000'000) fail(detail::concat(opcode, " with a bad index"));
    index = index * 10 + static_cast<uint64_t>(c - '0');
  }
  return index;
}

void PickleReader::push(PickleValue v) {
  if (stack_.size() > 10'000'000) fail("more than 10 million values on the stack");
  stack_.push_back(std::move(v));
}

PickleValue PickleReader::pop() {
  if (stack_.empty() || (!marks_.empty() && stack_.size() <= marks_.back()))
    fail("an opcode takes a value that is not there");
  PickleValue v = std::move(stack_.back());
  stack_.pop_back();
  return v;
}

size_t PickleReader::pop_mark() {
  if (marks_.empty()) fail("an opcode needs a MARK and there is none");
  const size_t m = marks_.back();
  marks_.pop_back();
  return m;
}

PickleValue PickleReader::text_value(Type t, std::string s) {
  PickleValue v;
  v.type = t;
  v.obj = std::make_shared<PickleObject>();
  v.obj->text = std::move(s);
  return v;
}

PickleValue PickleReader::container(Type t) {
  PickleValue v;
  v.type = t;
  v.obj = std::make_shared<PickleObject>();
  return v;
}

// The slot right after the root dictionary's MARK where a key's value goes, with that key
// on top: then a list made now is that key's value.
bool PickleReader::at_root_value_slot() const {
  if (stream_key_.empty() || marks_.size() != 1 || marks_[0] != 1 || stack_.size() < 2) return false;
  if (stack_[0].type != Type::Dict) return false;
  if ((stack_.size() - marks_[0]) % 2 != 1) return false;
  const PickleValue& key = stack_.back();
  return key.type == Type::Str && key.obj->text == stream_key_;
}

// Marks a container as placed in `into`, whose depth it may raise: a tree deeper than
// kMaxDepth is refused here, before it is built (its replay and its destruction recurse).
void PickleReader::place(PickleValue& item, PickleObject& into) {
  item.obj->placed = true;
  into.depth = std::max(into.depth, item.obj->depth + 1);
  if (into.depth > kMaxDepth) fail(detail::concat("the pickle nests deeper than ", kMaxDepth, " levels"));
}

// Containers are frozen once placed in another: plain data never changes one afterwards,
// and this keeps every value a tree (no cycles, depth known when it is placed).
void PickleReader::append_items(size_t from) {
  if (from == 0 || from > stack_.size()) fail("APPEND(S) without a list under its items");
  PickleValue& list = stack_[from - 1];
  if (list.type != Type::List) fail("APPEND(S) onto something that is not a list");
  PickleObject& o = *list.obj;
  if (o.placed) fail("items added to a list already put in another container: not plain data");
  for (size_t k = from; k < stack_.size(); ++k) {
    PickleValue& item = stack_[k];
    if (item.obj == list.obj) fail("a list appended to itself: not plain data");
    if (is_container(item.type)) place(item, o);
    if (o.streamed) {
      if (!on_item_(item)) {
        stopped_ = true;
        return;
      }
      // Python's pickler memoizes every dictionary: forget a streamed item once read, so
      // memory holds one item, not the list (a later reference to it is refused).
      if (item.obj && item.obj->memo_slot >= 0 && memo_[static_cast<size_t>(item.obj->memo_slot)].obj == item.obj) {
        memo_[static_cast<size_t>(item.obj->memo_slot)] = PickleValue{};
        memo_dropped_.insert(static_cast<uint64_t>(item.obj->memo_slot));
      }
    } else {
      o.items.push_back(std::move(item));
    }
  }
  stack_.resize(from);
}

void PickleReader::set_items(size_t from) {
  if (from == 0 || from > stack_.size() || (stack_.size() - from) % 2 != 0)
    fail("SETITEM(S) without a dictionary under an even number of values");
  PickleValue& dict = stack_[from - 1];
  if (dict.type != Type::Dict) fail("SETITEM(S) onto something that is not a dictionary");
  if (dict.obj->placed) fail("items added to a dictionary already put in another container: not plain data");
  for (size_t k = from; k < stack_.size(); ++k) {
    if (stack_[k].obj == dict.obj) fail("a dictionary put in itself: not plain data");
    if (is_container(stack_[k].type)) place(stack_[k], *dict.obj);
    dict.obj->items.push_back(std::move(stack_[k]));
  }
  stack_.resize(from);
}

void PickleReader::memo_put(uint64_t index) {
  if (stack_.empty()) fail("a memo opcode with an empty stack");
  // Writers number memo slots from 0 as they go: an index past the bytes read is damage.
  if (index > in_.Tell() || index > 100'000'000) fail(detail::concat("memo index ", index, " is out of range"));
  if (index >= memo_.size()) memo_.resize(index + 1), memo_set_.resize(index + 1);
  memo_[index] = stack_.back();
  memo_set_[index] = true;
  if (stack_.back().obj) stack_.back().obj->memo_slot = static_cast<int64_t>(index);
}

const PickleValue& PickleReader::memo_get(uint64_t index) const {
  if (index >= memo_.size() || !memo_set_[index])
    fail(detail::concat("memo index ", index, " refers to nothing stored"));
  if (memo_[index].type == Type::None && memo_dropped_.count(index))
    fail(
        "the pickle refers back to an item of the streamed list already read (one item twice): not the form a "
        "flight-recorder dump has");
  return memo_[index];
}

// A little-endian two's-complement integer (LONG1 / LONG4) that must fit in 64 bits.
int64_t PickleReader::decode_long(const std::string& le) const {
  if (le.empty()) return 0;
  if (le.size() > 8) {
    // Wider encodings of a value that fits are allowed (sign extension bytes only).
    const uint8_t fill = (static_cast<uint8_t>(le[7]) & 0x80) ? 0xff : 0x00;
    for (size_t k = 8; k < le.size(); ++k)
      if (static_cast<uint8_t>(le[k]) != fill) fail("an integer wider than 64 bits");
  }
  const size_t n = std::min<size_t>(le.size(), 8);
  uint64_t v = 0;
  for (size_t k = 0; k < n; ++k)
    v |= static_cast<uint64_t>(static_cast<uint8_t>(le[k])) << (8 * k);
  if (n < 8 && (static_cast<uint8_t>(le[n - 1]) & 0x80)) v |= ~uint64_t{0} << (8 * n);
  return static_cast<int64_t>(v);
}

// A tuple of the values from `from` up, taken off the stack.
PickleValue PickleReader::tuple_of(size_t from) {
  PickleValue t = container(Type::Tuple);
  for (size_t k = from; k < stack_.size(); ++k) {
    if (is_container(stack_[k].type)) place(stack_[k], *t.obj);
    t.obj->items.push_back(std::move(stack_[k]));
  }
  stack_.resize(from);
  return t;
}

// The load_* run one opcode each (named as CPython's unpickler names them), those whose
// work does not fit on the line of its case in load_opcode().

void PickleReader::load_proto() {
  const uint8_t proto = byte();
  if (proto > 5) fail(detail::concat("pickle protocol ", int{proto}, " is newer than 5, the newest known"));
}

void PickleReader::load_dict() {  // DICT (protocol 0/1)
  const size_t from = pop_mark();
  PickleValue d = container(Type::Dict);
  stack_.insert(stack_.begin() + static_cast<std::ptrdiff_t>(from), d);
  set_items(from + 1);
}

void PickleReader::load_list() {
  const size_t from = pop_mark();
  stack_.insert(stack_.begin() + static_cast<std::ptrdiff_t>(from), container(Type::List));
  append_items(from + 1);
}

void PickleReader::load_small_tuple() {  // TUPLE1..3
  const size_t n = op_ - 0x84u;
  if (stack_.size() < n || (!marks_.empty() && stack_.size() - n < marks_.back()))
    fail("TUPLE takes values that are not there");
  push(tuple_of(stack_.size() - n));
}

void PickleReader::load_append() {
  if (stack_.size() < 2) fail("APPEND without a list and an item");
  append_items(stack_.size() - 1);
}

void PickleReader::load_setitem() {
  if (stack_.size() < 3) fail("SETITEM without a dictionary, a key and a value");
  set_items(stack_.size() - 2);
}

void PickleReader::load_long4() {
  const uint64_t n = uint_le(4);
  if (n > 64) fail("an integer wider than 64 bits");
  push(int_value(decode_long(bytes(n))));
}

// INT / LONG as text (protocol 0); I01 / I00 are True / False.
void PickleReader::load_text_int() {
  std::string s = line();
  if (op_ == 'L' && !s.empty() && s.back() == 'L') s.pop_back();
  if (op_ == 'I' && (s == "01" || s == "00")) {
    push(bool_value(s == "01"));
    return;
  }
  errno = 0;
  char* end = nullptr;
  const long long x = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || errno == ERANGE) fail("an integer that is not one, or wider than 64 bits");
  push(int_value(x));
}

void PickleReader::load_binfloat() {  // big-endian IEEE double
  uint64_t bits = 0;
  for (int k = 0; k < 8; ++k)
    bits = bits << 8 | byte();
  push(float_value(std::bit_cast<double>(bits)));
}

void PickleReader::load_float() {  // FLOAT as text (protocol 0)
  const std::string s = line();
  char* end = nullptr;
  const PickleValue v = float_value(std::strtod(s.c_str(), &end));
  if (s.empty() || *end != '\0') fail("FLOAT with a bad number");
  push(v);
}

void PickleReader::load_dup() {
  if (stack_.empty()) fail("DUP with an empty stack");
  push(stack_.back());
}

// An opcode plain data never uses, or no opcode at all.
void PickleReader::refuse_opcode() const {
  if (const char* what = opcode_name(op_))
    fail(detail::concat("the pickle asks for ", what,
                        ": only plain data (dict, list, tuple, str, bytes, int, float, bool, None) is read, "
                        "and nothing is imported or called"));
  fail(detail::concat("unknown pickle opcode 0x", "0123456789abcdef"[op_ >> 4], "0123456789abcdef"[op_ & 15],
                      " (not a pickle, or a damaged one)"));
}

// Runs op_, any opcode but STOP. One switch over every opcode, as before: the dispatch
// of each opcode costs one jump.
void PickleReader::load_opcode() {
  switch (op_) {
    case 0x80: load_proto(); break;  // PROTO
    case 0x95: uint_le(8); break;    // FRAME: a length hint only
    case '(':                        // MARK
      marks_.push_back(stack_.size());
      if (marks_.size() > static_cast<size_t>(kMaxDepth))
        fail(detail::concat("the pickle nests deeper than ", kMaxDepth, " levels"));
      break;
    case '}': push(container(Type::Dict)); break;
    case ']': {
      const bool stream = at_root_value_slot();
      push(container(Type::List));
      if (stream) stack_.back().obj->streamed = true;
      break;
    }
    case ')': push(container(Type::Tuple)); break;
    case 'd': load_dict(); break;
    case 'l': load_list(); break;                                        // LIST
    case 't': push(tuple_of(pop_mark())); break;                         // TUPLE
    case 0x85:                                                           // TUPLE1
    case 0x86:                                                           // TUPLE2
    case 0x87: load_small_tuple(); break;                                // TUPLE3
    case 'a': load_append(); break;                                      // APPEND
    case 'e': append_items(pop_mark()); break;                           // APPENDS
    case 's': load_setitem(); break;                                     // SETITEM
    case 'u': set_items(pop_mark()); break;                              // SETITEMS
    case 'q': memo_put(byte()); break;                                   // BINPUT
    case 'r': memo_put(uint_le(4)); break;                               // LONG_BINPUT
    case 0x94: memo_put(memo_.size()); break;                            // MEMOIZE
    case 'p': memo_put(text_index("PUT")); break;                        // PUT
    case 'h': push(memo_get(byte())); break;                             // BINGET
    case 'j': push(memo_get(uint_le(4))); break;                         // LONG_BINGET
    case 'g': push(memo_get(text_index("GET"))); break;                  // GET
    case 'J': push(int_value(static_cast<int32_t>(uint_le(4)))); break;  // BININT
    case 'K': push(int_value(byte())); break;                            // BININT1
    case 'M': push(int_value(static_cast<int64_t>(uint_le(2)))); break;  // BININT2
    case 0x8a: push(int_value(decode_long(bytes(byte())))); break;       // LONG1
    case 0x8b: load_long4(); break;                                      // LONG4
    case 'I':                                                            // INT
    case 'L': load_text_int(); break;                                    // LONG
    case 'G': load_binfloat(); break;                                    // BINFLOAT
    case 'F': load_float(); break;                                       // FLOAT
    case 'N': push(PickleValue{}); break;
    case 0x88:
    case 0x89: push(bool_value(op_ == 0x88)); break;
    case 'X': push(text_value(Type::Str, bytes(uint_le(4)))); break;     // BINUNICODE
    case 0x8c: push(text_value(Type::Str, bytes(byte()))); break;        // SHORT_BINUNICODE
    case 0x8d: push(text_value(Type::Str, bytes(uint_le(8)))); break;    // BINUNICODE8
    case 'V': push(text_value(Type::Str, line())); break;                // UNICODE (protocol 0)
    case 'U': push(text_value(Type::Str, bytes(byte()))); break;         // SHORT_BINSTRING
    case 'T': push(text_value(Type::Str, bytes(uint_le(4)))); break;     // BINSTRING
    case 'B': push(text_value(Type::Bytes, bytes(uint_le(4)))); break;   // BINBYTES
    case 'C': push(text_value(Type::Bytes, bytes(byte()))); break;       // SHORT_BINBYTES
    case 0x8e:                                                           // BINBYTES8
    case 0x96: push(text_value(Type::Bytes, bytes(uint_le(8)))); break;  // BYTEARRAY8
    case '0': pop(); break;                                              // POP
    case '1': stack_.resize(pop_mark()); break;                          // POP_MARK
    case '2': load_dup(); break;                                         // DUP
    default: refuse_opcode();
  }
}

PickleValue PickleReader::read() {
  for (;;) {
    op_at_ = in_.Tell();
    if (in_.at_end())
      fail(op_at_ == 0 ? "the file is empty" : "the pickle ends before its STOP (the file is truncated)");
    op_ = byte();
    if (op_ == '.') {  // STOP
      if (stack_.size() != 1 || !marks_.empty()) fail("STOP with other than one value left");
      return std::move(stack_.back());
    }
    load_opcode();
    if (stopped_) return PickleValue{};
    // A MARK is a floor, as Python's unpickler keeps it (a fresh stack per MARK): an opcode
    // that took items from below one is damage (APPEND there left the mark past the stack,
    // and the LIST after it built its list out of place).
    if (!marks_.empty() && marks_.back() > stack_.size())
      fail("an opcode took items from below its MARK (a damaged pickle)");
    // The first key of the root dictionary says what the file is.
    if (probe_ && marks_.size() == 1 && marks_[0] == 1 && stack_.size() == 2 && stack_[0].type == Type::Dict) {
      const PickleValue& key = stack_[1];
      if (key.type == Type::Str) {
        first_root_key_ = key.obj->text;
        return PickleValue{};
      }
    }
  }
}

}  // namespace ddpscope::probes
