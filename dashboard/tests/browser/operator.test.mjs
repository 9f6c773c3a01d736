// An operator's day: log in, submit a run through the form, watch it live to the end, read
// the table, verdicts, charts and flush profile — the report the page drew is the message
// `tlbfleet compare --format json` prints, field by field — download the CSV (the controller's
// results.csv, equal to `tlbfleet results`), look at Runs, Compare two arms and the run against
// another across runs (the controller's verdicts, "across runs"), a missing run, log out. One
// screenshot per page.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { after, before, describe, it } from "node:test";
import {
  differences,
  inkedPixels,
  launchBrowser,
  login,
  newPage,
  protoJsonNames,
  requireApi,
  screenshot,
  startFleet,
  waitFor,
} from "./harness.mjs";

await requireApi();

// A second run for the comparison across runs: one arm like the first run's mmap, submitted
// with the CLI once the first has finished.
const OTHER = `name: browser-ebizzy-again
benchmark: ebizzy
params: {seconds: 1}
sweep: {threads: [1, 2]}
iterations: 2
arms: [{name: mmap, params: {mmap: always}}]
`;

/** The pathname of an API request. */
const pathOf = (r) => new URL(r.url()).pathname;

describe("operator", () => {
  let fleet;
  let browser;
  let page;
  let runId;
  let otherRunId;
  /** The run page's GET …/compare answer (its one report), caught as the page loads it. */
  let compareAnswer;
  /** Every API path the page asked for. */
  const requested = [];

  before(async () => {
    // The run records a flush profile: the agent in the host's PID namespace (harness.mjs).
    fleet = await startFleet({ name: "operator", hostPidNamespace: true });
    browser = await launchBrowser();
    ({ page } = await newPage(browser));
    page.on("request", (r) => {
      if (pathOf(r).startsWith("/api/")) requested.push(pathOf(r));
    });
  });
  after(async () => {
    await browser?.close();
    await fleet?.stop();
  });

  it("is served at / by the controller with no flag, under a CSP that allows no inline script", async () => {
    const response = await page.goto(fleet.url("/"));
    assert.equal(response.status(), 200);
    const csp = response.headers()["content-security-policy"] ?? "";
    assert.match(csp, /script-src 'self'(;|$)/);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
    assert.match(await page.content(), /<script type="module"[^>]* src="\/assets\//);
  });

  it("logs in and lands on Fleet, which shows the host and why its ceiling is locked or its value", async () => {
    await login(page, fleet, "operator");
    assert.equal(new URL(page.url()).pathname, "/");
    const hosts = page.getByTestId("hosts");
    await hosts.locator("tbody tr").first().waitFor();
    const row = await hosts.locator("tbody tr").first().innerText();
    assert.match(row, /idle|running/);
    assert.match(row, /pages|locked: /);
    // The host's uptime, from its boot time (this machine has been up a while).
    const uptime = await hosts.locator("tbody tr").first().getByTestId("uptime").innerText();
    assert.match(uptime, /^\d+ (s|min|h \d+ min|d \d+ h)$/, `uptime "${uptime}"`);
    await screenshot(page, "fleet");
  });

  it("submits a run through the form (YAML view in sync)", async () => {
    await page.getByRole("link", { name: "New run" }).click();
    await page.getByLabel("Benchmark", { exact: true }).selectOption("ebizzy");
    await page.getByLabel("Run name").fill("browser-ebizzy");
    await page.getByLabel(/^seconds/).fill("1");
    await page.getByLabel("Sweep", { exact: true }).selectOption("values");
    await page.getByLabel("Swept parameter").selectOption("threads");
    await page.getByLabel("Values (comma-separated)").fill("1, 2");
    await page.getByLabel("Iterations per boot (1–100000)").fill("3");
    await page.getByLabel("Arm 1 name").fill("mmap");
    await page.getByLabel("Parameter overrides").nth(0).fill("mmap=always");
    await page.getByLabel("Arm 2 name").fill("malloc");
    await page.getByLabel("Parameter overrides").nth(1).fill("mmap=never");
    await page.getByLabel("Parameter overrides").nth(1).press("Tab");
    await page.getByRole("checkbox", { name: "flush_profile" }).check();
    const yaml = await page.getByLabel("Run spec (YAML)").inputValue();
    assert.match(yaml, /name: browser-ebizzy/);
    assert.match(yaml, /threads: \[ 1, 2 \]/);
    assert.match(yaml, /monitors:\s*\[ flush_profile \]/);
    await page.getByRole("button", { name: "Copy as CLI" }).click();
    assert.match(
      await page.getByTestId("cli-command").innerText(),
      /^tlbfleet submit - <<'TLBFLEET_SPEC'/,
    );
    await screenshot(page, "new-run");
    await page.getByTestId("submit-run").click();
    await page.waitForURL(/\/runs\/\d+$/); // run ids are positive integers
    runId = new URL(page.url()).pathname.split("/").at(-1);
  });

  it("watches the run live to its end", async () => {
    compareAnswer = page.waitForResponse((r) => pathOf(r) === `/api/v1/runs/${runId}/compare`, {
      timeout: 240_000,
    });
    const status = page.getByTestId("stream-status");
    await waitFor(
      async () => /live/.test(await status.innerText().catch(() => "")),
      "the event stream to be live",
    );
    // Jobs finish while the page is open, with no reload: the counts move with the events.
    await waitFor(async () => {
      const text = await page.getByTestId("job-counts").innerText();
      const m = /(\d+) of (\d+) jobs done/.exec(text);
      return m && Number(m[1]) >= 3 && Number(m[1]) < Number(m[2]);
    }, "3 jobs or more done while the run is still going");
    assert.ok((await page.getByTestId("event-log").locator("li").count()) > 3, "live events");
    await screenshot(page, "run-live");
    await page.getByTestId("table-records_per_sec").waitFor({ timeout: 180_000 });
    assert.match(await page.locator("h1").innerText(), /succeeded/);
    const out = await fleet.cli(["submit", "-"], { input: OTHER });
    otherRunId = out.trim().split("\n").at(-1).trim();
  });

  it("shows the mmtests table and a verdict per row", async () => {
    const table = await page.getByTestId("table-records_per_sec").innerText();
    assert.match(table, /Hmean\s+threads=1/);
    assert.match(table, /Hmean\s+threads=2/);
    assert.match(table, /BAmean-95\s+threads=2/);
    // Each arm's noise, split: one boot per arm here, so within-boot only, and why.
    const variance = page.getByTestId("variance-records_per_sec");
    const rows = await variance.locator("tbody tr").allInnerTexts();
    assert.equal(rows.length, 4, "a row per sweep value and arm");
    for (const text of rows) {
      assert.match(text, /threads=[12]\s+(mmap|malloc)\s+1\s+3\s+\d+(\.\d+)?\s+—\s+—/, text);
      assert.match(text, /one boot: between-boot variance unknown/, `why, in "${text}"`);
    }
    const verdicts = page.getByTestId("verdicts-records_per_sec");
    assert.equal(await verdicts.locator("tbody tr").count(), 2);
    for (const text of await verdicts.locator("tbody tr").allInnerTexts()) {
      assert.match(text, /better|worse|same|can't tell/, `a verdict in "${text}"`);
      assert.match(text, /within one boot|across/, `a scope in "${text}"`);
    }
  });

  it("drew the report `tlbfleet compare --format json` prints: the same message, field by field", async () => {
    const answer = await compareAnswer;
    assert.equal(answer.status(), 200);
    // The run's own report, with the defaults the CLI asks for too.
    assert.equal(new URL(answer.url()).search, "");
    const shown = await answer.json();
    const cli = JSON.parse(await fleet.cli(["compare", runId, "--format", "json"]));
    assert.ok(shown.report.groups.length > 0 && shown.report.flushProfiles.length === 2);
    assert.deepEqual(differences(shown.report, protoJsonNames(cli)), []);
    // Its text is the CLI's text.
    const text = await fleet.cli(["compare", runId]);
    assert.equal(shown.text.replace(/\n+$/, ""), text.replace(/\n+$/, ""));

    // And the page shows that message: each verdict row is the report's verdict for its sweep
    // value and arm, and the flush profiles are its profiles.
    const label = { unknown: "can't tell" };
    const expected = shown.report.groups
      .filter((g) => g.metric === "records_per_sec")
      .flatMap((g) =>
        g.verdicts.map((v) => [
          g.paramName ? `${g.paramName}=${g.paramValue}` : g.paramValue,
          v.arm,
          label[v.verdict] ?? v.verdict,
        ]),
      );
    const rows = page.getByTestId("verdicts-records_per_sec").locator("tbody tr");
    const seen = [];
    for (let i = 0; i < (await rows.count()); i++) {
      const cells = await rows.nth(i).locator("td").allInnerTexts();
      seen.push(cells.slice(0, 3).map((c) => c.trim()));
    }
    assert.equal(seen.length, 2);
    assert.deepEqual(seen, expected);
    for (const p of shown.report.flushProfiles) {
      const caption = await page.getByTestId(`flush-${p.arm}`).locator("figcaption").innerText();
      assert.match(caption, new RegExp(`^${p.arm}: [\\d,]+ flushes in ${p.iterations} iterations`));
    }
  });

  it("draws a chart and the flush profile with data points", async () => {
    const chart = page.getByTestId("chart-records_per_sec");
    assert.equal(await chart.getAttribute("data-points"), "4");
    assert.ok((await inkedPixels(chart)) > 200, "the chart's canvas has ink");
    for (const arm of ["mmap", "malloc"]) {
      const hist = page.getByTestId(`flush-${arm}`);
      assert.ok(Number(await hist.getAttribute("data-points")) > 0, `${arm} has flush buckets`);
      assert.ok((await inkedPixels(hist)) > 100, `${arm}'s histogram has ink`);
    }
    await screenshot(page, "run");
  });

  it("downloads the controller's results.csv, the same CSV as `tlbfleet results`", async () => {
    const [download, answer] = await Promise.all([
      page.waitForEvent("download"),
      page.waitForResponse((r) => pathOf(r) === `/api/v1/runs/${runId}/results.csv`),
      page.getByTestId("csv-download").click(),
    ]);
    assert.equal(answer.status(), 200);
    assert.match(answer.headers()["content-type"] ?? "", /^text\/csv/);
    assert.equal(download.suggestedFilename(), `run-${runId}-samples.csv`);
    const file = await readFile(await download.path());
    const body = await answer.body();
    assert.ok(
      file.equals(body),
      `the file (${file.length} bytes) is the bytes the controller sent (${body.length}): ${JSON.stringify(file.subarray(0, 80).toString())} vs ${JSON.stringify(body.subarray(0, 80).toString())}`,
    );
    const expected = await fleet.cli(["results", runId, "--format", "csv"]);
    assert.equal(file.toString("utf8"), expected);
    // The browser never read the raw samples to build anything itself.
    assert.deepEqual(
      requested.filter((p) => p === `/api/v1/runs/${runId}/results`),
      [],
    );
  });

  it("lists the run on Runs, filtered by name in the URL", async () => {
    await page.goto(fleet.url("/runs?name=browser-ebizzy"));
    await page.getByTestId("runs").getByRole("link", { name: runId }).waitFor();
    await screenshot(page, "runs");
  });

  it("compares two arms on Compare", async () => {
    await page.goto(fleet.url(`/compare?a=${runId}:mmap&b=${runId}:malloc`));
    await page.getByTestId("table-records_per_sec").waitFor();
    assert.equal(await page.getByTestId("verdicts-records_per_sec").locator("tbody tr").count(), 2);
    assert.equal(await page.getByTestId("report-scope").count(), 0);
    await screenshot(page, "compare");
  });

  it("compares the run with another across runs: the controller's verdicts, said to be across runs", async () => {
    await fleet.cli(["wait", otherRunId, "--timeout", "180", "--quiet"]);
    const [answer] = await Promise.all([
      page.waitForResponse((r) => pathOf(r) === `/api/v1/runs/${runId}/compare`),
      page.goto(fleet.url(`/compare?a=${runId}:mmap&b=${otherRunId}:mmap`)),
    ]);
    const query = new URL(answer.url()).searchParams;
    assert.equal(query.get("withRunId"), otherRunId);
    assert.equal(query.get("arm"), "mmap");
    assert.equal(query.get("withArm"), "mmap");
    const shown = await answer.json();
    assert.equal(shown.report.scope, "across runs");
    assert.deepEqual(shown.report.arms, [`${runId}:mmap`, `${otherRunId}:mmap`]);
    // The same message as the CLI's comparison across runs.
    const cli = JSON.parse(
      await fleet.cli([
        "compare",
        runId,
        "--with",
        otherRunId,
        "--arm",
        "mmap",
        "--with-arm",
        "mmap",
        "--format",
        "json",
      ]),
    );
    assert.deepEqual(differences(shown.report, protoJsonNames(cli)), []);

    const scope = page.getByTestId("report-scope");
    await scope.waitFor();
    assert.match(await scope.innerText(), /across runs/);
    const rows = page.getByTestId("verdicts-records_per_sec").locator("tbody tr");
    assert.equal(await rows.count(), 2, "a verdict per sweep value");
    for (const text of await rows.allInnerTexts()) {
      assert.match(text, new RegExp(`${otherRunId}:mmap`));
      assert.match(text, /better|worse|same|can't tell/, `a verdict in "${text}"`);
      assert.match(text, /across runs, /, `the scope in "${text}"`);
      assert.match(
        text,
        new RegExp(`across runs: these arms come from runs ${runId} and ${otherRunId}`),
        `the note in "${text}"`,
      );
    }
    await screenshot(page, "compare-runs");
  });

  it("says clearly that a run does not exist", async () => {
    await page.goto(fleet.url("/runs/999999"));
    await page.getByTestId("not-found").waitFor();
    await screenshot(page, "not-found");
  });

  it("logs out; the session is gone on the server too", async () => {
    await page.goto(fleet.url("/"));
    await page.getByRole("button", { name: "Log out" }).click();
    await page.waitForURL(/\/login/);
    const status = await page.evaluate(async () => (await fetch("/api/v1/hosts")).status);
    assert.equal(status, 401);
    await screenshot(page, "login");
    assert.deepEqual(
      page.problems.filter((p) => /Content Security Policy/i.test(p)),
      [],
    );
  });
});
