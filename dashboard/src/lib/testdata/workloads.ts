// A workload catalogue shaped as GET /api/v1/workloads answers it (JSON mapping), decoded by
// the generated code: ebizzy and netperf as agent/workloads declares them (abridged).
import {
  ListWorkloadsResponse,
  type MonitorSchema,
  type WorkloadSchema,
} from "../../api/gen/tlbfleet/v1/fleet";

export const WORKLOADS: WorkloadSchema[] = ListWorkloadsResponse.fromJSON({
  workloads: [
    {
      name: "ebizzy",
      description: "memory allocation and copy throughput",
      parameters: [
        {
          name: "threads",
          type: "TYPE_INT",
          defaultValue: "2",
          min: "1",
          max: "4096",
          help: "worker threads",
        },
        {
          name: "seconds",
          type: "TYPE_INT",
          defaultValue: "10",
          min: "1",
          max: "3600",
          help: "duration (s)",
        },
        { name: "mmap", type: "TYPE_ENUM", defaultValue: "always", choices: ["always", "never"] },
        { name: "random_size", type: "TYPE_BOOL", defaultValue: "false" },
      ],
      metrics: [{ name: "records_per_sec", unit: "records/s", better: "BETTER_HIGHER" }],
      primaryMetric: "records_per_sec",
      presets: [
        {
          ref: "tlbflush-performance/ebizzy",
          name: "ebizzy",
          specYaml: "name: ebizzy\nbenchmark: ebizzy\narms: [{name: baseline}]\n",
        },
      ],
    },
    {
      name: "netperf",
      parameters: [
        { name: "server", type: "TYPE_STRING", defaultValue: "" },
        { name: "port", type: "TYPE_INT", defaultValue: "0", min: "0", max: "65535" },
        { name: "entries", type: "TYPE_INT", defaultValue: "1", min: "1", max: "4096" },
      ],
    },
  ],
}).workloads;

/** The catalogue's monitors, as the same response lists them. */
export const MONITORS: MonitorSchema[] = ListWorkloadsResponse.fromJSON({
  monitors: [
    { name: "flush_profile", help: "TLB flushes by reason and size (tlb:tlb_flush)" },
    { name: "interrupts", help: "TLB shootdown interrupts (/proc/interrupts)" },
    { name: "vmstat", help: "/proc/vmstat counters" },
    { name: "perf", help: "hardware counters (perf_event_open)" },
  ],
}).monitors;
