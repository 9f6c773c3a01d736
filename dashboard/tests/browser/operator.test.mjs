// An operator's day: log in, submit a run through the form, watch it live to the end, read
// the table, verdicts, charts and flush profile, download the CSV (equal to `tlbfleet
// results`), look at Runs, Compare and a missing run, log out. One screenshot per page.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { after, before, describe, it } from "node:test";
import {
  inkedPixels,
  launchBrowser,
  login,
  newPage,
  requireApi,
  screenshot,
  startFleet,
  waitFor,
} from "./harness.mjs";

await requireApi();

describe("operator", () => {
  let fleet;
  let browser;
  let page;
  let runId;

  before(async () => {
    // The run records a flush profile: the agent in the host's PID namespace (harness.mjs).
    fleet = await startFleet({ name: "operator", hostPidNamespace: true });
    browser = await launchBrowser();
    ({ page } = await newPage(browser));
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

  it("downloads the samples as the same CSV as `tlbfleet results`", async () => {
    const [download] = await Promise.all([
      page.waitForEvent("download"),
      page.getByTestId("csv-download").click(),
    ]);
    const csv = await readFile(await download.path(), "utf8");
    const expected = await fleet.cli(["results", runId, "--format", "csv"]);
    assert.equal(csv, expected);
  });

  it("lists the run on Runs, filtered by name in the URL", async () => {
    await page.goto(fleet.url("/runs?name=browser-ebizzy"));
    await page.getByTestId("runs").getByRole("link", { name: runId }).waitFor();
    await screenshot(page, "runs");
  });

  it("compares two arms on Compare", async () => {
    await page.goto(fleet.url(`/compare?a=${runId}:mmap&b=${runId}:malloc`));
    await page.getByTestId("table-records_per_sec").waitFor();
    await screenshot(page, "compare");
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
