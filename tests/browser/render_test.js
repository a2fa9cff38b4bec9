// render_test.js — opens gt-render SVGs in Debian's headless Chromium (playwright-core, no
// browser download) and checks them as a person would: click a frame and see it zoom, search
// and read the matched percentage, hover and read the tooltip. Prints PASS:/FAIL:/SKIP: lines.
//   node render_test.js --flame F.svg [--timeline T.svg] --shots DIR
"use strict";
const path = require("path");
const fs = require("fs");

const args = {};
for (let i = 2; i < process.argv.length; i += 2) args[process.argv[i].replace(/^--/, "")] = process.argv[i + 1];
let failed = 0;
function check(ok, what) {
	console.log((ok ? "PASS: " : "FAIL: ") + what);
	if (!ok) failed++;
}

// Centre of the frame whose tooltip starts with "name (", in page coordinates.
async function frameBox(page, name) {
	return page.evaluate((name) => {
		for (const g of document.querySelectorAll("#frames > g")) {
			const tip = g._tip !== undefined ? g._tip : (g.querySelector("title") || {}).textContent || "";
			if (tip.startsWith(name + " (")) {
				const r = g.querySelector("rect").getBoundingClientRect();
				return {x: r.x + r.width / 2, y: r.y + r.height / 2, w: r.width, display: g.style.display};
			}
		}
		return null;
	}, name);
}

async function testFlame(browser, file, shots) {
	const page = await browser.newPage({viewport: {width: 1200, height: 400}});
	const errors = [];
	page.on("pageerror", (e) => errors.push(e.message));
	await page.goto("file://" + path.resolve(file));
	await page.waitForFunction(() => typeof frames !== "undefined" && frames.length > 0);
	await page.screenshot({path: path.join(shots, "flame.png")});

	const before = await frameBox(page, "compute");
	const all = await frameBox(page, "all");
	check(before && all, "frames 'compute' and 'all' are on the page");
	if (!before || !all) return;
	check(Math.abs(before.w / all.w - 0.8) < 0.01, `compute is 80% of the root (${(before.w / all.w).toFixed(3)})`);

	// hover: our tooltip shows name, samples and percent
	const mm = await frameBox(page, "matmul");
	await page.mouse.move(mm.x, mm.y);
	const tip = await page.evaluate(() => {
		const t = document.getElementById("tip");
		return t && t.getAttribute("visibility") === "visible" ? t.textContent : "";
	});
	check(tip.includes("matmul (600 samples, 60.00%)"), `tooltip on hover: "${tip}"`);
	const details = await page.textContent("#details");
	check(details.includes("matmul (600 samples"), `details line on hover: "${details}"`);

	// click to zoom: compute fills the width, its children scale, unrelated frames hide
	await page.mouse.click(before.x, before.y);
	const z = await frameBox(page, "compute"), zm = await frameBox(page, "matmul"),
		zi = await frameBox(page, "idle");
	check(z && Math.abs(z.w - all.w) < 1, `clicked frame fills the width (${z && z.w.toFixed(1)} of ${all.w.toFixed(1)})`);
	check(zm && Math.abs(zm.w / z.w - 0.75) < 0.01, `child keeps its share of the zoomed frame (${zm && (zm.w / z.w).toFixed(3)})`);
	check(zi && zi.display === "none", "frames outside the zoomed one are hidden");
	const unz = await page.getAttribute("#unzoom", "opacity");
	check(unz === "1", "Reset Zoom appears");
	await page.screenshot({path: path.join(shots, "flame-zoomed.png")});

	// search through the button (a prompt), then read the matched share
	page.once("dialog", (d) => d.accept("^(matmul|gelu)$"));
	await page.click("#search");
	const matched = await page.textContent("#matched");
	check(matched.trim() === "Matched: 80.00%", `search shows the matched share: "${matched.trim()}"`);
	const fill = await page.evaluate(() => {
		for (const g of frames) if (info(g).name === "gelu") return info(g).r.getAttribute("fill");
		return "";
	});
	check(fill === "#e040e0", `matching frames are highlighted (${fill})`);
	await page.screenshot({path: path.join(shots, "flame-search.png")});

	// reset zoom restores the layout
	await page.click("#unzoom");
	const back = await frameBox(page, "compute"), bi = await frameBox(page, "idle");
	check(back && Math.abs(back.w - before.w) < 0.5 && bi && bi.display !== "none", "Reset Zoom restores the graph");
	check(errors.length === 0, `no script errors (${errors.join("; ")})`);
	await page.close();
}

async function testTimeline(browser, file, shots) {
	const page = await browser.newPage({viewport: {width: 1400, height: 900}});
	const errors = [];
	page.on("pageerror", (e) => errors.push(e.message));
	await page.goto("file://" + path.resolve(file));
	await page.waitForFunction(() => typeof spans !== "undefined");
	await page.screenshot({path: path.join(shots, "timeline.png")});
	// hover the widest kernel span and read its tooltip
	const box = await page.evaluate(() => {
		let best = null;
		for (const g of document.querySelectorAll(".data > g")) {
			const tip = g._tip !== undefined ? g._tip : (g.querySelector("title") || {}).textContent || "";
			if (!/\nkernel /.test(tip)) continue;
			const r = g.querySelector("rect").getBoundingClientRect();
			if (!best || r.width > best.w) best = {x: r.x + r.width / 2, y: r.y + r.height / 2, w: r.width, tip: tip};
		}
		return best;
	});
	check(box, "a kernel span is on the timeline");
	if (!box) return;
	await page.mouse.move(box.x, box.y);
	const tip = await page.evaluate(() => {
		const t = document.getElementById("tip");
		return t && t.getAttribute("visibility") === "visible" ? t.textContent : "";
	});
	const first = box.tip.split("\n")[0];
	check(tip.startsWith(first + "kernel ") && /kernel \d+(\.\d+)? (ms|us|s)/.test(tip), `timeline tooltip names the kernel and its duration: "${tip}"`);
	await page.screenshot({path: path.join(shots, "timeline-tooltip.png")});
	// drag to zoom: the axis must show a narrower window afterwards
	const span0 = await page.evaluate(() => view.t1 - view.t0);
	const plot = await page.evaluate(() => ({x0: +cfg.plotx0, x1: +cfg.plotx1, y: +cfg.ploty0 + 5}));
	await page.mouse.move(plot.x0 + (plot.x1 - plot.x0) * 0.25, plot.y);
	await page.mouse.down();
	await page.mouse.move(plot.x0 + (plot.x1 - plot.x0) * 0.5, plot.y, {steps: 5});
	await page.mouse.up();
	const span1 = await page.evaluate(() => view.t1 - view.t0);
	check(span1 < span0 * 0.3 && span1 > span0 * 0.2, `drag zooms into a quarter of the window (${span1} of ${span0})`);
	await page.screenshot({path: path.join(shots, "timeline-zoomed.png")});
	check(errors.length === 0, `no script errors on the timeline (${errors.join("; ")})`);
	await page.close();
}

(async () => {
	let pw;
	try {
		pw = require("playwright-core");
	} catch (e) {
		console.log("SKIP: playwright-core not installed (npm install in tests/browser)");
		return;
	}
	const exe = process.env.CHROMIUM || "/usr/bin/chromium";
	if (!fs.existsSync(exe)) {
		console.log("SKIP: no Chromium at " + exe);
		return;
	}
	fs.mkdirSync(args.shots, {recursive: true});
	const browser = await pw.chromium.launch({
		executablePath: exe,
		headless: true,
		args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
			"--disable-component-update", "--no-first-run"],
	});
	try {
		if (args.flame) await testFlame(browser, args.flame, args.shots);
		if (args.timeline) await testTimeline(browser, args.timeline, args.shots);
	} catch (e) {
		check(false, "browser test threw: " + e.message);
	} finally {
		await browser.close();
	}
	process.exitCode = failed ? 1 : 0;
})();
