// Imported spans' arguments packed per span pack: each span's back as written, none where
// it had none; a damaged blob is refused with a message, never read past its end.
#include <QtTest/QtTest>

#include "span_fixtures.h"
#include "test_registry.h"

using namespace ddpscope;
using namespace ddpscope::probes;
using namespace ddpscope::probes::span_fixtures;

class TestArgsPack : public ScratchTest {
  Q_OBJECT
 private slots:

  // Imported spans' arguments: each span's back as written, none where it had none; a
  // damaged blob is refused with a message, never read past its end.
  void testArgumentPacksRoundTripAndRefuseDamage() {
    const std::string grid = R"({"grid":[1,1,1],"block":[128,1,1],"stream":7})", dims = R"({"Input Dims":[[4,8]]})";
    const std::string packed = encode_args_pack({&grid, nullptr, &dims});
    QCOMPARE(args_in_pack(packed.data(), packed.size(), 0), grid);
    QCOMPARE(args_in_pack(packed.data(), packed.size(), 1), std::string());
    QCOMPARE(args_in_pack(packed.data(), packed.size(), 2), dims);
    QCOMPARE(args_in_pack(packed.data(), packed.size(), 3), std::string());
    std::string cut = packed.substr(0, packed.size() / 2);
    QVERIFY_THROWS_EXCEPTION(ddpscope::Error, args_in_pack(cut.data(), cut.size(), 0));
    const std::string junk = "not zstd at all";
    QVERIFY_THROWS_EXCEPTION(ddpscope::Error, args_in_pack(junk.data(), junk.size(), 0));
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestArgsPack)
#include "tst_args_pack.moc"
