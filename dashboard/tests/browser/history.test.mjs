// History: before any run the page says how series come to be; three small runs submitted by
// hand add three points to each of pipetest's series (one per metric), which the page charts
// with uPlot (a canvas with ink) and lists with a link per point to its run; a click on a drawn
// point opens its run, and so does Enter on its link; the filters narrow the list and live in
// the URL. A viewer sees the same page with no regression actions. (A real change point needs a
// run of nights that this test cannot cause; the markers' placement and drawing are unit-tested
// in src/lib/history.test.ts and src/lib/series-plot.test.ts.)
import assert from "node:assert/strict";
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

const RUNS = 3;
const spec = (i) => `name: history-${i}
benchmark: pipetest
params: {loops: 2000}
iterations: 2
arms: [{name: a}]
`;

describe("history", () => {
  let fleet;
  let browser;
  let viewer;
  let operator;
  const runIds = [];
  /** Every answer of 400 or more that the pages got. */
  const failed = [];

  before(async () => {
    fleet = await startFleet({ name: "history" });
    browser = await launchBrowser();
    ({ page: viewer } = await newPage(browser));
    ({ page: operator } = await newPage(browser));
    for (const page of [viewer, operator]) {
      page.on("response", (r) => {
        if (r.status() >= 400) failed.push(`${r.status()} ${new URL(r.url()).pathname}`);
      });
    }
    await login(viewer, fleet, "viewer");
    await login(operator, fleet, "operator");
  });
  after(async () => {
    await browser?.close();
    await fleet?.stop();
  });

  it("says what to do while there are no series and no regressions", async () => {
    await viewer.getByRole("link", { name: "History" }).click();
    assert.equal(new URL(viewer.url()).pathname, "/history");
    const empty = viewer.getByTestId("series-empty");
    await empty.waitFor();
    assert.match(
      await empty.innerText(),
      /No series yet: finished runs add points; nightly schedules add one per night — see tlbfleet schedule add/,
    );
    assert.match(await viewer.getByTestId("regressions-empty").innerText(), /No regressions\./);
    assert.match(
      await viewer.getByTestId("schedules-empty").innerText(),
      /No nightly schedules: tlbfleet schedule add FILE\.yaml/,
    );
  });

  it("lists a nightly schedule added with the CLI, with its cron and next run", async () => {
    // 02:00 on 29 February: it cannot fire during the test (next in 2028); no host has the
    // label, should it ever.
    const schedule = `name: history-nightly
cron: "0 2 29 2 *"
hosts: {labels: {nowhere: "1"}}
run:
  benchmark: pipetest
  params: {loops: 2000}
  iterations: 2
  arms: [{name: a}]
on_regression: alert
`;
    await fleet.cli(["schedule", "add", "-"], { input: schedule });
    await viewer.reload();
    const row = viewer.getByTestId("schedule");
    await row.waitFor();
    const text = await row.innerText();
    assert.match(text, /history-nightly/);
    assert.match(text, /0 2 29 2 \*/);
    assert.match(text, /active/);
    assert.match(text, /\d{4}-02-29 02:00:00Z/);
    assert.match(text, /alert/);
  });

  it("charts one point per finished run in each series, each point a link to its run", async () => {
    for (let i = 0; i < RUNS; i++) {
      const out = await fleet.cli(["submit", "-"], { input: spec(i) });
      const runId = out.trim().split("\n").at(-1).trim();
      await fleet.cli(["wait", runId, "--timeout", "120", "--quiet"]);
      runIds.push(runId);
    }
    // Points are appended when the controller records the finished run, just after `wait`.
    await waitFor(async () => {
      const { series } = JSON.parse(await fleet.cli(["series", "--format", "json"]));
      return series?.length >= 2 && series.every((s) => (s.points ?? []).length === RUNS);
    }, `${RUNS} points in each pipetest series`);

    await operator.goto(fleet.url("/history"));
    const panels = operator.getByTestId("series");
    await waitFor(async () => (await panels.count()) === 2, "two series (one per metric)");
    const metrics = [];
    for (let i = 0; i < 2; i++) {
      const panel = panels.nth(i);
      metrics.push((await panel.locator("h3").innerText()).replace(/^pipetest\s+/, "").trim());
      const chart = panel.getByTestId("series-chart");
      assert.equal(await chart.getAttribute("data-points"), String(RUNS));
      assert.equal(await chart.getAttribute("data-markers"), "0");
      assert.equal(await panel.getByTestId("series-count").innerText(), String(RUNS));
      // uPlot drew it: a canvas of non-zero size with ink, every point inside the plot area.
      const canvas = chart.locator("canvas").first();
      const box = await canvas.boundingBox();
      assert.ok(box && box.width > 0 && box.height > 0, "the chart's canvas has a size");
      assert.ok((await inkedPixels(chart)) > 200, "the chart's canvas has ink");
      const over = await chart.locator(".u-over").boundingBox();
      const drawn = JSON.parse(
        (await chart.locator("[data-points-px]").getAttribute("data-points-px")) ?? "[]",
      );
      assert.equal(drawn.length, RUNS);
      for (const [x, y] of drawn) {
        assert.ok(
          x > 0 && x < over.width && y > 0 && y < over.height,
          `point ${x},${y} in the plot`,
        );
      }
      // Each run has a link to its run page in the Points list, in submission order.
      const links = panel.getByTestId("series-point");
      assert.equal(await links.count(), RUNS);
      const hrefs = await links.evaluateAll((as) => as.map((a) => a.getAttribute("href")));
      assert.deepEqual(
        hrefs,
        runIds.map((id) => `/runs/${id}`),
      );
    }
    assert.deepEqual(metrics.sort(), ["ops_per_sec", "usecs_per_op"]);
    // Operators see no buttons either while there is nothing to act on.
    assert.equal(await operator.getByRole("button", { name: "Acknowledge" }).count(), 0);
    await screenshot(operator, "history");
  });

  it("filters by metric in the URL, and a point opens its run", async () => {
    await operator.getByLabel("Metric").selectOption("usecs_per_op");
    await operator.waitForURL((u) => u.searchParams.get("metric") === "usecs_per_op");
    const panels = operator.getByTestId("series");
    await waitFor(async () => (await panels.count()) === 1, "one series after the filter");
    assert.match(await panels.first().locator("h3").innerText(), /usecs_per_op/);
    // A link shared with the filter opens the same list.
    await viewer.goto(fleet.url("/history?metric=ops_per_sec"));
    await viewer.getByTestId("series").first().waitFor();
    assert.equal(await viewer.getByTestId("series").count(), 1);
    assert.match(await viewer.getByTestId("series").locator("h3").innerText(), /ops_per_sec/);

    // A click on the second drawn point opens its run.
    const chart = panels.first().getByTestId("series-chart");
    const drawn = JSON.parse(
      await chart.locator("[data-points-px]").getAttribute("data-points-px"),
    );
    const [x, y] = drawn[1];
    await chart.locator(".u-over").click({ position: { x, y } });
    await operator.waitForURL((u) => u.pathname === `/runs/${runIds[1]}`);
    await operator.locator("h1").filter({ hasText: runIds[1] }).waitFor();

    // The keyboard way: Enter on a point's link in the Points list opens its run.
    await operator.goBack();
    await operator.waitForURL((u) => u.pathname === "/history");
    const panel = operator.getByTestId("series").first();
    await panel
      .locator("summary")
      .filter({ hasText: `Points (${RUNS})` })
      .click();
    await panel.getByTestId("series-point").nth(2).focus();
    await operator.keyboard.press("Enter");
    await operator.waitForURL((u) => u.pathname === `/runs/${runIds[2]}`);
    await operator.locator("h1").filter({ hasText: runIds[2] }).waitFor();
  });

  it("shows a viewer no regression actions", async () => {
    await viewer.goto(fleet.url("/history"));
    await viewer.getByTestId("series").first().waitFor();
    assert.equal(await viewer.getByTestId("series").count(), 2);
    assert.match(await viewer.getByTestId("regressions-empty").innerText(), /No regressions\./);
    for (const name of ["Acknowledge", "Fixed", "Reopen"]) {
      assert.equal(await viewer.getByRole("button", { name }).count(), 0);
    }
  });

  it("made no failed requests but the login check, with no page errors or CSP violations", () => {
    // Before logging in, each page's whoami answers 401: that is how it finds the login page.
    assert.deepEqual(
      failed.filter((f) => f !== "401 /api/v1/whoami"),
      [],
    );
    const problems = [...viewer.problems, ...operator.problems].filter(
      (p) => !p.startsWith("Failed to load resource"),
    );
    assert.deepEqual(problems, []);
  });
});
