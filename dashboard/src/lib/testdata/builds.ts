// A run in its build stage as the controller's HTTP/JSON API gives it (proto3 JSON: lowerCamelCase,
// int64 as strings, defaults left out): two kernel arms, one built, one building on a builder.
export const COMMIT_BASE = "0f1e2d3c4b5a69788796a5b4c3d2e1f00112233a";
export const COMMIT_TIP = "a1b2c3d4e5f60718293a4b5c6d7e8f9001122334";
export const BUILD_ID_BASE = "5e1f0c7a9b3d2e4f60718293a4b5c6d7e8f90011";

export const BUILDING_RUN_JSON = {
  id: "7",
  state: "RUN_STATE_RUNNING",
  spec: {
    name: "tlb-fix",
    benchmark: "ebizzy",
    arms: [
      { name: "base", bootEntry: "kernel-b11", kernel: { source: "linux", rev: "lab-base" } },
      {
        name: "fix",
        bootEntry: "kernel-b12",
        kernel: { source: "linux", rev: "lab-tip", config: "lab", revert: COMMIT_BASE },
      },
    ],
  },
  jobs: { total: 20, queued: 20 },
  createdUnix: "1768439556",
  iterationsPerBoot: 5,
  boots: 2,
  builds: [
    {
      taskId: "11",
      arm: "base",
      kernel: { source: "linux", rev: "lab-base", config: "lab" },
      state: "succeeded",
      commit: COMMIT_BASE,
      subject: "mm: lab base",
      author: "Lab <lab@example.com>",
      builder: "vm-builder",
      artifactId: "art-11",
      buildId: BUILD_ID_BASE,
      kernelRelease: "6.8.0-lab+",
      bootEntry: "kernel-b11",
      logLines: "3",
      logTail: ["  CC mm/memory.o", "  LD vmlinux", "Kernel: arch/x86/boot/bzImage is ready"],
      startedUnixMs: "1768439560000",
      finishedUnixMs: "1768439590000",
      reused: true,
    },
    {
      taskId: "12",
      arm: "fix",
      kernel: { source: "linux", rev: "lab-tip", config: "lab", revert: COMMIT_BASE },
      state: "building",
      commit: COMMIT_TIP,
      subject: "x86/mm: flush fewer pages",
      builder: "vm-builder",
      bootEntry: "kernel-b12",
      logLines: "1204",
      logTail: ["  CC kernel/fork.o", "  CC kernel/exit.o"],
      startedUnixMs: "1768439600000",
    },
  ],
};
