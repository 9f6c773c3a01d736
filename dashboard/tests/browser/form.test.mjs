// Bad input on the New-run form, an expired session, and the API going away and coming back.
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

describe("bad input", () => {
  let fleet;
  let browser;
  let page;
  let context;
  const posts = [];

  before(async () => {
    fleet = await startFleet({ name: "form" });
    browser = await launchBrowser();
    ({ page, context } = await newPage(browser));
    page.on("request", (r) => {
      if (r.method() === "POST" && r.url().endsWith("/api/v1/runs")) posts.push(r.url());
    });
    await login(page, fleet, "operator");
  });
  after(async () => {
    await browser?.close();
    await fleet?.stop();
  });

  it("refuses a bad parameter in the browser, next to its field, without asking the server", async () => {
    await page.goto(fleet.url("/runs/new?benchmark=ebizzy"));
    await page.getByLabel("Run name").fill("bad-seconds");
    await page.getByLabel(/^seconds/).fill("0");
    await page.getByTestId("submit-run").click();
    const error = page.getByTestId("error-params.seconds");
    await error.waitFor();
    assert.match(await error.innerText(), /must be an integer in \[1, \d+\], got "0"/);
    assert.equal(await page.getByLabel(/^seconds/).getAttribute("aria-invalid"), "true");
    assert.equal(
      await page.evaluate(() => document.activeElement?.closest("[data-field]")?.dataset.field),
      "params.seconds",
    );
    assert.deepEqual(posts, []);
  });

  it("shows the server's message for what only the server can check, at the field it names", async () => {
    await page.goto(fleet.url("/runs/new?benchmark=netperf"));
    await page.getByLabel("Run name").fill("netperf-remote");
    // A string parameter: the browser cannot know it is not loopback; the workload can.
    await page.getByLabel(/^server/).fill("192.0.2.1");
    await page.getByTestId("submit-run").click();
    const field = page.locator('[data-field="params.server"] .field-error');
    await field.waitFor();
    assert.match(await field.innerText(), /not a loopback address/);
    assert.equal(posts.length, 1);
    await screenshot(page, "new-run-server-error");
  });

  it("keeps the form through an expired session and a new login", async () => {
    await page.goto(fleet.url("/runs/new?benchmark=ebizzy"));
    await page.getByLabel("Run name").fill("kept-through-login");
    await context.clearCookies(); // the session is gone, as after its expiry
    await page.getByTestId("submit-run").click();
    await page.waitForURL(/\/login\?next=/);
    await page.getByLabel("API token").fill(fleet.tokens.operator);
    await page.getByRole("button", { name: "Log in" }).click();
    await page.waitForURL(/\/runs\/new/);
    assert.equal(await page.getByLabel("Run name").inputValue(), "kept-through-login");
  });

  it("shows a banner while the API is down and recovers by itself", async () => {
    await page.goto(fleet.url("/"));
    await page.getByTestId("hosts").waitFor();
    await fleet.stopController();
    await page.getByTestId("api-down").waitFor({ timeout: 30_000 });
    await screenshot(page, "api-down");
    await fleet.startController();
    await page.getByTestId("api-down").waitFor({ state: "detached", timeout: 30_000 });
    await waitFor(
      async () => (await page.getByTestId("hosts").locator("tbody tr").count()) > 0,
      "hosts again",
    );
  });
});
