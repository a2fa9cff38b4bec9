#!/usr/bin/env bash
# top_tmux.sh — gt-record --top in a real 80x30 terminal (tmux: send-keys, capture-pane) on
# tests/progs/gilmix.py: the live view has a row for each busy thread with the right GIL
# classes and hottest function, in 80 columns; t switches to the whole recording; q ends an
# attach recording cleanly (exit 0) and Ctrl-C a launched one, the terminal is given back
# (echo and line editing on), and the classes --top prints for the whole recording match
# gt-analyze report on the trace within 5 points for every thread with at least 20 samples.
. "$(dirname "$0")/lib.sh"
REC=$GT_BIN/gt-record ANA=$GT_BIN/gt-analyze G=$GT_ROOT/tests/progs/gilmix.py
[ -x "$REC" ] && [ -x "$ANA" ] || { skip "gt-record or gt-analyze not built"; exit 0; }
command -v tmux >/dev/null 2>&1 || { skip "tmux not installed (tests/deps.sh installs it)"; exit 0; }
case "$(uname -m)" in x86_64) ;; *) skip "--top unwinds DWARF samples on x86-64 only"; exit 0 ;; esac
PY=$(ls -d "${PYENV_ROOT:-/root/.pyenv}"/versions/3.12*/bin/python3.12 /usr/bin/python3.1[0-9] 2>/dev/null | head -1)
[ -n "$PY" ] || { skip "no CPython 3.10+ on this machine"; exit 0; }

S=gt-top-$$
pids=()
cleanup() {
	tmux kill-session -t "$S" 2>/dev/null
	tmux kill-session -t "$S-b" 2>/dev/null
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	rm -rf "$TMP"
}
trap cleanup EXIT
tid_of() { awk -v r="$1" '$1 == r { print $2 }' "$2"; }
screen() { tmux capture-pane -p -t "$1" >"$2"; }
wait_file() { for _ in $(seq "$2"); do [ -s "$1" ] && return 0; sleep 0.1; done; return 1; }

# --- attach mode, q ---
"$PY" "$G" 60 "$TMP/ready" >/dev/null 2>&1 &
tgt=$!
pids+=("$tgt")
wait_file "$TMP/ready" 200 || { fail "gilmix.py did not get ready"; exit 0; }
py=$(tid_of pyloop "$TMP/ready") nat=$(tid_of native "$TMP/ready")
tmux new-session -d -s "$S" -x 80 -y 30 \
	"'$REC' --top -p $tgt -o '$TMP/a.gtt' 2>'$TMP/a.err'; echo \$? >'$TMP/a.rc'; stty -a >'$TMP/a.stty'; sleep 60"
sleep 4.5
screen "$S" "$TMP/live"
row() { awk -v t="$1" '$1 == t' "$2"; }
head -1 "$TMP/live" | grep -q "^gt-record --top  pid $tgt" && grep -q '^ *TID NAME *CPU% SMPL PY+G NATG NOGL WAIT NOPY  HOTTEST' "$TMP/live" &&
	pass "live view: header and columns" || fail "live view: no header: $(head -8 "$TMP/live")"
long=$(awk 'length($0) > 80' "$TMP/live" | wc -l)
[ "$long" -eq 0 ] && sed -n 2p "$TMP/live" | grep -q '^[0-9]* s recorded' && pass "live view fits 80 columns (no line wrapped)" ||
	fail "live view overflows 80 columns"
r=$(row "$py" "$TMP/live")
echo "$r" | awk '{ exit !($3 >= 5 && $4 >= 2 && $5 >= 70) }' && echo "$r" | grep -q 'py_inner (gilmix\.py:' &&
	pass "live: the pure-Python thread: busy, python+GIL, py_inner ($(echo "$r" | cut -c1-60))" ||
	fail "live: pure-Python thread row: '$r'"
r=$(row "$nat" "$TMP/live")
echo "$r" | awk '{ exit !($3 >= 5 && $4 >= 2 && $7 >= 60) }' && echo "$r" | grep -q 'native_work' &&
	pass "live: the zlib thread: busy, GIL released, under native_work ($(echo "$r" | cut -c1-60))" ||
	fail "live: zlib thread row: '$r'"
tmux send-keys -t "$S" t
sleep 1.5
screen "$S" "$TMP/total"
grep -q 'whole recording' "$TMP/total" && row "$py" "$TMP/total" | awk '{ exit !($4 >= 10 && $5 >= 80) }' &&
	pass "t: the whole recording ($(row "$py" "$TMP/total" | awk '{ print $4 " samples" }'))" || fail "t: $(sed -n 2p "$TMP/total")"
tmux send-keys -t "$S" q
wait_file "$TMP/a.stty" 100
rc=$(cat "$TMP/a.rc" 2>/dev/null)
[ "$rc" = 0 ] && pass "q ends the attach recording: exit 0" || fail "q: exit '$rc': $(head -c 300 "$TMP/a.err")"
grep -Eq '(^| )icanon( |$)' "$TMP/a.stty" && grep -Eq '(^| )echo( |$)' "$TMP/a.stty" &&
	pass "the terminal is given back (icanon, echo)" || fail "terminal left raw: $(grep -o -- '-\?icanon\|-\?echo ' "$TMP/a.stty" | tr '\n' ' ')"
kill "$tgt" 2>/dev/null

# the classes over the whole recording against gt-analyze report on the same trace
if "$ANA" report "$TMP/a.gtt" >"$TMP/rep" 2>"$TMP/rep.err"; then
	pass "the trace recorded under --top reads back"
	awk '/^Python and the GIL/ { on = 1 } on && $1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ { gsub(/%/, ""); print $2, $(NF - 5), $(NF - 4), $(NF - 3), $(NF - 2), $(NF - 1) } /Top functions/ { on = 0 }' \
		"$TMP/rep" >"$TMP/rep.cls"
	awk '/^gt-record --top: GIL classes/ { on = 1; next } on && $1 ~ /^[0-9]+$/ && NF >= 8 { gsub(/%/, ""); print $1, $3, $4, $5, $6, $7 }' \
		"$TMP/a.err" >"$TMP/top.cls"
	n_cmp=0 bad=""
	while read -r tid n p1 p2 p3 p4; do
		[ "$n" -ge 20 ] || continue
		t=$(awk -v t="$tid" '$1 == t' "$TMP/top.cls")
		[ -n "$t" ] || { bad="$bad $tid(missing)"; continue; }
		n_cmp=$((n_cmp + 1))
		echo "$t $p1 $p2 $p3 $p4" | awk '{ for (k = 0; k < 4; k++) { d = $(3 + k) - $(7 + k); if (d < 0) d = -d; if (d > 5) exit 1 } }' ||
			bad="$bad $tid(top:$(echo "$t" | cut -d' ' -f3-6) report:$p1/$p2/$p3/$p4)"
	done <"$TMP/rep.cls"
	[ "$n_cmp" -ge 2 ] && [ -z "$bad" ] &&
		pass "--top's classes over the recording = gt-analyze report's within 5 points ($n_cmp threads: $(tr '\n' ';' <"$TMP/top.cls"))" ||
		fail "classes differ from the report:$bad (compared $n_cmp; top: $(tr '\n' ';' <"$TMP/top.cls") report: $(tr '\n' ';' <"$TMP/rep.cls"))"
else
	fail "gt-analyze report on the --top trace: $(head -c 300 "$TMP/rep.err")"
fi

# --- launch mode, Ctrl-C ---
rm -f "$TMP/ready"
tmux new-session -d -s "$S-b" -x 80 -y 30 \
	"'$REC' --top -o '$TMP/b.gtt' -- '$PY' '$G' 60 '$TMP/ready' 2>'$TMP/b.err'; echo \$? >'$TMP/b.rc'; stty -a >'$TMP/b.stty'; sleep 60"
wait_file "$TMP/ready" 200 || fail "launch: gilmix.py did not get ready"
sleep 2.5
screen "$S-b" "$TMP/live_b"
grep -q "^ *$(tid_of pyloop "$TMP/ready") " "$TMP/live_b" && pass "launch mode: the view shows the command's threads" ||
	fail "launch mode view: $(head -12 "$TMP/live_b")"
tmux send-keys -t "$S-b" C-c
wait_file "$TMP/b.stty" 150
# (not anchored: the command's KeyboardInterrupt traceback goes to the same stderr file and may
# end without a newline just before the table)
grep -q 'gt-record --top: GIL classes over the whole recording' "$TMP/b.err" && grep -Eq '(^| )icanon( |$)' "$TMP/b.stty" &&
	pass "Ctrl-C ends a launched recording: the table printed, the terminal given back (exit $(cat "$TMP/b.rc"))" ||
	fail "Ctrl-C: $(head -c 300 "$TMP/b.err")"
"$ANA" report "$TMP/b.gtt" >/dev/null 2>&1 && pass "... and its trace reads back" || fail "launch trace unreadable"

# no terminal
check_rc "--top without a terminal: exit 2" 2 setsid "$REC" --top -o "$TMP/c.gtt" -- true
grep -q -- '--top needs a terminal' "$TMP/err" && [ ! -e "$TMP/c.gtt" ] && pass "... one line, no trace left behind" ||
	fail "no terminal: $(cat "$TMP/err")"
check_rc "--top with --dump: 64" 64 "$REC" --top --dump -p 1
