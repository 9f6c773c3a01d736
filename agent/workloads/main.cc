// tlbfleet-bench: every workload as a standalone tool. See bench_cli.h.
#include "agent/workloads/bench_cli.h"
#include "agent/workloads/workload.h"

int main(int argc, char** argv) {
  tlbfleet::workloads::LinkAllWorkloads();
  return tlbfleet::workloads::BenchMain(argc, argv);
}
