import { describe, expect, it } from "vitest";
import { Better, Sample } from "../api/gen/tlbfleet/v1/common";
import { csvEscape, formatDoubleLikeCpp, resultsCsv } from "./csv";

// Expected strings printed by std::to_chars(double) from libstdc++ (g++ 12, Debian 12).
describe("formatDoubleLikeCpp (std::to_chars shortest)", () => {
  it.each([
    [0, "0"],
    [1, "1"],
    [-2.5, "-2.5"],
    [0.1, "0.1"],
    [1234.5678, "1234.5678"],
    [4900.123456789, "4900.123456789"],
    [100000000, "1e+08"], // 5 chars beat 9
    [123456789, "123456789"],
    [1e21, "1e+21"],
    [1.5e-7, "1.5e-07"],
    [0.0001, "1e-04"], // 5 characters beat 0.0001's 6
    [-0, "-0"],
    [0.0001 * 3, "0.00030000000000000003"],
    [0.00012, "0.00012"],
    [1e-5, "1e-05"],
    [120000, "120000"],
    [1200000, "1200000"],
    [12000000, "1.2e+07"],
    [Number.NaN, "nan"],
    [Number.POSITIVE_INFINITY, "inf"],
  ])("%s -> %s", (value, text) => {
    expect(formatDoubleLikeCpp(value)).toBe(text);
  });
});

describe("results CSV", () => {
  it("quotes only what needs it", () => {
    expect(csvEscape("plain")).toBe("plain");
    expect(csvEscape('a,"b"')).toBe('"a,""b"""');
    expect(csvEscape("line\nbreak")).toBe('"line\nbreak"');
  });

  it("has the CLI's header and columns", () => {
    const s = Sample.fromJSON({
      runId: "7",
      jobId: "31",
      arm: "mmap",
      paramName: "threads",
      paramValue: "2",
      iteration: 3,
      metric: "records_per_sec",
      value: 4900.5,
      unit: "records/s",
      better: "BETTER_HIGHER",
      host: "lab1",
      bootId: "b-1",
      kernelRelease: "6.1.0-28-amd64",
      ceilingApplied: true,
      ceiling: "33",
      agentId: "0d60fd02-aaaa",
      machineId: "4c4c4544",
      slot: 1,
    });
    const unset = {
      ...s,
      better: Better.BETTER_UNSPECIFIED,
      ceilingApplied: false,
      series: "thread,0",
    };
    // No ceiling set, but the agent read it throughout the workload; a netperf peer.
    const observed = {
      ...unset,
      series: "",
      ceilingObserved: true,
      ceiling: 512,
      peerHost: "lab2",
    };
    // Kept for the record, left out of comparisons: the reason has a comma, so it is quoted.
    const excluded = {
      ...s,
      slot: 0,
      machineId: "",
      excluded: "slot 0 restarted: lab1 (agent 0d60fd02) was lost, silent since 01:12:36 UTC",
    };
    expect(resultsCsv([s, unset, observed, excluded])).toBe(
      "run_id,job_id,arm,param_name,param_value,iteration,metric,series,value,unit,better,host,boot_id,kernel_release,ceiling_applied,ceiling,ceiling_observed,peer_host,agent_id,machine_id,slot,excluded\n" +
        "7,31,mmap,threads,2,3,records_per_sec,,4900.5,records/s,higher,lab1,b-1,6.1.0-28-amd64,true,33,false,,0d60fd02-aaaa,4c4c4544,1,\n" +
        '7,31,mmap,threads,2,3,records_per_sec,"thread,0",4900.5,records/s,,lab1,b-1,6.1.0-28-amd64,false,,false,,0d60fd02-aaaa,4c4c4544,1,\n' +
        "7,31,mmap,threads,2,3,records_per_sec,,4900.5,records/s,,lab1,b-1,6.1.0-28-amd64,false,512,true,lab2,0d60fd02-aaaa,4c4c4544,1,\n" +
        '7,31,mmap,threads,2,3,records_per_sec,,4900.5,records/s,higher,lab1,b-1,6.1.0-28-amd64,true,33,false,,0d60fd02-aaaa,,0,"slot 0 restarted: lab1 (agent 0d60fd02) was lost, silent since 01:12:36 UTC"\n',
    );
  });
});
