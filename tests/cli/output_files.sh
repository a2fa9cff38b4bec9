# output_files.sh — what gt-analyze and gt-render do with the file they are told to write
# (analyze/outfile.h): a failed write (a full disk, simulated by a file-size limit of 0) exits 2
# with one line and leaves an existing FILE as it was and no file of ours behind; an input of the
# command or a recorded trace is never written over; a symbolic link at FILE is replaced, not
# followed; devices are written in place; a good write replaces FILE with the umask's mode.
. "$(dirname "$0")/lib.sh"
A=$GT_BIN/gt-analyze
R=$GT_BIN/gt-render
cp "$GT_ROOT/testdata/bad/base.gtt" "$TMP/t.gtt"
cp "$GT_ROOT/testdata/bad/hostile.perf-script" "$TMP/p.txt"
T=$TMP/t.gtt
"$A" fold "$T" -o "$TMP/f.folded" 2>/dev/null

# name | command writing to OUT (one per writer of the two tools)
WRITERS=(
	"fold|$A fold $T -o OUT"
	"export-folded|$A export $T --format folded -o OUT"
	"export-chrome|$A export $T --format chrome -o OUT"
	"export-speedscope|$A export $T --format speedscope -o OUT"
	"export-pprof|$A export $T --format pprof -o OUT"
	"diff|$A diff $T $TMP/f.folded -o OUT"
	"check-junit|$A check $T --golden $T --junit OUT"
	"import-perf|$A import-perf $TMP/p.txt -o OUT"
	"flame-svg|$R flame $T -o OUT.svg"
	"flame-png|$R flame $T -o OUT.png"
	"flame-pdf|$R flame $T -o OUT.pdf"
	"timeline-svg|$R timeline $T -o OUT.svg"
	"timeline-pdf|$R timeline $T -o OUT.pdf"
)
ext() { case "$1" in *OUT.svg*) echo .svg ;; *OUT.png*) echo .png ;; *OUT.pdf*) echo .pdf ;; esac; }

for w in "${WRITERS[@]}"; do
	name=${w%%|*} cmd=${w#*|} x=$(ext "$w")
	d=$TMP/$name; mkdir -p "$d"; out=$d/out$x
	# a disk that takes nothing: every write fails (EFBIG; SIGXFSZ ignored, which exec keeps)
	echo "the user's old file" >"$out"
	err=$( (trap '' XFSZ; ulimit -f 0; exec ${cmd//OUT/$d/out}) 2>&1 >/dev/null); rc=$?
	err=$(printf '%s\n' "$err" | grep -v 'warning:')
	check "$name: a failed write exits 2 (exit $rc)" [ "$rc" -eq 2 ]
	check "$name: a failed write says so in one line ($err)" [ "$(printf '%s\n' "$err" | grep -c .)" -eq 1 ]
	check "$name: a failed write leaves the existing file as it was" grep -qx "the user's old file" "$out"
	check "$name: a failed write leaves nothing of ours" [ "$(ls "$d" | wc -l)" -eq 1 ]
	# a good write replaces the file
	${cmd//OUT/$d/out} >/dev/null 2>&1; rc=$?
	check "$name: a good write exits 0 or 1 (exit $rc)" [ "$rc" -le 1 ]
	check "$name: a good write replaces the file" [ "$(head -c 19 "$out" | tr -d '\0')" != "the user's old file" ]
	# a trace is never written over (the input itself, or another trace at the output's name)
	cp "$T" "$out"
	check_rc "$name: a trace at the output's name is refused" 2 ${cmd//OUT/$d/out}
	check "$name: ... and kept" cmp -s "$T" "$out"
	grep -q 'groundtruth trace' "$TMP/err" && pass "$name: ... saying why" || fail "$name: refusal says $(head -c 200 "$TMP/err")"
	# a link at the output's name is replaced, its target untouched
	rm -f "$out"; echo precious >"$d/target"; ln -s "$d/target" "$out"
	${cmd//OUT/$d/out} >/dev/null 2>&1
	check "$name: a symbolic link at the output's name is not followed" grep -qx precious "$d/target"
	check "$name: ... it is replaced by the output" [ -f "$out" ] && [ ! -L "$out" ]
done

# the input named as the output (same file, any name for it)
cp "$T" "$TMP/in.gtt"
check_rc "fold: -o the input trace is refused" 2 "$A" fold "$TMP/in.gtt" -o "$TMP/in.gtt"
check "fold: ... the trace is kept" cmp -s "$T" "$TMP/in.gtt"
grep -q 'also an input' "$TMP/err" && pass "fold: ... saying why" || fail "fold: refusal says $(head -c 200 "$TMP/err")"
ln -s in.gtt "$TMP/alias.gtt"
check_rc "export: -o another name of the input is refused" 2 "$A" export "$TMP/in.gtt" --format chrome -o "$TMP/alias.gtt"
check "export: ... the trace is kept" cmp -s "$T" "$TMP/in.gtt"
cp "$TMP/p.txt" "$TMP/p2.txt"
check_rc "import-perf: -o its input is refused" 2 "$A" import-perf "$TMP/p2.txt" -o "$TMP/p2.txt"
check "import-perf: ... the input is kept" cmp -s "$TMP/p.txt" "$TMP/p2.txt"
cp "$TMP/f.folded" "$TMP/ff.svg"
check_rc "flame: -o its folded input is refused" 2 "$R" flame "$TMP/ff.svg" -o "$TMP/ff.svg"
check "flame: ... the input is kept" cmp -s "$TMP/f.folded" "$TMP/ff.svg"

# devices are written in place; a directory is refused
check_rc "fold -o /dev/null writes in place" 0 "$A" fold "$T" -o /dev/null
check "fold -o /dev/null: /dev/null is still a device" [ -c /dev/null ]
mkdir "$TMP/dir.svg"
check_rc "flame -o a directory exits 2" 2 "$R" flame "$T" -o "$TMP/dir.svg"
# the mode is what the umask gives, as with any new file
(umask 027; "$A" fold "$T" -o "$TMP/mode.folded" 2>/dev/null)
check "a new output's mode follows the umask (0640 under 027)" [ "$(stat -c %a "$TMP/mode.folded")" = 640 ]
check "no temporary file is left anywhere" [ -z "$(find "$TMP" -name '*.tmp-*')" ]

# a directory where no new file can be made (as another user): a new FILE is refused with one
# line; an existing writable FILE there is written in place
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null &&
   setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$A"; then
	mkdir -p "$TMP/ro"; chmod 755 "$TMP/ro" "$TMP"; chmod 644 "$T"
	: >"$TMP/ro/existing.folded"; chmod 666 "$TMP/ro/existing.folded"
	nob() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
	check_rc "read-only directory: a new output is refused" 2 nob "$A" fold "$T" -o "$TMP/ro/new.folded"
	check "read-only directory: ... in one line naming the directory" grep -q 'cannot create a file in its directory' "$TMP/err"
	check_rc "read-only directory: an existing writable output is written in place" 0 nob "$A" fold "$T" -o "$TMP/ro/existing.folded"
	check "read-only directory: ... with the folded stacks" grep -q ' [0-9]*$' "$TMP/ro/existing.folded"
else
	skip "read-only directory: needs root and setpriv (to run as nobody), and binaries nobody can run"
fi
