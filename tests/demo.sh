#!/usr/bin/env bash
# demo.sh — `make demo`: records the reference pipeline (CUDA when a GPU is present, CPU
# otherwise), writes build/demo/trace.gtt and build/demo/flame.svg, prints the report.
set -eu
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
BIN=$BUILD/bin
OUT=$BUILD/demo
mkdir -p "$OUT"
backend=cpu
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
	backend=cuda
fi
echo "== recording gt-pipeline --backend $backend (5 targets, 3 drafters) into $OUT/trace.gtt"
"$BIN/gt-record" -o "$OUT/trace.gtt" -F 199 -- \
	"$BIN/gt-pipeline" --backend "$backend" --seconds 3 --telemetry "$OUT/telemetry.json"
echo
echo "== gt-analyze report $OUT/trace.gtt"
"$BIN/gt-analyze" report "$OUT/trace.gtt"
"$BIN/gt-analyze" fold "$OUT/trace.gtt" >"$OUT/trace.folded"
"$BIN/gt-render" flame "$OUT/trace.gtt" -o "$OUT/flame.svg" --title "gt-pipeline ($backend)"
if "$BIN/gt-render" timeline "$OUT/trace.gtt" -o "$OUT/timeline.svg" 2>/dev/null; then
	echo "timeline: $OUT/timeline.svg"
fi
echo
echo "flame graph: $OUT/flame.svg (open it in a browser: click to zoom, Ctrl-F or the Search button to search)"
echo "folded stacks: $OUT/trace.folded; ground truth from the pipeline itself: $OUT/telemetry.json"
