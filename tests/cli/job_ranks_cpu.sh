#!/usr/bin/env bash
# job_ranks_cpu.sh — a 4-rank job on the CPU under one gt-record: tests/job/launch_ranks.sh starts
# 4 gt-pipeline processes (--backend cpu) with RANK=0..3 and GT_ROLE in their environment, each
# writing its own telemetry. The report's per-process table must show the 4 ranks with the right
# pids, their threads, CPU seconds matching each rank's own CPU telemetry, and per-process
# counters whose last tokens.trained is each rank's telemetry tokens.consumed.
. "$(dirname "$0")/lib.sh"
REC=$GT_BIN/gt-record ANA=$GT_BIN/gt-analyze PL=$GT_BIN/gt-pipeline
LAUNCH=$GT_ROOT/tests/job/launch_ranks.sh
[ -x "$REC" ] && [ -x "$ANA" ] && [ -x "$PL" ] || { skip "gt-record, gt-analyze or gt-pipeline not built"; exit 0; }
command -v python3 >/dev/null || { skip "python3 needed to read the telemetry"; exit 0; }

check_rc "4 ranks recorded under one gt-record (exit 0)" 0 "$REC" -q -F 199 -o "$TMP/job.gtt" -- \
	"$LAUNCH" 4 trainer -- "$PL" --backend cpu --seconds 1.5 --targets 2 --drafters 1 --quiet \
	--telemetry "$TMP/rank{RANK}.json"
check "each rank wrote its telemetry" test -s "$TMP/rank0.json" -a -s "$TMP/rank3.json"
"$ANA" report "$TMP/job.gtt" >"$TMP/report" 2>"$TMP/report.err"
check "the report has a per-process table before the thread table" \
	sh -c "grep -n '^Processes (' '$TMP/report' | cut -d: -f1 | { read a; b=\$(grep -n '^Threads (' '$TMP/report' | cut -d: -f1); test \"\$a\" -lt \"\$b\"; }"
python3 - "$TMP" >"$TMP/cmp" <<'PY'
import json, re, sys
tmp = sys.argv[1]
rep = open(tmp + "/report").read().splitlines()
procs, counters = {}, {}
sec = None
for l in rep:
    if l.startswith("Processes ("): sec = "p"; continue
    if l.startswith("Counters per process"): sec = "c"; continue
    if not l.startswith("  "): sec = None; continue
    m = re.match(r"\s+(\d+) rank (\d+)/4 L(\d+) trainer\s+(\d+)\s+(\d+)\s+(~?)([\d.]+)", l)
    if sec == "p" and m:
        procs[int(m.group(2))] = dict(pid=int(m.group(1)), local=int(m.group(3)), threads=int(m.group(4)),
                                      samples=int(m.group(5)), approx=m.group(6), cpu=float(m.group(7)))
    m = re.match(r"\s+tokens\.trained\s+(\d+) rank (\d+)/4 L\d+ trainer\s+([\d.e+]+)", l)
    if sec == "c" and m:
        counters[int(m.group(2))] = (int(m.group(1)), float(m.group(3)))
for r in range(4):
    t = json.load(open(f"{tmp}/rank{r}.json"))
    cpu = sum(th["cpu_ns"] for th in t["threads"]) / 1e9
    p = procs.get(r)
    if not p:
        print(f"rank {r}: missing from the table"); continue
    print(f"rank {r} pid {p['pid']} tele_pid {t['pid']} local {p['local']} threads {p['threads']} "
          f"tele_threads {len(t['threads'])} samples {p['samples']} cpu {p['cpu']:.3f}{p['approx']} tele_cpu {cpu:.3f} "
          f"tokens {counters.get(r, (0, -1))[1]:.0f} tele_tokens {t['tokens']['consumed']} counter_pid {counters.get(r, (0,0))[0]}")
PY
cat "$TMP/cmp"
for r in 0 1 2 3; do
	line=$(grep "^rank $r " "$TMP/cmp")
	f() { echo "$line" | awk -v k="$1" '{ for (i = 1; i < NF; i++) if ($i == k) { print $(i + 1); exit } }'; }
	check "rank $r: in the table with its own pid ($(f pid) = telemetry $(f tele_pid))" test -n "$(f pid)" -a "$(f pid)" = "$(f tele_pid)"
	check "rank $r: LOCAL_RANK $r" test "$(f local)" = "$r"
	check "rank $r: at least its telemetry's threads ($(f threads) >= $(f tele_threads))" test "$(f threads)" -ge "$(f tele_threads)"
	check "rank $r: sampled ($(f samples) samples)" test "$(f samples)" -gt 0
	c=$(f cpu); t=$(f tele_cpu)
	check "rank $r: CPU ${c} s from /proc matches its telemetry ${t} s (10% + 60 ms)" \
		awk -v c="${c#\~}" -v t="$t" 'BEGIN { d = c - t; if (d < 0) d = -d; exit !(t > 0 && d <= 0.1 * t + 0.06) }'
	check "rank $r: tokens.trained $(f tokens) = telemetry tokens.consumed $(f tele_tokens), counted in its own process" \
		sh -c "test '$(f tokens)' = '$(f tele_tokens)' -a '$(f counter_pid)' = '$(f pid)'"
done
check "the launcher itself is no rank (a process shown without identity, or hidden)" \
	sh -c "! grep -q 'launch_ranks.sh' '$TMP/report' || grep -E '^ +[0-9]+ -  .*launch_ranks' '$TMP/report' >/dev/null"
