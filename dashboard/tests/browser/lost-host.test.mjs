// A lost host (issue 26): the agent is stopped with SIGSTOP mid-run (a hung machine, its
// stream still open) under a 4 s lease, so the controller calls it silent within seconds; the
// run (on_host_lost: wait) says on its page whom it waits for and for how long, counting on
// without a reload, and logs the event; Fleet shows the host silent, linked to the run; SIGCONT
// brings it back, and the page says so. The server's refusal of an on_host_lost it alone can
// check appears at its field of the form.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import {
  launchBrowser,
  login,
  newPage,
  requireApi,
  screenshot,
  startFleet,
  waitFor,
} from "./harness.mjs";

await requireApi();

const SPEC = `name: browser-lost-host
benchmark: ebizzy
params: {seconds: 2}
iterations: 8
arms: [{name: a}, {name: b}]
on_host_lost: {action: wait}
`;

describe("lost host", () => {
  let fleet;
  let browser;
  let context;
  let page;
  let runId;
  const failed = [];

  before(async () => {
    fleet = await startFleet({ name: "lost-host", leaseSeconds: 4 });
    browser = await launchBrowser();
    ({ page, context } = await newPage(browser));
    context.on("response", (r) => {
      if (r.status() >= 400) failed.push(`${r.status()} ${new URL(r.url()).pathname}`);
    });
    await login(page, fleet, "operator");
  });
  after(async () => {
    await browser?.close();
    await fleet?.stop();
  });

  it("says the policy in force on a run that names one", async () => {
    runId = (await fleet.cli(["submit", "-"], { input: SPEC })).trim().split("\n").at(-1);
    await page.goto(fleet.url(`/runs/${runId}`));
    assert.equal(
      await page.getByTestId("on-host-lost").innerText(),
      "wait for the host, however long it is silent",
    );
    // A job is under way: the slot is bound to the agent and has work left.
    await waitFor(
      async () => /started/.test(await page.getByTestId("event-log").innerText()),
      "the first job to start",
    );
  });

  it("waits for the silent host and says so, counting the silence without a reload", async () => {
    await page.evaluate(() => {
      window.__notReloaded = true;
    });
    fleet.signalAgent(0, "SIGSTOP");
    const notice = page.getByTestId("waiting-for");
    await notice.waitFor({ timeout: 20_000 });
    const message = await notice.getByTestId("waiting-message").innerText();
    assert.match(message, /^waiting for .*agent [^)]+\), silent since \d\d:\d\d:\d\d UTC/);
    const silentFor = notice.getByTestId("silent-for");
    const first = await silentFor.innerText();
    assert.match(first, /^silent for \d+ (s|min)/);
    await waitFor(
      async () => (await silentFor.innerText()) !== first,
      `"${first}" to count on`,
      5_000,
    );
    assert.equal(await page.evaluate(() => window.__notReloaded), true, "no reload");
    const log = await page.getByTestId("event-log").innerText();
    assert.match(log, /has work in slot 0 and is silent since .* on_host_lost: wait/);
    await screenshot(page, "run-waiting");
  });

  it("shows the host silent on Fleet, linked to the run that waits for it", async () => {
    const fleetPage = await context.newPage();
    await fleetPage.goto(fleet.url("/"));
    const row = fleetPage.getByTestId("hosts").locator("tbody tr").first();
    await row.getByTestId("waited-on").waitFor({ timeout: 15_000 });
    assert.equal(await row.locator(".state").innerText(), "silent");
    assert.match(
      await row.getByTestId("waited-on").innerText(),
      new RegExp(`^run ${runId} waits for it since \\d\\d:\\d\\d:\\d\\d UTC \\([^)]+\\)$`),
    );
    assert.equal(
      await row.getByTestId("waited-on").locator("a").getAttribute("href"),
      `/runs/${runId}`,
    );
    await fleetPage.close();
  });

  it("says when the host is back, and waits no more", async () => {
    fleet.signalAgent(0, "SIGCONT");
    await page.getByTestId("waiting-for").waitFor({ state: "detached", timeout: 20_000 });
    await waitFor(
      async () =>
        /is back after .* of silence/.test(await page.getByTestId("event-log").innerText()),
      "the host's return in the log",
      10_000,
    );
    await fleet.cli(["cancel", runId]);
    await page
      .locator("h1")
      .filter({ hasText: /cancelled/ })
      .waitFor({ timeout: 20_000 });
    // Before logging in, whoami answers 401: that is how the page finds the login page.
    assert.deepEqual(
      failed.filter((f) => f !== "401 /api/v1/whoami"),
      [],
    );
    assert.deepEqual(
      page.problems.filter((p) => !p.startsWith("Failed to load resource")),
      [],
    );
  });

  it("shows the server's refusal of on_host_lost at its field", async () => {
    await page.goto(fleet.url("/runs/new?benchmark=ebizzy"));
    const yaml = page.getByLabel("Run spec (YAML)");
    await yaml.fill(`name: pinned-restart
benchmark: ebizzy
params: {seconds: 1}
iterations: 1
arms: [{name: a}]
hosts: {count: 1, names: [nowhere]}
on_host_lost: {action: restart, after: 10m}
`);
    assert.equal(await page.getByLabel("When a slot's host goes silent").inputValue(), "restart");
    await page.getByTestId("submit-run").click();
    const error = page.getByTestId("error-on_host_lost.action");
    await error.waitFor();
    assert.match(await error.innerText(), /hosts\.names pins .*no other eligible host/);
    assert.equal(
      await page.getByLabel("When a slot's host goes silent").getAttribute("aria-invalid"),
      "true",
    );
  });
});
