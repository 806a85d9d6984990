// The colour of each span kind, shared by the timeline, its legend and the time
// breakdown, so a colour means the same thing in every view.
#pragma once

#include <QColor>
#include <QString>

#include "event.h"

namespace ddpscope::gui {

inline QColor kindColor(probes::Kind kind) {
  using probes::Kind;
  switch (kind) {
    case Kind::Iteration: return QColor(0xc8, 0xc8, 0xc8);
    case Kind::Forward: return QColor(0x4c, 0x78, 0xa8);
    case Kind::Backward: return QColor(0xf5, 0x85, 0x18);
    case Kind::Optimizer: return QColor(0xb2, 0x79, 0xa2);
    case Kind::AutogradNode: return QColor(0xff, 0xbf, 0x79);
    case Kind::BucketCopy: return QColor(0x9d, 0x75, 0x5d);
    // Bluish green (Okabe-Ito): the Tableau green it replaces folded into finalize's red
    // in deuteranopia (tst_category_palette).
    case Kind::Allreduce: return QColor(0x00, 0x9e, 0x73);
    case Kind::CommHook: return QColor(0x8c, 0xd1, 0x7d);
    case Kind::Finalize: return QColor(0xe1, 0x57, 0x59);
    case Kind::PgOp: return QColor(0x76, 0xb7, 0xb2);
    case Kind::RpcSend:
    case Kind::RpcRecv: return QColor(0x9e, 0xca, 0xe9);
    case Kind::RpcCall: return QColor(0x6b, 0xae, 0xd6);
    case Kind::DistBackward: return QColor(0xed, 0xc9, 0x48);
    // Imported GPU work: computation kernels blue-violet, NCCL kernels the communication
    // green of bucket allreduces (darker), copies and sets yellow and tan, launches pale.
    case Kind::GpuKernel: return QColor(0x7b, 0x6f, 0xc9);
    case Kind::GpuComm: return QColor(0x2e, 0x7d, 0x32);
    case Kind::GpuMemcpy: return QColor(0xe8, 0xc5, 0x47);
    case Kind::GpuMemset: return QColor(0xc9, 0xa2, 0x6b);
    case Kind::CudaRuntime: return QColor(0xc6, 0xb8, 0xe6);
    // ZeRO's post-step broadcasts: communication, a teal apart from the bucket green.
    case Kind::ParamSync: return QColor(0x1f, 0x9e, 0x89);
    case Kind::RingStep: return QColor(0x9c, 0x75, 0x5f);
    case Kind::LinkTest: return QColor(0x5f, 0x8d, 0x9c);
    default: return QColor(0xba, 0xb0, 0xac);
  }
}

// The legend's words for a kind ("bucket allreduce" rather than "allreduce").
inline QString kindLabel(probes::Kind kind) {
  using probes::Kind;
  switch (kind) {
    case Kind::Allreduce: return QStringLiteral("bucket allreduce");
    case Kind::PgOp: return QStringLiteral("process-group op");
    case Kind::AutogradNode: return QStringLiteral("autograd node");
    case Kind::BucketCopy: return QStringLiteral("copy into bucket");
    case Kind::CommHook: return QStringLiteral("comm hook");
    case Kind::Finalize: return QStringLiteral("finalize (wait, write back)");
    case Kind::DistBackward: return QStringLiteral("distributed backward");
    case Kind::GpuKernel: return QStringLiteral("GPU kernel");
    case Kind::GpuComm: return QStringLiteral("GPU NCCL kernel");
    case Kind::GpuMemcpy: return QStringLiteral("GPU memcpy");
    case Kind::GpuMemset: return QStringLiteral("GPU memset");
    case Kind::CudaRuntime: return QStringLiteral("CUDA launch");
    case Kind::CpuOp: return QStringLiteral("CPU op");
    case Kind::ParamSync: return QStringLiteral("ZeRO parameter broadcast");
    case Kind::RingStep: return QStringLiteral("ring allreduce step");
    case Kind::LinkTest: return QStringLiteral("link test (--measure-links)");
    case Kind::CollectiveFailed: return QStringLiteral("collective failed");
    default: return QString::fromLatin1(probes::kind_name(kind)).replace('_', ' ');
  }
}

// Instants drawn as a red line across their lane with a label: marks, and a collective's
// failure.
inline bool isMarkKind(probes::Kind kind) {
  return kind == probes::Kind::Mark || kind == probes::Kind::CollectiveFailed;
}

// Kinds drawn as spans (instants are ticks and marks, not legend swatches).
inline bool kindIsSpan(probes::Kind kind) {
  using probes::Kind;
  switch (kind) {
    case Kind::GradReady:
    case Kind::BucketReady:
    case Kind::Mark:
    case Kind::CollectiveFailed:
    case Kind::PgOpStart:
    case Kind::RRef:
    case Kind::DistContext:
    case Kind::DistFunction:
    case Kind::Dependency: return false;
    default: return true;
  }
}

}  // namespace ddpscope::gui
