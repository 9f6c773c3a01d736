// The dashboard's run page for a finished run of 10,000 samples (issue 24: goal < 1 s in
// Chromium), against the same page for a run of 100 samples, loaded alternately with it, as the
// reference. A benchmark, not a test: it prints figures and never fails on a time. The figures
// in docs/performance.md come from the command below on a quiet machine (from any directory).
//
//   cmake --build build --target tlbfleet-controller store_scale dashboard
//   node tests/perf/dashboard_run_page.mjs [--repetitions 7]
//
// What it does: `store_scale --seed` writes a new controller database in a temporary directory
// (the store's own migrations, rows in the controller's layout) holding two finished ebizzy runs
// of two arms × threads {1, 2, 4, 8, 16}: run 1 with 100 iterations of 10 samples per job (two
// aggregate metrics and eight per-thread series: 10,000 samples), run 2 with 5 iterations of 2
// (100 samples). A real tlbfleet-controller serves that database and the built dashboard on
// loopback (port 0, development mode: no token). Debian's Chromium (headless, the browser
// tests' flags: dashboard/tests/browser/harness.mjs) loads /runs/1 and /runs/2 alternately,
// each load in a fresh browser context (empty cache, the bundle fetched again), after one
// unrecorded warm-up load of each. Everything it started is stopped and the temporary
// directory removed, on an error too.
//
// A load's time runs from navigation start (the document's time origin) until the page has
// drawn the run's results: the comparison tables (`[data-testid^="table-"]`) in the DOM and a
// canvas in every chart (uPlot, created in an effect after the tables' commit), then the next
// frame (requestAnimationFrame, then a task: the frame with the results has been painted).
// A script added before the page's own watches the DOM and notes the time. It also prints,
// as medians, when each request ended (Resource Timing) so a slow load shows where it went.
//
// Flags: --repetitions N (7), --large ITERATIONSxSAMPLES_PER_JOB (100x10), --reference
// ITERATIONSxSAMPLES_PER_JOB (5x2), --store-scale PATH (build/tests/store_scale), --timeout-ms
// per load (60000). TLBFLEET_BIN_DIR, TLBFLEET_DASHBOARD_DIST and TLBFLEET_CHROMIUM as for the
// browser tests. Exit 0 when measured, 1 on an error, 77 when something is not built.
import { execFile, spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs, promisify } from "node:util";
import {
  binDir,
  distDir,
  launchBrowser,
  newPage,
  SKIP,
  waitFor,
} from "../../dashboard/tests/browser/harness.mjs";

const run = promisify(execFile);

const { values: flags } = parseArgs({
  options: {
    repetitions: { type: "string", default: "7" },
    large: { type: "string", default: "100x10" },
    reference: { type: "string", default: "5x2" },
    "store-scale": { type: "string", default: resolve(binDir, "..", "tests", "store_scale") },
    "timeout-ms": { type: "string", default: "60000" },
  },
});
const repetitions = Number(flags.repetitions);
const timeoutMs = Number(flags["timeout-ms"]);
if (!(repetitions >= 1) || !(timeoutMs > 0)) {
  console.error("dashboard_run_page: --repetitions and --timeout-ms must be positive numbers");
  process.exit(2);
}

/** Samples of a seeded run: two arms × five `threads` values × iterations × samples per job. */
function samplesOf(layout) {
  const m = /^(\d+)x(\d+)$/.exec(layout);
  if (!m) {
    console.error(`dashboard_run_page: ${layout}: want ITERATIONSxSAMPLES_PER_JOB, e.g. 100x10`);
    process.exit(2);
  }
  return 2 * 5 * Number(m[1]) * Number(m[2]);
}

const controllerBin = join(binDir, "tlbfleet-controller");
for (const [what, path] of [
  ["the controller", controllerBin],
  ["store_scale", flags["store-scale"]],
  ["the dashboard", join(distDir, "index.html")],
]) {
  if (!existsSync(path)) {
    console.log(`SKIP: ${what} is not built (${path})`);
    process.exit(SKIP);
  }
}

/**
 * Runs in every page before the dashboard's own script: notes when the results are drawn
 * (`rendered`) and when the frame after that has been painted (`painted`), in ms since
 * navigation start.
 */
function renderProbe() {
  const drawn = () => {
    if (document.querySelector('[data-testid^="table-"]') === null) return false;
    const charts = document.querySelectorAll("figure.chart");
    return [...charts].every((c) => c.querySelector("canvas") !== null);
  };
  const probe = { rendered: undefined, painted: undefined };
  window.__tlbfleetRunPage = probe;
  const observer = new MutationObserver(() => {
    if (probe.rendered !== undefined || !drawn()) return;
    probe.rendered = performance.now();
    observer.disconnect();
    requestAnimationFrame(() => {
      const channel = new MessageChannel();
      channel.port1.onmessage = () => (probe.painted = performance.now());
      channel.port2.postMessage(null);
    });
  });
  observer.observe(document, { childList: true, subtree: true });
}

/** One load of `url` in a fresh context: the probe's times, each request's end, the DOM's size. */
async function loadOnce(browser, url) {
  const { context, page } = await newPage(browser);
  const failed = [];
  page.on("response", (r) => {
    if (r.status() >= 400) failed.push(`${r.status()} ${new URL(r.url()).pathname}`);
  });
  try {
    await context.addInitScript(renderProbe);
    await page.goto(url, { waitUntil: "commit", timeout: timeoutMs });
    const probe = await page
      .waitForFunction(() => window.__tlbfleetRunPage?.painted !== undefined, null, {
        timeout: timeoutMs,
      })
      .then(() => page.evaluate(() => window.__tlbfleetRunPage));
    const detail = await page.evaluate(() => {
      const nav = performance.getEntriesByType("navigation")[0];
      const requests = { "GET the document": nav.responseEnd };
      for (const r of performance.getEntriesByType("resource")) {
        const u = new URL(r.name);
        // One key per kind of request, the same for both runs: "GET /api/v1/runs/{id}".
        const key = u.pathname.startsWith("/assets/")
          ? `asset .${u.pathname.split(".").at(-1)}`
          : `GET ${u.pathname.replace(/\/runs\/[^/]+/, "/runs/{id}")}`;
        // The first of a kind (a second request of the same path would be a reload).
        if (!(key in requests)) {
          requests[key] = r.responseEnd;
          if (u.pathname.endsWith("/compare")) {
            requests["compare: request sent"] = r.requestStart;
            requests["compare: bytes"] = r.encodedBodySize;
          }
        }
      }
      return {
        requests,
        tables: document.querySelectorAll('[data-testid^="table-"]').length,
        rows: document.querySelectorAll('[data-testid^="table-"] tr').length,
        charts: document.querySelectorAll("figure.chart canvas").length,
      };
    });
    // A failed request is reported by its status and path (below), not by the console's
    // "Failed to load resource", which names neither.
    const problems = [
      ...failed,
      ...page.problems.filter((p) => !p.startsWith("Failed to load resource")),
    ];
    if (problems.length > 0) throw new Error(`the page reported errors: ${problems.join("; ")}`);
    return { ...probe, ...detail };
  } catch (e) {
    const text = await page
      .locator("main, body")
      .first()
      .innerText()
      .catch(() => "");
    throw new Error(`${url}: ${e.message}\npage text: ${text.slice(0, 2000)}`);
  } finally {
    await context.close();
  }
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
};
const ms = (x) => (x === undefined ? "—" : `${x.toFixed(0)} ms`);

let dir;
let controller;
let browser;
async function cleanUp() {
  await browser?.close().catch(() => undefined);
  browser = undefined;
  if (controller && controller.exitCode === null && controller.signalCode === null) {
    const exited = new Promise((r) => controller.once("exit", r));
    controller.kill("SIGTERM");
    const timer = setTimeout(() => controller.kill("SIGKILL"), 10_000);
    await exited;
    clearTimeout(timer);
  }
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = undefined;
}
let stopping = false;
for (const signal of ["SIGINT", "SIGTERM"]) {
  process.once(signal, () => {
    stopping = true;
    console.error(`dashboard_run_page: ${signal}: stopping`);
    cleanUp().finally(() => process.exit(1));
  });
}

try {
  dir = await mkdtemp(join(tmpdir(), "tlbfleet-run-page-"));
  const db = join(dir, "fleet.db");
  const runs = [
    { id: "1", name: "large", layout: flags.large, samples: samplesOf(flags.large) },
    { id: "2", name: "reference", layout: flags.reference, samples: samplesOf(flags.reference) },
  ];
  const seedStart = Date.now();
  await run(flags["store-scale"], ["--seed", db, "--run", runs[0].layout, "--run", runs[1].layout]);
  console.log(
    `seeded ${db}: run 1 ${runs[0].samples} samples (${runs[0].layout}), run 2 ` +
      `${runs[1].samples} samples (${runs[1].layout}) in ${Date.now() - seedStart} ms`,
  );

  const ready = join(dir, "controller.ready");
  const log = [];
  controller = spawn(
    controllerBin,
    [
      "--grpc-listen=127.0.0.1:0",
      "--http-listen=127.0.0.1:0",
      `--db=${db}`,
      `--ready-file=${ready}`,
      // As the browser tests: a build tree's dashboard is found next to the binary.
      ...(resolve(binDir, "..", "dashboard", "dist") === resolve(distDir)
        ? []
        : [`--dashboard-dir=${distDir}`]),
    ],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  controller.stdout.on("data", (c) => log.push(c.toString()));
  controller.stderr.on("data", (c) => log.push(c.toString()));
  const info = await waitFor(() => {
    if (controller.exitCode !== null) throw new Error(`the controller exited\n${log.join("")}`);
    return existsSync(ready) && JSON.parse(readFileSync(ready, "utf8"));
  }, "the controller's ready file");
  const base = `http://127.0.0.1:${info.http_port}`;

  // The controller's own count, so a wrong seed cannot pass as the 10,000-sample run.
  for (const r of runs) {
    const response = await fetch(`${base}/api/v1/runs/${r.id}`);
    if (!response.ok) throw new Error(`GET /api/v1/runs/${r.id}: ${response.status}`);
    const stored = Number((await response.json()).samples);
    if (stored !== r.samples) {
      throw new Error(`run ${r.id} holds ${stored} samples, not ${r.samples}`);
    }
  }

  browser = await launchBrowser();
  console.log(`Chromium ${browser.version()}, ${repetitions} repetitions, alternating`);
  for (const r of runs) {
    const warm = await loadOnce(browser, `${base}/runs/${r.id}`);
    console.log(
      `warm-up ${r.name}: ${ms(warm.painted)}; ${warm.tables} tables, ${warm.rows} table rows, ` +
        `${warm.charts} charts, compare ${warm.requests["compare: bytes"]} bytes`,
    );
    r.loads = [];
  }
  for (let i = 0; i < repetitions; i++) {
    for (const r of runs) {
      const load = await loadOnce(browser, `${base}/runs/${r.id}`);
      r.loads.push(load);
      console.log(
        `${r.name} #${i + 1}: rendered ${ms(load.rendered)}, painted ${ms(load.painted)}`,
      );
    }
  }

  console.log("\nmedians over the repetitions (ms since navigation start):");
  const value = (load, key) => (key in load.requests ? load.requests[key] : load[key]);
  const medianOf = (r, key) => {
    const xs = r.loads.map((l) => value(l, key)).filter((x) => x !== undefined);
    return xs.length ? median(xs) : undefined;
  };
  // In the order they happen on the large run's page.
  const keys = [...new Set(runs.flatMap((r) => r.loads.flatMap((l) => Object.keys(l.requests))))]
    .filter((k) => k !== "compare: bytes")
    .sort((a, b) => (medianOf(runs[0], a) ?? 0) - (medianOf(runs[0], b) ?? 0));
  const rows = [
    ...keys.map((k) => [k === "compare: request sent" ? k : `${k} ended`, k]),
    ["results in the DOM", "rendered"],
    ["results painted", "painted"],
  ];
  const pad = (s, n) => String(s).padEnd(n);
  console.log(`  ${pad("", 40)}${runs.map((r) => pad(`${r.name} (${r.samples})`, 20)).join("")}`);
  for (const [label, key] of rows) {
    console.log(`  ${pad(label, 40)}${runs.map((r) => pad(ms(medianOf(r, key)), 20)).join("")}`);
  }

  console.log("\nload time, navigation start to results painted:");
  for (const r of runs) {
    const xs = r.loads.map((l) => l.painted);
    console.log(
      `  ${pad(r.name, 10)} ${pad(`${r.samples} samples`, 16)} median ${ms(median(xs))}, ` +
        `min ${ms(Math.min(...xs))}, max ${ms(Math.max(...xs))} (n=${xs.length})`,
    );
  }
  const ratio =
    median(runs[0].loads.map((l) => l.painted)) / median(runs[1].loads.map((l) => l.painted));
  console.log(`  ratio of the medians (large / reference): ${ratio.toFixed(2)}`);
} catch (e) {
  // After a signal the browser's or the controller's end is ours, not news.
  if (!stopping) console.error(`dashboard_run_page: ${e.stack ?? e}`);
  process.exitCode = 1;
} finally {
  await cleanUp();
}
