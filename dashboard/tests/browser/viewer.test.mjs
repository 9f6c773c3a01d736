// A viewer sees no submit or cancel controls, and the server refuses a forged submit.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { launchBrowser, login, newPage, requireApi, startFleet } from "./harness.mjs";

await requireApi();

const SPEC = `name: viewer-check
benchmark: ebizzy
params: {seconds: 1}
iterations: 1
arms: [{name: a}]
`;

describe("viewer", () => {
  let fleet;
  let browser;
  let page;

  before(async () => {
    fleet = await startFleet({ name: "viewer" });
    browser = await launchBrowser();
    ({ page } = await newPage(browser));
    await login(page, fleet, "viewer");
  });
  after(async () => {
    await browser?.close();
    await fleet?.stop();
  });

  it("sees no New run link and no submit button", async () => {
    assert.equal(await page.getByRole("link", { name: "New run" }).count(), 0);
    await page.goto(fleet.url("/runs/new"));
    await page.getByLabel("Run spec (YAML)").waitFor();
    assert.equal(await page.getByTestId("submit-run").count(), 0);
  });

  it("sees no cancel button on a run that is still going", async () => {
    const long = SPEC.replace("viewer-check", "viewer-long").replace("seconds: 1", "seconds: 60");
    const runId = (await fleet.cli(["submit", "-"], { input: long })).trim().split("\n").at(-1);
    await page.goto(fleet.url(`/runs/${runId}`));
    await page
      .locator("h1")
      .filter({ hasText: /queued|running/ })
      .waitFor();
    assert.equal(await page.getByTestId("cancel-run").count(), 0);
    await fleet.cli(["cancel", runId]);
  });

  it("is refused by the server when it forges a submit (with the session's CSRF token)", async () => {
    const result = await page.evaluate(async (spec) => {
      const who = await (await fetch("/api/v1/whoami")).json();
      const response = await fetch("/api/v1/runs", {
        method: "POST",
        headers: {
          "Content-Type": "application/yaml",
          "X-CSRF-Token": who.csrfToken ?? who.csrf_token ?? "",
        },
        body: spec,
      });
      return { status: response.status, body: await response.json() };
    }, SPEC);
    assert.equal(result.status, 403);
    assert.equal(result.body.code, "PERMISSION_DENIED");
  });
});
