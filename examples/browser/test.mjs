// Open the browser example's page in headless Chromium and check what it shows.
//
//   node examples/browser/test.mjs URL [SCREENSHOT]
//
// URL is what `cargo run -p zmtp-tokio --example tokio_browser` prints. The test waits (at
// most 20 s) until the page shows the REQ's reply over ws:// and over wss:// and at least
// two messages of its SUB, checks their text, writes a screenshot (default
// target/browser-test/page.png) and exits non-zero on any failure. Chromium is the
// system's (/usr/bin/chromium, or $CHROMIUM). It trusts the server's test certificate by
// its public key (--ignore-certificate-errors-spki-list), nothing else.
import { createHash, X509Certificate } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const [url, screenshotArg] = process.argv.slice(2);
if (!url) {
  console.error("usage: node test.mjs URL [SCREENSHOT]");
  process.exit(2);
}
const screenshot = resolve(screenshotArg ?? "target/browser-test/page.png");
const TIMEOUT_MS = 20_000;
const REQUEST = "hello from the browser";

// The base64 SHA-256 of the test certificate's public key, as Chromium pins it.
const here = dirname(fileURLToPath(import.meta.url));
const cert = new X509Certificate(readFileSync(join(here, "../../testkit/tls/server.pem")));
const spki = cert.publicKey.export({ type: "spki", format: "der" });
const pin = createHash("sha256").update(spki).digest("base64");

const profile = mkdtempSync(join(tmpdir(), "zmtp-browser-test-"));
// A fresh, empty profile for this run (playwright passes it as --user-data-dir).
const context = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    `--ignore-certificate-errors-spki-list=${pin}`,
  ],
  viewport: { width: 900, height: 700 },
});

const failures = [];
try {
  const page = context.pages()[0] ?? (await context.newPage());
  page.on("console", (msg) => console.log(`page console: ${msg.text()}`));
  page.on("pageerror", (err) => failures.push(`page error: ${err.message}`));
  await page.goto(url, { timeout: TIMEOUT_MS });

  // Done when the reply and two messages are there, or the page reports an error.
  try {
    await page.waitForFunction(
      () =>
        document.getElementById("status").textContent.startsWith("error") ||
        (document.getElementById("req-reply").textContent !== "" &&
          document.getElementById("wss-reply").textContent !== "" &&
          document.querySelectorAll("#sub-messages li").length >= 2),
      null,
      { timeout: TIMEOUT_MS },
    );
  } catch {
    failures.push(`the page was not done within ${TIMEOUT_MS / 1000} s`);
  }

  const status = await page.textContent("#status");
  const reply = await page.textContent("#req-reply");
  const wssReply = await page.textContent("#wss-reply");
  const messages = await page.$$eval("#sub-messages li", (items) =>
    items.map((li) => li.textContent),
  );
  console.log(`status: ${status}`);
  console.log(`REQ reply: ${JSON.stringify(reply)}`);
  console.log(`wss REQ reply: ${JSON.stringify(wssReply)}`);
  console.log(`SUB messages: ${JSON.stringify(messages)}`);

  if (status.startsWith("error")) failures.push(`the page reports: ${status}`);
  if (reply !== REQUEST) failures.push(`REQ reply ${JSON.stringify(reply)}, want ${JSON.stringify(REQUEST)}`);
  if (wssReply !== REQUEST) failures.push(`wss REQ reply ${JSON.stringify(wssReply)}, want ${JSON.stringify(REQUEST)}`);
  if (messages.length < 2) failures.push(`${messages.length} SUB messages, want at least 2`);
  // The PUB sends "news N" and "sport N" for N = 1, 2, ...; the page subscribed to "news".
  const numbers = messages.map((m) => /^news (\d+)$/.exec(m));
  if (numbers.some((m) => m === null)) {
    failures.push(`SUB messages other than "news N": ${JSON.stringify(messages)}`);
  } else if (numbers.some((m, i) => i > 0 && Number(m[1]) !== Number(numbers[i - 1][1]) + 1)) {
    failures.push(`SUB messages not consecutive: ${JSON.stringify(messages)}`);
  }

  mkdirSync(dirname(screenshot), { recursive: true });
  await page.screenshot({ path: screenshot, fullPage: true });
  console.log(`screenshot: ${screenshot}`);
} catch (err) {
  failures.push(String(err));
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}

if (failures.length > 0) {
  for (const f of failures) console.error(`FAIL: ${f}`);
  process.exit(1);
}
console.log("browser test passed");
