#!/usr/bin/env bash
# deps.sh — installs the Debian packages the build and tests need, when run as root;
# otherwise prints the exact apt-get line and stops. Idempotent and quiet when all is there.
set -u
pkgs_needed() {
	local p
	for p in build-essential pkg-config libdw-dev libelf-dev zlib1g-dev libcairo2-dev \
	         poppler-utils libxml2-utils python3 chromium nodejs npm \
	         protobuf-compiler python3-jsonschema linux-perf libc6-dbg \
	         clang libclang-rt-14-dev golang-go elfutils tmux; do
		# nodejs from NodeSource bundles npm and conflicts with Debian's npm package
		[ "$p" = npm ] && command -v npm >/dev/null 2>&1 && continue
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || echo "$p"
	done
}
missing=$(pkgs_needed | tr '\n' ' ')
if [ -n "${missing// /}" ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "missing packages; run as root: apt-get update && apt-get install -y $missing" >&2
		exit 2
	fi
	echo "installing: $missing" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >/dev/null || { echo "apt-get update failed" >&2; exit 2; }
	# shellcheck disable=SC2086
	apt-get install -y -qq --no-install-recommends $missing >/dev/null || { echo "apt-get install failed: $missing" >&2; exit 2; }
fi
# playwright-core drives Debian's chromium in the browser tests (no browser download).
if [ -d tests/browser ] && [ ! -d tests/browser/node_modules/playwright-core ]; then
	(cd tests/browser && npm install --silent --no-audit --no-fund >/dev/null 2>&1) ||
		{ echo "npm install in tests/browser failed" >&2; exit 2; }
fi
# speedscope's package: its file-format schema (tests/cli/export_formats.sh) and the app itself,
# which tests/cli/export_consumers.sh opens the exports in. golang-go above brings go tool pprof.
if [ -d tests/consumers ] && [ ! -d tests/consumers/node_modules/speedscope ]; then
	(cd tests/consumers && npm install --silent --no-audit --no-fund >/dev/null 2>&1) ||
		{ echo "npm install in tests/consumers failed" >&2; exit 2; }
fi
exit 0
