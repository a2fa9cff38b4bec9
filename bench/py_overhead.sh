#!/usr/bin/env bash
# py_overhead.sh — what gt-record's Python reader costs (issue 13 item 2), measured three ways,
# every configuration interleaved with the others (the order rotates every repetition) and
# given as median and min-max over REPS repetitions:
#  1. the reader's own numbers per stack, from gt-record's end note, and process_vm_readv calls
#     counted by the kernel (perf stat, syscalls:sys_enter_process_vm_readv) over the stacks
#     read: bench/pywork.py (one thread), tests/progs/py_threads.py 32 20 (33 threads, ~23
#     frames each) and bench/gil_pingpong.py (8 threads handing the GIL over ~60 000 times/s),
#     under every CPython 3.10+ here;
#  2. where the cost lands: the recorder's own CPU time (/proc, the gt-record process alone)
#     against the workload's, and the reader's CPU per thread (stack loop, GIL poll) from its note;
#  3. the cost on the target: bench/pywork.py's wall time at 1 kHz (-F 999, frame pointers,
#     --python=on, as `make bench`) against no profiler, against Austin -i 1ms, and gt-record
#     with --python=off (the perf part alone); the same in DWARF mode (gt-record's default) with
#     and without Python (does the pair cost more than each alone?); and the achieved/intended
#     samples of each run.
# BASE=PATH (a gt-record from before the change) adds it to every table as "base"; SECTIONS
# ("1 3" by default) picks the parts to run (2 comes with 1).
# usage: bench/py_overhead.sh [REPS] (default 5)   env: BUILD (build), AUSTIN (/tmp/austin/austin),
#        BASE, PYTHONS (the interpreters; default every CPython 3.10+ here), ROUNDS (pywork, 60)
# A benchmark, not a test: it never fails on a number. On a shared machine, say the load.
set -u
cd "$(dirname "$0")/.."
REPS=${1:-5}
B=${BUILD:-build}/bin
AUSTIN=${AUSTIN:-/tmp/austin/austin}
BASE=${BASE:-}
ROUNDS=${ROUNDS:-60}
W=$(mktemp -d "${TMPDIR:-/tmp}/gt-pyov.XXXXXX"); trap 'rm -rf "$W"' EXIT
[ -x "$B/gt-record" ] && [ -x "$B/gt-analyze" ] || { echo "py_overhead: $B/gt-record not built" >&2; exit 2; }
PERF=$(command -v perf || true)
[ -x "$AUSTIN" ] || AUSTIN=
PYTHONS=${PYTHONS:-$(ls -d "${PYENV_ROOT:-/root/.pyenv}"/versions/3.1[0-9]*/bin/python3.1[0-9] /usr/bin/python3.1[0-9] 2>/dev/null)}
RES=$W/res
: >"$RES"
rotate() { local n=$1; shift; local a=("$@") k=${#a[@]} i; for ((i = 0; i < k; i++)); do echo "${a[$(((i + n) % k))]}"; done; }
# run_rec OUT CMD...: run a recorder command in the background; the CPU time (utime+stime, in
# ticks) of the recorder process alone (gt-record or austin: under perf stat, perf's child), read
# from /proc until it exits, into OUT.cpu
run_rec() {
	local out=$1; shift
	"$@" >"$out.out" 2>"$out.err" &
	local pid=$! c=0 v rp=
	while kill -0 "$pid" 2>/dev/null; do
		[ -z "$rp" ] && { rp=$(pgrep -P "$pid" -f 'gt-record|austin' | head -1); [ "$1" = "${PERF:-/}" ] || rp=$pid; }
		[ -n "$rp" ] && v=$(awk '{ print $14 + $15 }' "/proc/$rp/stat" 2>/dev/null) && c=$v
		sleep 0.02
	done
	wait "$pid"
	echo "$c" >"$out.cpu"
}
tick=$(getconf CLK_TCK)
put() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >>"$RES"; }
note_field() { # TRACE: the reader's end note numbers
	"$B/gt-analyze" report "$1" 2>/dev/null | sed -n 's/.*note (Python stacks): \(python 3[^:]*: [0-9]* stacks.*\)/\1/p' | head -1
}

SECTIONS=${SECTIONS:-1 3}
# ---- 1 + 2: the reader per stack, old and new, interleaved ----
recs=(new)
case " $SECTIONS " in *" 1 "*) ;; *) PYTHONS_1= ;; esac
[ -n "$BASE" ] && recs+=(base)
for py in ${PYTHONS_1-$PYTHONS}; do
	ver=$("$py" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])' 2>/dev/null) || continue
	for ((r = 0; r < REPS; r++)); do
		for wl in pywork threads pingpong; do
			for rec in $(rotate "$r" "${recs[@]}"); do
				bin=$B/gt-record
				[ "$rec" = base ] && bin=$BASE
				case $wl in
				pywork) cmd=("$py" bench/pywork.py "$ROUNDS") ;;
				threads) cmd=("$py" tests/progs/py_threads.py 32 20 3) ;;
				pingpong) cmd=("$py" bench/gil_pingpong.py 3) ;;
				esac
				pre=()
				[ -n "$PERF" ] && pre=("$PERF" stat -e syscalls:sys_enter_process_vm_readv -x, -o "$W/ps")
				run_rec "$W/r" "${pre[@]}" "$bin" -q --no-archive -F 999 --call-graph fp -o "$W/t.gtt" -- "${cmd[@]}"
				line=$(note_field "$W/t.gtt")
				stacks=$(echo "$line" | sed -n 's/.*: \([0-9]*\) stacks.*/\1/p')
				us=$(echo "$line" | sed -n 's/.* \([0-9.]*\) us and .*/\1/p')
				calls=$([ -n "$PERF" ] && awk -F, '/process_vm_readv/ { print $1 }' "$W/ps")
				cpu=$(awk -v t="$tick" '{ print $1 / t }' "$W/r.cpu")
				tcpu=$("$B/gt-analyze" report "$W/t.gtt" 2>/dev/null | sed -n 's/.*reader CPU: stacks \([0-9.]*\) s, GIL poll \([0-9.]*\) s.*/\1 \2/p' | head -1)
				key="$ver $wl"
				put "$key" "$rec" us "${us:-nan}"
				[ -n "$calls" ] && [ -n "$stacks" ] && [ "$stacks" -gt 0 ] &&
					put "$key" "$rec" calls_per_stack "$(awk -v c="$calls" -v s="$stacks" 'BEGIN { printf "%.3f", c / s }')"
				put "$key" "$rec" recorder_cpu_s "$cpu"
				[ -n "$tcpu" ] && put "$key" "$rec" stack_cpu_s "${tcpu% *}" && put "$key" "$rec" gil_cpu_s "${tcpu#* }"
			done
		done
	done
done

# ---- 3: the cost on the target at 1 kHz, against Austin (make bench's interpreters) ----
COSTPY=$(echo "$PYTHONS" | grep -E '^/usr/bin/python3\.11$|python3\.12$')
[ -n "$COSTPY" ] || COSTPY=$(echo "$PYTHONS" | head -1)
case " $SECTIONS " in *" 3 "*) ;; *) COSTPY= ;; esac
cfgs=(none gt gt-nopy gt-dwarf gt-dwarf-nopy)
[ -n "$BASE" ] && cfgs+=(base)
[ -n "$AUSTIN" ] && cfgs+=(austin)
for py in $COSTPY; do
	pyv=$("$py" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')
	for ((r = 0; r < REPS; r++)); do
		for cfg in $(rotate "$r" "${cfgs[@]}"); do
			case $cfg in
			none) pre=() ;;
			gt) pre=("$B/gt-record" -q -F 999 --call-graph fp --python=on --no-archive -o "$W/c.gtt" --) ;;
			gt-nopy) pre=("$B/gt-record" -q -F 999 --call-graph fp --python=off --no-archive -o "$W/c.gtt" --) ;;
			gt-dwarf) pre=("$B/gt-record" -q -F 999 --python=on --no-archive -o "$W/c.gtt" --) ;;
			gt-dwarf-nopy) pre=("$B/gt-record" -q -F 999 --python=off --no-archive -o "$W/c.gtt" --) ;;
			base) pre=("$BASE" -q -F 999 --call-graph fp --python=on --no-archive -o "$W/c.gtt" --) ;;
			austin) pre=("$AUSTIN" -i 1ms -o "$W/c.austin") ;;
			esac
			run_rec "$W/c" "${pre[@]}" "$py" bench/pywork.py "$ROUNDS"
			put "cost $pyv" "$cfg" "wall_s.$r" "$(awk '$1 == "wall_s" { print $2 }' "$W/c.out")"
			put "cost $pyv" "$cfg" "cpu_s.$r" "$(awk '$1 == "wall_s" { print $4 }' "$W/c.out")"
			[ "$cfg" != none ] && put "cost $pyv" "$cfg" "recorder_cpu_s.$r" "$(awk -v t="$tick" '{ print $1 / t }' "$W/c.cpu")"
			case $cfg in gt*|base)
				put "cost $pyv" "$cfg" "achieved_pct.$r" "$("$B/gt-analyze" report "$W/c.gtt" 2>/dev/null |
					sed -n 's/.*total: [0-9]* intended, [0-9]* received (\([0-9.]*\)%).*/\1/p' | head -1)" ;;
			esac
		done
	done
done

# ---- the tables ----
echo "# py_overhead.sh: $REPS interleaved repetitions; $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg) at the end; $(date -u '+%F %H:%M UTC'); $(git rev-parse --short HEAD 2>/dev/null)"
echo "# cells: median (min-max)"
python3 - "$RES" <<'PY'
import sys, statistics, collections
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    key, cfg, metric, v = line.rstrip("\n").split("\t")
    try:
        v = float(v)
    except ValueError:
        continue
    if v != v:
        continue
    rows[(key, cfg, metric.split(".")[0])].append((metric, v))
def cell(vals):
    vals = sorted(vals)
    return "%.2f (%.2f-%.2f)" % (statistics.median(vals), vals[0], vals[-1]) if vals else "-"
keys = sorted({k for k, c, m in rows if not k.startswith("cost")})
print("\n## the reader per stack (-F 999, frame pointers, --no-archive)\n")
print("| CPython workload | reader | us per stack | process_vm_readv per stack | stack loop CPU s | GIL poll CPU s | recorder CPU s |")
print("|---|---|---|---|---|---|---|")
for k in keys:
    for cfg in ("base", "new"):
        if not rows.get((k, cfg, "us")):
            continue
        g = lambda m: cell([v for _, v in rows.get((k, cfg, m), [])])
        print("| %s | %s | %s | %s | %s | %s | %s |" % (k, cfg, g("us"), g("calls_per_stack"), g("stack_cpu_s"), g("gil_cpu_s"), g("recorder_cpu_s")))
for k in sorted({k for k, c, m in rows if k.startswith("cost")}):
    print("\n## %s: bench/pywork.py wall time, cost paired against no profiler in the same repetition\n" % k)
    print("| profiler | wall s | wall cost % | workload CPU cost % | recorder CPU s | achieved/intended % |")
    print("|---|---|---|---|---|---|")
    base = {m.split(".")[1]: v for m, v in rows.get((k, "none", "wall_s"), [])}
    cbase = {m.split(".")[1]: v for m, v in rows.get((k, "none", "cpu_s"), [])}
    def paired(vals, ref):
        return [100 * (v / ref[m.split(".")[1]] - 1) for m, v in vals if m.split(".")[1] in ref and ref[m.split(".")[1]] > 0]
    for cfg in ("none", "gt", "base", "gt-nopy", "gt-dwarf", "gt-dwarf-nopy", "austin"):
        w = rows.get((k, cfg, "wall_s"))
        if not w:
            continue
        cost = paired(w, base) if cfg != "none" else []
        ccost = paired(rows.get((k, cfg, "cpu_s"), []), cbase) if cfg != "none" else []
        print("| %s | %s | %s | %s | %s | %s |" % (cfg, cell([v for _, v in w]), cell(cost) if cost else "-",
              cell(ccost) if ccost else "-", cell([v for _, v in rows.get((k, cfg, "recorder_cpu_s"), [])]),
              cell([v for _, v in rows.get((k, cfg, "achieved_pct"), [])])))
PY
