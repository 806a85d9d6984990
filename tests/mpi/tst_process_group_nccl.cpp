// ProcessGroupNCCL on the GPU machine (world size 1 there): every op runs through NCCL
// on the group's stream, ordered after the kernels that produced its tensors. Without
// a usable GPU the test exits 77 (CTest SKIP) before touching MPI or NCCL.
#include <QtTest/QtTest>

#include <cstdio>

#include "c10d/process_group.h"
#include "tensor/cuda_runtime_facade.h"
#include "tensor/kernels.h"

using namespace ddpscope;
using namespace ddpscope::c10d;

class TestProcessGroupNccl : public QObject {
  Q_OBJECT
  std::shared_ptr<ProcessGroup> pg_;
  Device gpu_ = Device::cuda(0);

 private slots:
  void initTestCase() {
    pg_ = init_process_group({.backend = "nccl", .timeout = std::chrono::seconds(60)});
    QCOMPARE(pg_->backend_name(), std::string("nccl"));
  }

  void testAllreduceEveryDtype_data() {
    QTest::addColumn<QString>("dtype");
    for (const char* d : {"f32", "f64", "f16", "bf16", "i64"})
      QTest::newRow(d) << d;
  }
  void testAllreduceEveryDtype() {
    QFETCH(QString, dtype);
    const DType d = dtype_from_name(dtype.toStdString());
    Tensor t = Tensor::full({1000}, 3.0, d, gpu_);  // written by a kernel on the default stream
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min})
      pg_->allreduce(t, {.op = op})->wait();
    const double want = 3.0 * pg_->size();
    QCOMPARE(t.to(Device::cpu()).at<double>({999}), want);
  }

  void testRunsAfterTheProducerStream() {
    // A large fill right before the allreduce: without the event wait the collective
    // could read the buffer before the fill kernel ran.
    Tensor t = Tensor::zeros({1 << 24}, DType::F32, gpu_);
    kernels::fill(t, 2.0);
    pg_->allreduce(t)->wait();
    QCOMPARE(t.to(Device::cpu()).at<float>({(1 << 24) - 1}), 2.0f * pg_->size());
  }

  void testOtherOps() {
    Tensor b = Tensor::full({8}, 5.0, DType::F32, gpu_);
    pg_->broadcast(b)->wait();
    QCOMPARE(b.to(Device::cpu()).at<float>({7}), 5.0f);
    std::vector<Tensor> outs(pg_->size(), Tensor()), ins(pg_->size(), Tensor());
    for (int r = 0; r < pg_->size(); ++r) {
      outs[r] = Tensor::zeros({4}, DType::F32, gpu_);
      ins[r] = Tensor::full({4}, 1.0 + r, DType::F32, gpu_);
    }
    pg_->allgather(outs, b.narrow(0, 0, 4).contiguous())->wait();
    QCOMPARE(outs[0].to(Device::cpu()).at<float>({0}), 5.0f);
    Tensor rs = Tensor::zeros({4}, DType::F32, gpu_);
    pg_->reduce_scatter(rs, ins)->wait();
    QCOMPARE(rs.to(Device::cpu()).at<float>({0}), float((1.0 + pg_->rank()) * pg_->size()));
    pg_->alltoall(outs, ins)->wait();
    QCOMPARE(outs[0].to(Device::cpu()).at<float>({0}), float(1.0 + pg_->rank()));
    Tensor a = Tensor::ones({3}, DType::F32, gpu_), c = Tensor::ones({5}, DType::F32, gpu_);
    pg_->allreduce_coalesced({a, c})->wait();
    QCOMPARE(c.to(Device::cpu()).at<float>({4}), float(pg_->size()));
    Tensor d = Tensor::full({6}, 10.0 + pg_->rank(), DType::F32, gpu_);
    Tensor e = Tensor::full({2}, 20.0 + pg_->rank(), DType::F32, gpu_);
    const int last = pg_->size() - 1;
    pg_->broadcast_coalesced({d, e}, {0, last})->wait();
    QCOMPARE(d.to(Device::cpu()).at<float>({5}), 10.0f);
    QCOMPARE(e.to(Device::cpu()).at<float>({1}), 20.0f + last);
    pg_->barrier()->wait();
  }

  void testCpuTensorIsRefused() {
    try {
      pg_->allreduce(Tensor::ones({2}));
      QFAIL("a CPU tensor must be refused");
    } catch (const Error& e) {
      QVERIFY2(QString(e.what()).contains("mpi backend for CPU tensors"), e.what());
    }
  }

  void cleanupTestCase() { pg_.reset(); }
};

int main(int argc, char** argv) {
  if (!cuda::available()) {
    std::printf("SKIP: no usable CUDA device for the NCCL backend\n");
    return 77;
  }
  QCoreApplication app(argc, argv);
  TestProcessGroupNccl test;
  return QTest::qExec(&test, argc, argv);
}

#include "tst_process_group_nccl.moc"
