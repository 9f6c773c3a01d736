// The browser tests' world: a real tlbfleet-controller and a real tlbfleet-agent from the
// build tree on loopback (port 0, a temporary directory), and Debian's Chromium driven by
// playwright-core (headless, no sandbox, no background networking; no browser download).
//
// Environment (set by CTest, cmake/dashboard.cmake): TLBFLEET_BIN_DIR, TLBFLEET_DASHBOARD_DIST,
// TLBFLEET_BROWSER_ARTIFACTS (screenshots, downloads, logs), TLBFLEET_CHROMIUM.
import { execFile, spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { chromium } from "playwright-core";

const run = promisify(execFile);
const here = new URL(".", import.meta.url).pathname;
const sourceDir = process.env.TLBFLEET_SOURCE_DIR ?? resolve(here, "../../..");
export const binDir = process.env.TLBFLEET_BIN_DIR ?? join(sourceDir, "build", "bin");
export const distDir =
  process.env.TLBFLEET_DASHBOARD_DIST ?? join(sourceDir, "build", "dashboard", "dist");
export const artifacts =
  process.env.TLBFLEET_BROWSER_ARTIFACTS ?? join(sourceDir, "build", "browser-artifacts");
const chromiumPath = process.env.TLBFLEET_CHROMIUM ?? "/usr/bin/chromium";

/** CTest's SKIP_RETURN_CODE: the test did not run (shown as "Skipped", never as passed). */
export const SKIP = 77;

/** Waits for `condition()` to return a truthy value; throws with `what` after `timeoutMs`. */
export async function waitFor(condition, what, timeoutMs = 30_000, everyMs = 100) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      const value = await condition();
      if (value) return value;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${last.message}` : ""}`,
      );
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/**
 * What the controller binary supports. The dashboard needs the HTTP/JSON API, sessions and
 * static files (issue 10); a controller without them cannot run these tests.
 */
export async function controllerFeatures() {
  const controller = join(binDir, "tlbfleet-controller");
  if (!existsSync(controller)) return { ok: false, why: `${controller} is not built` };
  if (!existsSync(join(distDir, "index.html")))
    return { ok: false, why: `${distDir} is not built` };
  const { stdout } = await run(controller, ["--help"]);
  const tokens = await run(controller, ["token", "--help"]).then(
    () => true,
    () => false,
  );
  const dashboardDir = stdout.includes("--dashboard-dir");
  if (!dashboardDir || !tokens) {
    return {
      ok: false,
      why: "tlbfleet-controller has no --dashboard-dir or `token` command: the HTTP/JSON API (issue 10) has not landed",
    };
  }
  const agentHelp = (await run(join(binDir, "tlbfleet-agent"), ["--help"])).stdout;
  return { ok: true, agentTokenFile: agentHelp.includes("--token-file") };
}

/** Exits with SKIP (and says why) when this controller cannot serve the dashboard. */
export async function requireApi() {
  const f = await controllerFeatures();
  if (!f.ok) {
    console.log(`SKIP: ${f.why}`);
    process.exit(SKIP);
  }
  return f;
}

class Daemon {
  constructor(name, argv, logPath, env = {}) {
    this.name = name;
    this.namespaced = argv[0] === "unshare";
    this.logPath = logPath;
    this.log = [];
    this.child = spawn(argv[0], argv.slice(1), {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, ...env },
    });
    const collect = (chunk) => this.log.push(chunk.toString());
    this.child.stdout.on("data", collect);
    this.child.stderr.on("data", collect);
    this.exited = new Promise((r) => this.child.on("exit", (code, signal) => r({ code, signal })));
  }

  text() {
    return this.log.join("");
  }

  /** The real daemon's pids: unshare's children when namespaced, else the child itself. */
  pids() {
    if (!this.namespaced) return [this.child.pid];
    try {
      const pid = this.child.pid;
      return readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8")
        .trim()
        .split(/\s+/)
        .filter((x) => x !== "")
        .map(Number);
    } catch {
      return [];
    }
  }

  /**
   * Sends `signal` to the real daemon (SIGSTOP: a hung machine, its stream still open). From
   * here SIGSTOP and SIGCONT reach it even as its PID namespace's init.
   */
  signal(signal) {
    const pids = this.pids();
    if (pids.length === 0) throw new Error(`${this.name}: no process to send ${signal} to`);
    for (const pid of pids) process.kill(pid, signal);
    if (signal === "SIGSTOP") this.paused = true;
    if (signal === "SIGCONT") this.paused = false;
  }

  async stop() {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    // A stopped daemon would hold SIGTERM until it is continued.
    if (this.paused) this.signal("SIGCONT");
    // unshare (util-linux 2.38) does not pass SIGTERM on: stop its child, the real daemon,
    // so that it shuts down cleanly; unshare then exits with it.
    const children = this.namespaced ? this.pids().map(String) : [];
    if (this.namespaced && children.length > 0) {
      for (const pid of children) process.kill(Number(pid), "SIGTERM");
    } else this.child.kill("SIGTERM");
    const timer = setTimeout(() => this.child.kill("SIGKILL"), 10_000);
    await this.exited;
    clearTimeout(timer);
    writeFileSync(this.logPath, this.text());
  }
}

/**
 * A controller and `agents` agents on loopback, with an API token per role in `roles`.
 * `leaseSeconds` is the controller's --lease-seconds (its heartbeats a quarter of it: a short
 * lease finds a silent host in seconds). Returns { url, grpc, tokens, cli(args, role),
 * signalAgent(i, signal), stopController(), startController(), stop() }.
 */
export async function startFleet({
  name,
  roles = ["operator", "viewer"],
  agents = 1,
  hostPidNamespace = false,
  leaseSeconds = 30,
} = {}) {
  const features = await requireApi();
  const dir = await mkdtemp(join(tmpdir(), `tlbfleet-browser-${name}-`));
  const db = join(dir, "fleet.db");
  const logs = join(artifacts, name);
  mkdirSync(logs, { recursive: true });
  const controllerBin = join(binDir, "tlbfleet-controller");

  const tokens = {};
  for (const role of [...roles, ...(features.agentTokenFile ? ["agent"] : [])]) {
    const { stdout } = await run(controllerBin, [
      "token",
      "create",
      "--db",
      db,
      "--role",
      role,
      "--name",
      `browser-${role}`,
    ]);
    tokens[role] = stdout.trim().split("\n").at(-1).trim();
  }

  let controller;
  let ports = { grpc: 0, http: 0 };
  const startController = async () => {
    const ready = join(dir, "controller.ready");
    rm(ready, { force: true });
    controller = new Daemon(
      "controller",
      [
        controllerBin,
        `--grpc-listen=127.0.0.1:${ports.grpc}`,
        `--http-listen=127.0.0.1:${ports.http}`,
        `--db=${db}`,
        `--ready-file=${ready}`,
        // A build tree's dashboard is found next to the binary with no flag (that is tested
        // here); only a dashboard elsewhere needs --dashboard-dir.
        ...(resolve(binDir, "..", "dashboard", "dist") === resolve(distDir)
          ? []
          : [`--dashboard-dir=${distDir}`]),
        `--lease-seconds=${leaseSeconds}`,
      ],
      join(logs, "controller.log"),
    );
    const info = await waitFor(
      () => existsSync(ready) && JSON.parse(readFileSync(ready, "utf8")),
      `the controller's ready file\n${controller.text()}`,
    );
    ports = { grpc: info.grpc_port, http: info.http_port };
  };
  await startController();

  const agentProcs = [];
  for (let i = 0; i < agents; i++) {
    // The agent runs in its own PID namespace (as in deploy/quickstart.sh): whatever it does,
    // reboot(2) there can only end the namespace, never this machine. Not root: a user
    // namespace as well, so unshare is allowed. A flush profile needs the host's PID
    // namespace (tracefs filters on the host's pids; the agent refuses otherwise), so the
    // test that records one asks for it: that agent has no --reboot-command, so it has no
    // way to reboot and takes no multi-boot run.
    const namespace = hostPidNamespace
      ? []
      : [
          "unshare",
          ...(process.getuid?.() === 0 ? [] : ["--user", "--map-root-user"]),
          "--pid",
          "--fork",
          "--kill-child",
          "--mount-proc",
        ];
    const argv = [
      ...namespace,
      join(binDir, "tlbfleet-agent"),
      `--controller=127.0.0.1:${ports.grpc}`,
      `--state-dir=${join(dir, `agent${i}`)}`,
      "--label=browser=1",
      "--max-backoff-seconds=1",
    ];
    if (tokens.agent) {
      const file = join(dir, "agent.token");
      writeFileSync(file, `${tokens.agent}\n`, { mode: 0o600 });
      argv.push(`--token-file=${file}`);
    }
    agentProcs.push(new Daemon(`agent${i}`, argv, join(logs, `agent${i}.log`)));
  }

  const grpc = () => `127.0.0.1:${ports.grpc}`;
  /** Runs the CLI as `role` (its token in TLBFLEET_TOKEN), `input` on stdin; resolves to stdout. */
  const cli = (args, { role = "operator", input = "" } = {}) =>
    new Promise((resolveCli, reject) => {
      const child = spawn(join(binDir, "tlbfleet"), ["--controller", grpc(), ...args], {
        env: { ...process.env, TLBFLEET_TOKEN: tokens[role] ?? "" },
        stdio: ["pipe", "pipe", "pipe"],
      });
      const out = [];
      const err = [];
      child.stdout.on("data", (c) => out.push(c));
      child.stderr.on("data", (c) => err.push(c));
      child.on("error", reject);
      child.on("exit", (code) => {
        if (code === 0) resolveCli(Buffer.concat(out).toString());
        else reject(new Error(`tlbfleet ${args.join(" ")}: exit ${code}: ${Buffer.concat(err)}`));
      });
      child.stdin.end(input);
    });
  await waitFor(
    async () =>
      (await cli(["hosts", "--format", "json"])).split('"connected": true').length - 1 >= agents,
    `${agents} agent(s) connected`,
  );

  return {
    dir,
    tokens,
    cli,
    url: (path = "/") => `http://127.0.0.1:${ports.http}${path}`,
    signalAgent: (i, signal) => agentProcs[i].signal(signal),
    stopController: () => controller.stop(),
    startController,
    async stop() {
      for (const a of agentProcs) await a.stop();
      await controller.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

export async function launchBrowser() {
  return chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-default-apps",
      "--disable-sync",
      "--disable-domain-reliability",
      "--disable-client-side-phishing-detection",
      "--metrics-recording-only",
      "--no-first-run",
      "--no-pings",
      "--disable-features=Translate,OptimizationHints,MediaRouter,AutofillServerCommunication",
    ],
  });
}

/** A page whose console errors and CSP violations are collected (a test can assert none). */
export async function newPage(browser) {
  const context = await browser.newContext({
    viewport: { width: 1366, height: 900 },
    acceptDownloads: true,
  });
  const page = await context.newPage();
  page.problems = [];
  page.on("console", (m) => {
    if (m.type() === "error") page.problems.push(m.text());
  });
  page.on("pageerror", (e) => page.problems.push(String(e)));
  return { context, page };
}

export async function screenshot(page, name) {
  const dir = join(artifacts, "screenshots");
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}

export async function login(page, fleet, role) {
  await page.goto(fleet.url("/login"));
  await page.getByLabel("API token").fill(fleet.tokens[role]);
  await page.getByRole("button", { name: "Log in" }).click();
  await page.waitForURL((u) => !u.pathname.startsWith("/login"));
}

/**
 * A message printed with the .proto's field names (the CLI's JSON: `preserve_proto_field_names`)
 * in the JSON mapping's lowerCamelCase names (the HTTP API's), so the two can be compared.
 */
export function protoJsonNames(value) {
  if (Array.isArray(value)) return value.map(protoJsonNames);
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => [
      k.replace(/_([a-z0-9])/g, (_, c) => c.toUpperCase()),
      protoJsonNames(v),
    ]),
  );
}

/** Where two parsed JSON values differ, field by field: ["groups[0].stats[1].values[0]: 1 != 2"]. */
export function differences(a, b, path = "") {
  if (Array.isArray(a) && Array.isArray(b)) {
    const out = a.length === b.length ? [] : [`${path}: ${a.length} != ${b.length} elements`];
    for (let i = 0; i < Math.min(a.length, b.length); i++) {
      out.push(...differences(a[i], b[i], `${path}[${i}]`));
    }
    return out;
  }
  const isObject = (x) => x !== null && typeof x === "object" && !Array.isArray(x);
  if (isObject(a) && isObject(b)) {
    const out = [];
    for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) {
      const at = path ? `${path}.${key}` : key;
      if (!(key in a)) out.push(`${at}: missing on the left`);
      else if (!(key in b)) out.push(`${at}: missing on the right`);
      else out.push(...differences(a[key], b[key], at));
    }
    return out;
  }
  return Object.is(a, b) ? [] : [`${path}: ${JSON.stringify(a)} != ${JSON.stringify(b)}`];
}

/** Counts canvas pixels that are not the background: a chart that drew something. */
export async function inkedPixels(locator) {
  return locator
    .locator("canvas")
    .first()
    .evaluate((canvas) => {
      const ctx = canvas.getContext("2d");
      const { data } = ctx.getImageData(0, 0, canvas.width, canvas.height);
      let n = 0;
      for (let i = 0; i < data.length; i += 4) {
        const [r, g, b, a] = [data[i], data[i + 1], data[i + 2], data[i + 3]];
        if (a > 0 && !(r > 240 && g > 240 && b > 240)) n++;
      }
      return n;
    });
}
