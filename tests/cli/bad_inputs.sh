# bad_inputs.sh — every tool on every file of testdata/bad/ (broken and hostile traces, folded
# stacks and perf script text; made by tests/unit/test_badgen.c), held to
# the file's class in testdata/bad/MANIFEST: never a signal or a hang, bounded memory, exit 2 with
# one clear line for broken input, exit 0 with a warning for a cut-off trace, and for hostile
# content output that is still valid (folded lines, well-formed XML, strict JSON, PNG).
. "$(dirname "$0")/lib.sh"
BAD=$GT_ROOT/testdata/bad
PY=$(command -v python3 || true)

# Memory bound: ulimit -v for normal builds; ASan reserves terabytes of address space, so under
# ASan the bound is the allocator's (a larger request returns NULL, which the tool must handle).
asan=0
if ldd "$GT_BIN/gt-analyze" 2>/dev/null | grep -q libasan; then asan=1; fi
if [ "$asan" = 1 ]; then
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}allocator_may_return_null=1:max_allocation_size_mb=1024:hard_rss_limit_mb=1536"
	MEMLIMIT=unlimited
else
	MEMLIMIT=$((1536 * 1024)) # KiB
fi

# input kind | name | output kind | command (IN = the input, OUT = an output file; stdout goes to
# OUT when the command has no OUT). Input kinds: gtt (traces), folded, perf (perf script text).
CMDS=(
	"gtt|report|text|gt-analyze report IN"
	"gtt|fold|folded|gt-analyze fold IN"
	"gtt|fold-threads|folded|gt-analyze fold IN --threads"
	"gtt|fold-python|folded|gt-analyze fold IN --python-only"
	"gtt|export-folded|folded|gt-analyze export IN --format folded -o OUT"
	"gtt|export-speedscope|json|gt-analyze export IN --format speedscope -o OUT"
	"gtt|export-chrome|json|gt-analyze export IN --format chrome -o OUT"
	"gtt|export-pprof|pprof|gt-analyze export IN --format pprof -o OUT"
	"gtt|flame|svg|gt-render flame IN -o OUT.svg"
	"gtt|flame-png|png|gt-render flame IN -o OUT.png"
	"gtt|timeline|svg|gt-render timeline IN -o OUT.svg"
	"folded|flame-folded|svg|gt-render flame IN -o OUT.svg"
	"folded|flame-folded-png|png|gt-render flame IN -o OUT.png"
	"perf|import-perf|folded|gt-analyze import-perf IN"
)

# A well-formed input of each kind: a command that fails on it is not checked (SKIP).
printf 'main;a;b 3\nmain;c 1\n' >"$TMP/control.folded"
printf 'prog 1/1 [000] 1.000000: 1000 cpu-clock:uhp: \n\t    401000 main+0x10 (/bin/prog)\n\n' >"$TMP/control.perf-script"
control() { case $1 in gtt) echo "$BAD/base.gtt" ;; folded) echo "$TMP/control.folded" ;; perf) echo "$TMP/control.perf-script" ;; esac; }
kind_of() { case $1 in *.gtt) echo gtt ;; *.folded) echo folded ;; *.perf-script) echo perf ;; esac; }

# run_tool IN OUTBASE WORDS...: runs one command under the limits; sets rc, out, err.
run_tool() {
	local in=$1 ob=$2; shift 2
	local argv=() w tool_out=""
	for w in "$@"; do
		case $w in
		gt-*) argv+=("$GT_BIN/$w") ;;
		IN) argv+=("$in") ;;
		OUT) tool_out=$ob.out; argv+=("$tool_out") ;;
		OUT.*) tool_out=$ob.${w#OUT.}; argv+=("$tool_out") ;;
		*) argv+=("$w") ;;
		esac
	done
	err=$ob.err out=${tool_out:-$ob.stdout}
	(ulimit -v "$MEMLIMIT"; exec timeout -s KILL 60 "${argv[@]}") >"$ob.stdout" 2>"$err" </dev/null
	rc=$?
}

first_err() { head -1 "$err" | head -c 300 | tr -c '[:print:]' '?'; }

# Which commands exist: the tool is built and the command works on the well-formed base trace.
ready=()
for c in "${CMDS[@]}"; do
	IFS='|' read -r ikind name kind cmd <<<"$c"
	bin=${cmd%% *}
	if [ ! -x "$GT_BIN/$bin" ]; then
		skip "$name: $bin not built"; continue
	fi
	read -r -a words <<<"$cmd"
	run_tool "$(control "$ikind")" "$TMP/probe-$name" "${words[@]}"
	if [ "$rc" -ge 124 ] || grep -aqE 'Sanitizer|runtime error' "$err"; then
		fail "$name: crashes on a well-formed $ikind input (exit $rc: $(grep -aE -m1 'Sanitizer|runtime error' "$err" | head -c 200))"
		continue
	elif [ "$rc" -ne 0 ]; then
		skip "$name: fails on a well-formed $ikind input (exit $rc: $(first_err)); not checked"
		continue
	fi
	ready+=("$c")
done
[ ${#ready[@]} -eq 0 ] && { skip "no tool can read a trace yet"; exit 0; }

validate=() # "kind path label" for the one python pass at the end
while read -r file cls what; do
	case $file in ''|'#'*) continue ;; esac
	for c in "${ready[@]}"; do
		IFS='|' read -r ikind name kind cmd <<<"$c"
		[ "$ikind" = "$(kind_of "$file")" ] || continue
		read -r -a words <<<"$cmd"
		ob=$TMP/$file-$name
		run_tool "$BAD/$file" "$ob" "${words[@]}"
		label="$name $file ($cls)"
		nerr=$(grep -c '' "$err")
		longest=$(awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }' "$err")
		if grep -aqE 'ERROR: (Address|Leak)Sanitizer|runtime error' "$err"; then
			fail "$label: $(grep -aE -m1 'ERROR: (Address|Leak)Sanitizer|runtime error' "$err" | head -c 250)"; continue
		fi
		if [ "$rc" -ge 124 ]; then
			case $rc in
			124|137) why="hung or ran out of time/memory (killed)" ;;
			126|127) why="could not be run (exit $rc)" ;;
			*) why="killed by signal $((rc - 128))" ;;
			esac
			fail "$label: $why; stderr: $(first_err)"; continue
		fi
		if [ "$rc" -eq 64 ]; then
			fail "$label: exit 64 (usage) on a file argument; stderr: $(first_err)"; continue
		fi
		ok_exit=0
		case $cls in
		ok) [ "$rc" -eq 0 ] && ok_exit=1 ;;
		truncated) [ "$rc" -eq 0 ] && [ "$nerr" -ge 1 ] && ok_exit=1 ;;
		broken) [ "$rc" -eq 2 ] && [ "$nerr" -ge 1 ] && [ "$nerr" -le 2 ] && [ "$longest" -le 400 ] && ok_exit=1 ;;
		empty) { [ "$rc" -eq 0 ] || { [ "$rc" -le 2 ] && [ "$nerr" -ge 1 ] && [ "$nerr" -le 2 ]; }; } && ok_exit=1 ;;
		hostile) { [ "$rc" -eq 0 ] || { [ "$rc" -eq 1 ] && [ "$nerr" -ge 1 ]; } ||
		           { [ "$rc" -eq 2 ] && [ "$nerr" -ge 1 ] && [ "$nerr" -le 2 ]; }; } && ok_exit=1 ;;
		esac
		if [ "$ok_exit" = 1 ]; then
			pass "$label: exit $rc, $nerr stderr line(s)"
		else
			fail "$label: exit $rc with $nerr stderr line(s) (longest $longest): $(first_err)"
			continue
		fi
		if [ "$rc" -le 1 ]; then
			# An empty result is fine only where there is nothing to show.
			case $cls in empty|truncated) allow_empty=1 ;; *) allow_empty=0 ;; esac
			validate+=("$kind $allow_empty $out $label")
		fi
	done
done <"$BAD/MANIFEST"

# Output validity, all files in one python run (strict parsers: a raw '<', '&', ']]>', control
# character or invalid UTF-8 in the SVG or JSON is a failure).
if [ -z "$PY" ]; then
	skip "python3 missing: outputs not validated"
	exit 0
fi
printf '%s\n' "${validate[@]}" | "$PY" -c '
import sys, json, re, gzip
import xml.etree.ElementTree as ET
folded = re.compile(rb"^[^\n]+ [0-9]+$")
for line in sys.stdin:
    kind, allow_empty, path, label = line.rstrip("\n").split(" ", 3)
    try:
        data = open(path, "rb").read()
    except OSError as e:
        print("FAIL: %s: no output (%s)" % (label, e)); continue
    why = None
    if not data:
        if allow_empty != "1":
            why = "empty output"
    elif kind == "text":
        pass
    elif kind == "folded":
        bad = [l for l in data.split(b"\n") if l and not folded.match(l)]
        if bad:
            why = "%d line(s) not \"stack count\", first: %r" % (len(bad), bad[0][:80])
    elif kind == "svg":
        try:
            ET.fromstring(data)
        except Exception as e:
            why = "not well-formed XML: %s" % e
    elif kind == "json":
        try:
            json.loads(data.decode("utf-8"))
        except Exception as e:
            why = "not strict JSON: %s" % str(e)[:120]
    elif kind == "png":
        if not data.startswith(b"\x89PNG\r\n\x1a\n"):
            why = "not a PNG"
    elif kind == "pprof":
        if data[:2] == b"\x1f\x8b":
            try:
                gzip.decompress(data)
            except Exception as e:
                why = "bad gzip: %s" % e
    print(("FAIL: %s: %s" % (label, why)) if why else ("PASS: %s: valid %s output (%d bytes)" % (label, kind, len(data))))
'
