// The digits loader: a gzip CSV the test writes reads back as features scaled to [0, 1]
// and labels; a short row is named, a missing file refused.
#include <QtTest/QtTest>

#include <zlib.h>
#include <QTemporaryDir>
#include <cstdio>

#include "nn/datasets.h"
#include "test_registry.h"

using namespace ddpscope;

class TestDatasets : public QObject {
  Q_OBJECT
 private slots:

  void testDigitsLoaderOnWrittenFile() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("digits.csv.gz").toStdString();
    gzFile f = gzopen(path.c_str(), "wb");
    for (int row = 0; row < 3; ++row) {
      std::string line;
      for (int i = 0; i < 64; ++i)
        line += std::to_string((i + row) % 17) + ",";
      line += std::to_string(row) + "\n";
      gzputs(f, line.c_str());
    }
    gzclose(f);
    nn::Dataset d = nn::load_digits(path);
    QCOMPARE(d.x.sizes(), (Shape{3, 64}));
    QCOMPARE(d.y.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2}));
    QCOMPARE(d.x.at<float>({1, 15}), 16.0f / 16.0f);  // (15 + 1) % 17 = 16 -> 1.0

    const std::string bad = dir.filePath("bad.csv").toStdString();
    std::FILE* b = std::fopen(bad.c_str(), "w");
    std::fputs("1,2,3\n", b);
    std::fclose(b);
    try {
      nn::load_digits(bad);
      QFAIL("a short row must be refused");
    } catch (const Error& e) {
      QVERIFY2(QString(e.what()).contains("row 1 has 3 values"), e.what());
    }
    QVERIFY_THROWS_EXCEPTION(Error, nn::load_digits(dir.filePath("missing.csv").toStdString()));
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestDatasets)
#include "tst_datasets.moc"
