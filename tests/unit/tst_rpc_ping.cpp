// rpc-ping: a user's check of a cluster's RPC path prints figures (on the transport
// --rpc-transport chose) and records every
// message of the job, both ends joined, and the agents' counters.
#include <QtTest/QtTest>

#include "launcher_fixture.h"
#include "test_registry.h"

using namespace ddpscope::testing::launcher_fixture;

class TestRpcPing : public LauncherTest {
  Q_OBJECT

 private slots:

  // rpc-ping: a user's check of a cluster's RPC path prints figures and records every
  // message of the job, both ends joined, and the agents' counters.
  void testRpcPingMeasuresAndRecords() {
    QTemporaryDir dir;
    const QString out = dir.filePath("ping.ddpscope");
    Result r = run({"rpc-ping", "--np", "3", "--calls", "50", "--bytes", "65536", "--json", "--out", out});
    QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
    QJsonObject result;
    for (const QString& line : r.out.split('\n'))
      if (line.startsWith('{')) result = QJsonDocument::fromJson(line.toUtf8()).object();
    QCOMPARE(result["workers"].toInt(), 3);
    QCOMPARE(result["transport"].toString(), QString("shm"));  // the default
    QVERIFY2(result["median_round_trip_us"].toDouble() > 0, qPrintable(r.out));
    QVERIFY2(result["throughput_mb_s"].toDouble() > 0, qPrintable(r.out));
    QCOMPARE(result["peers"].toArray().size(), 2);  // worker0 pings worker1 and worker2

    ddpscope::probes::RunStoreReader run_file(out.toStdString());
    int adds = 0;
    for (const auto& m : run_file.messages()) {
      if (m.kind != "call" || m.name != "add") continue;
      ++adds;
      QCOMPARE(m.src_rank, 0);
      // Both ends joined. The ranks' clocks are aligned by measured offsets, which err by
      // some microseconds on a busy machine, so a fast message may seem to arrive a
      // little before it left; not by a millisecond.
      QVERIFY(m.t_send_ns > 0 && m.t_recv_ns > 0);
      QVERIFY2(m.t_recv_ns - m.t_send_ns > -1000000,
               qPrintable(QString("received %1 ns before it was sent").arg(m.t_send_ns - m.t_recv_ns)));
    }
    QVERIFY2(adds >= 2 * 50, qPrintable(QString::number(adds)));  // every timed call, joined
    for (int rank = 0; rank < 3; ++rank) {
      const auto sent = run_file.metrics("rpc.messages_sent", rank);
      QVERIFY2(sent.size() == 1 && sent[0].value > 0, qPrintable(QString("rank %1").arg(rank)));
      const auto rejected = run_file.metrics("rpc.rejected_token", rank);
      QVERIFY(rejected.size() == 1 && rejected[0].value == 0);
    }
  }

  // --rpc-transport chooses every worker's transport; another name is refused naming them.
  void testTheTransportIsChosenByOption() {
    Result r = run({"rpc-ping", "--np", "2", "--calls", "20", "--bytes", "4096", "--json", "--rpc-transport", "tcp"});
    QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
    QVERIFY2(r.out.contains("\"transport\":\"tcp\""), qPrintable(r.out));
    r = run({"rpc-ping", "--np", "2", "--rpc-transport", "pigeon"});
    QVERIFY(r.code != 0);
    QVERIFY2(r.err.contains("--rpc-transport") && r.err.contains("zmq"), qPrintable(r.err));
  }
};

DDPSCOPE_TEST_GUILESS_MAIN(TestRpcPing)
#include "tst_rpc_ping.moc"
