// Reading a foreign file through GzStream: a plain file and its gzip read alike, byte by
// byte and in blocks, with the offset told; what is not a regular file, damaged data, a
// gzip bomb (in any reader: a flight dump's too) and a cancelled read are refused with errors
// naming the file.
#include <QtTest/QtTest>

#include <sys/stat.h>
#include <zlib.h>
#include <string>

#include "flight_records.h"
#include "gz_stream.h"
#include "scratch_test.h"
#include "test_registry.h"

using namespace ddpscope::probes;

namespace {

// 3 MB of lines that do not repeat exactly: three of GzStream's 1 MiB chunks.
std::string sample_text() {
  std::string s;
  for (int i = 0; s.size() < (3u << 20); ++i)
    s += "{\"ph\":\"X\",\"name\":\"op" + std::to_string(i * 7919 % 100003) + "\",\"ts\":" + std::to_string(i) + "}\n";
  return s;
}

void write_plain(const std::string& path, const std::string& data) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  std::fwrite(data.data(), 1, data.size(), f);
  std::fclose(f);
}

void write_gz(const std::string& path, const std::string& data, const char* mode = "wb6") {
  gzFile f = gzopen(path.c_str(), mode);
  for (size_t at = 0; at < data.size(); at += 1 << 20)
    gzwrite(f, data.data() + at, static_cast<unsigned>(std::min<size_t>(1 << 20, data.size() - at)));
  gzclose(f);
}

std::string read_all(GzStream& in) {
  std::string out;
  while (!in.at_end())
    out += in.Take();
  return out;
}

QString refusal(const std::function<void()>& f) {
  try {
    f();
  } catch (const TraceFileError& e) {
    return QString::fromStdString(e.message());
  }
  return QString();
}

}  // namespace

class TestGzStream : public ScratchTest {
  Q_OBJECT

 private slots:
  void testAPlainFileAndItsGzipReadAlike() {
    const std::string text = sample_text();
    write_plain(path("trace.json"), text);
    write_gz(path("trace.json.gz"), text);
    GzStream plain(path("trace.json"), "trace file");
    GzStream gz(path("trace.json.gz"), "trace file");
    QCOMPARE(plain.Peek(), '{');
    QVERIFY(read_all(plain) == text);
    QCOMPARE(plain.Tell(), text.size());
    // Blocks across the chunk boundaries, then the rest byte by byte.
    std::string head(1500000, '\0');
    QVERIFY(gz.read(head.data(), head.size()));
    QCOMPARE(gz.Tell(), head.size());
    QVERIFY((head + read_all(gz)) == text);
    char more = 0;
    QVERIFY(!gz.read(&more, 1));  // past the end: false
  }

  void testWhatIsNotARegularFileIsRefused() {
    QVERIFY(refusal([&] { GzStream s(path("missing.json"), "trace file"); }).contains("no such file"));
    const QString folder = refusal([&] { GzStream s(path(""), "trace file"); });
    QVERIFY2(folder.contains("is a folder, not a trace file"), qPrintable(folder));
    const std::string fifo = path("pipe");
    QCOMPARE(::mkfifo(fifo.c_str(), 0600), 0);
    const QString pipe = refusal([&] { GzStream s(fifo, "flight-recorder dump"); });
    QVERIFY2(pipe.contains("is not a regular file") && pipe.contains("not a flight-recorder dump"), qPrintable(pipe));
  }

  void testDamagedDataNamesTheFileAndTheByte() {
    const std::string file = path("damaged.json.gz");
    write_gz(file, sample_text());
    std::FILE* f = std::fopen(file.c_str(), "r+b");
    std::fseek(f, 0, SEEK_END);
    const long size = std::ftell(f);
    for (long at = size / 2; at < size / 2 + 64; ++at) {
      std::fseek(f, at, SEEK_SET);
      std::fputc(0x55, f);
    }
    std::fclose(f);
    const QString why = refusal([&] {
      GzStream s(file, "trace file");
      read_all(s);
    });
    QVERIFY2(why.contains("damaged.json.gz' is damaged") && why.contains("at byte"), qPrintable(why));
  }

  // The flight-recorder dump reader has the same limit (issue 68: a 2 MB .json.gz holding one
  // 2 GiB string took hang to 2.2 GB before it refused; at 10 GiB it died): one string of
  // 200 MiB in a dump is refused as a bomb at 64 MiB, naming the dump.
  void testAFlightDumpBombIsRefused() {
    const std::string file = path("nccl_trace_rank_0.json.gz");
    write_gz(file,
             R"({"version":"2.4","pg_config":{},"entries":[{"record_id":0,"profiling_name":")" +
                 std::string(200u << 20, 'a') + R"("}]})",
             "wb1");
    QString why;
    try {
      read_flight_dump(file);
    } catch (const ddpscope::Error& e) {
      why = QString::fromStdString(e.message());
    }
    QVERIFY2(why.contains("inflates to more than 64 times") && why.contains("gzip bomb, not a flight-recorder dump"),
             qPrintable(why));
  }

  void testAGzipBombIsRefused() {
    const std::string file = path("bomb.json.gz");
    write_gz(file, std::string(80u << 20, ' '), "wb1");
    const QString why = refusal([&] {
      GzStream s(file, "trace file");  // every reader has the limit
      std::string block(1 << 20, '\0');
      while (s.read(block.data(), block.size())) {
      }
    });
    QVERIFY2(why.contains("inflates to more than 64 times") && why.contains("gzip bomb, not a trace file"),
             qPrintable(why));
    // Without a limit the same file reads to its end.
    GzStream s(file, "trace file");
    s.limit_inflation(0);
    std::string block(1 << 20, '\0');
    size_t total = 0;
    while (s.read(block.data(), block.size()))
      total += block.size();
    QCOMPARE(total, size_t{80u << 20});
  }

  void testProgressIsToldAndCanCancel() {
    write_plain(path("big.json"), sample_text());
    std::vector<double> seen;
    {
      GzStream s(path("big.json"), "trace file", [&](double f) {
        seen.push_back(f);
        return true;
      });
      read_all(s);
    }
    QVERIFY(seen.size() >= 3);
    QVERIFY(std::is_sorted(seen.begin(), seen.end()));
    QCOMPARE(seen.back(), 1.0);
    const QString why = refusal([&] { GzStream s(path("big.json"), "trace file", [](double) { return false; }); });
    QVERIFY2(why.contains("was cancelled"), qPrintable(why));
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestGzStream)
#include "tst_gz_stream.moc"
