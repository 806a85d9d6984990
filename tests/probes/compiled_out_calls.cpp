// Every probe macro, in a file built with DDPSCOPE_PROBES_COMPILED_OUT: they must
// compile (named spans keep their args()/end()) and record nothing.
#include <string>

#include "probe.h"

namespace ddpscope::probes::testing {

int record_with_probes_compiled_out() {
  int work = 0;
  {
    DDPSCOPE_SPAN(span, Kind::Forward, "compiled_out_span");
    span.args().bytes = 1;
    DDPSCOPE_SPAN_DYNAMIC(dynamic, Kind::AutogradNode, std::string("compiled_out_dynamic"));
    dynamic.end();
    DDPSCOPE_INSTANT(Kind::Mark, "compiled_out_instant", {.param = 1});
    DDPSCOPE_RECORD(Kind::Allreduce, "compiled_out_record", 1, 2, {.bucket = 0});
    ++work;
  }
  return work;
}

}  // namespace ddpscope::probes::testing
