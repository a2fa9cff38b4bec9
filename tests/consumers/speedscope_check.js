// speedscope_check.js — gt-analyze's exports opened in speedscope itself: the speedscope app from its
// npm package (tests/consumers/node_modules/speedscope), in Debian's headless Chromium driven by
// playwright-core (tests/browser/node_modules). Each file is imported through the app's file input,
// as a person would; the console is read for the importer's complaints ("Tried to end X when Y was
// on the top of the stack", frames left open, load failures), and the time-ordered view is checked
// by hovering: "NAME@F/R" expects row R (0 = the roots) at F of the width to be NAME, "@F/R" expects
// nothing there. Prints PASS:/FAIL: lines.
//   node speedscope_check.js FILE [NAME@F/R|@F/R ...] [-- FILE ...]
"use strict";
const path = require("path");

const root = path.resolve(__dirname, "..", "..");
const {chromium} = require(path.join(root, "tests/browser/node_modules/playwright-core"));
const app = path.join(root, "tests/consumers/node_modules/speedscope/dist/release/index.html");

let failed = 0;
function check(ok, what) {
	console.log((ok ? "PASS: " : "FAIL: ") + what);
	if (!ok) failed++;
}

// The files and their expectations: FILE EXPECT... [-- FILE EXPECT...]
const jobs = [];
for (const a of process.argv.slice(2)) {
	if (a === "--") continue;
	if (a.includes("@")) jobs[jobs.length - 1].expect.push(a);
	else jobs.push({file: a, expect: []});
}

async function openOne(browser, job) {
	const page = await browser.newPage({viewport: {width: 1200, height: 800}});
	const logs = [];
	page.on("console", (m) => logs.push(m.type() + ": " + m.text()));
	page.on("pageerror", (e) => logs.push("pageerror: " + e.message));
	await page.goto("file://" + app);
	await page.waitForSelector("input[type=file]", {state: "attached", timeout: 20000});
	await page.setInputFiles("input[type=file]", job.file);
	const name = path.basename(job.file);
	try {
		await page.waitForFunction(() => /Time Order/.test(document.body.innerText), null, {timeout: 20000});
	} catch (e) {
		check(false, `${name}: speedscope shows the profile (${logs.filter((l) => !/WebGL|GL Driver/.test(l)).slice(-3).join(" | ")})`);
		await page.close();
		return;
	}
	await page.waitForTimeout(500);
	const how = logs.find((l) => l.includes("Importing as")) || "?";
	check(true, `${name}: speedscope imports it (${how.replace(/^log: /, "")})`);
	const complaints = logs.filter((l) => /Tried to end|still open|Something went wrong|Failed to load|pageerror/.test(l));
	check(complaints.length === 0,
		`${name}: no importer complaint (${complaints.length}${complaints.length ? ": " + complaints[0] : ""})`);
	for (const e of job.expect) {
		const [want, where] = e.split("@");
		const [at, row] = where.split("/");
		const x = Math.round(parseFloat(at) * 1200), y = 152 + 20 * parseInt(row || "0", 10);
		await page.mouse.move(x, y);
		await page.waitForTimeout(250);
		const text = await page.evaluate(() => document.body.innerText.split("\n").slice(3).join(" | "));
		const got = text.replace(/^[0-9.]+(ms|s|us|µs)? \([0-9.]+%\) /, "").split(" | ")[0];
		check(want ? got === want : got === "",
			`${name}: time-ordered view at ${at} of the width, row ${row || 0}, shows ${want ? "'" + want + "'" : "nothing"} (hover: '${text}')`);
	}
	await page.close();
}

(async () => {
	const browser = await chromium.launch({executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
		args: ["--no-sandbox"]});
	try {
		for (const job of jobs) await openOne(browser, job);
	} finally {
		await browser.close();
	}
	process.exit(failed ? 1 : 0);
})().catch((e) => {
	console.log("FAIL: " + e.message);
	process.exit(1);
});
