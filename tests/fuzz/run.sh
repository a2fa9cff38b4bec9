#!/usr/bin/env bash
# run.sh — runs every libFuzzer target in $FUZZ_DIR (build/fuzz/fuzz) for SECONDS each, one after
# the other, growing a working corpus per target under build/fuzz/corpus/NAME. Seeds come from the
# " * Seeds: SUFFIX in DIR..." line of tests/fuzz/NAME.c: files under DIR (relative to the repository
# root) whose names end in SUFFIX, or, for SUFFIX "ELF", ELF files. A crash leaves its
# input in build/fuzz/crashes/ and makes this script exit 1 with the command that reproduces it.
# FUZZ_FRESH=1 (make fuzz-smoke) starts each target from its seeds in a temporary corpus instead:
# libFuzzer first replays the whole corpus, and a corpus grown by long runs made a 5 s smoke run
# take a minute per target.
#   tests/fuzz/run.sh SECONDS [NAME...]
set -u
cd "$(dirname "$0")/../.."
secs=${1:?usage: tests/fuzz/run.sh SECONDS [NAME...]}; shift
FUZZ_DIR=${FUZZ_DIR:-build/fuzz/fuzz}
work=build/fuzz
mkdir -p "$work/crashes" "$work/logs"
# Cairo's fontconfig keeps its caches until exit: the suppressions make-check-asan uses
export LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
tests/fuzz/mkseeds.sh
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
	for f in tests/fuzz/fuzz_*.c; do names+=("$(basename "$f" .c)"); done
fi
failed=0 npass=0 nfail=0
for n in "${names[@]}"; do
	bin=$FUZZ_DIR/$n
	if [ ! -x "$bin" ]; then
		echo "fuzz $n: not built ($bin missing)"; failed=1; nfail=$((nfail + 1)); continue
	fi
	corpus=$work/corpus/$n
	[ "${FUZZ_FRESH:-0}" = 1 ] && corpus=$(mktemp -d "${TMPDIR:-/tmp}/gt-fuzz-$n.XXXXXX")
	mkdir -p "$corpus"
	# Seeds: copy the matching files into the corpus (names by content, so re-runs add nothing).
	read -r suffix _in dirs <<<"$(sed -n 's|^ \* Seeds: ||p' "tests/fuzz/$n.c" | head -1)"
	nseed=0 maxlen=65536
	for d in $dirs; do
		[ -e "$d" ] || continue
		while IFS= read -r f; do
			if [ "$suffix" = ELF ]; then
				[ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ] || continue
			else
				case $f in *"$suffix") ;; *) continue ;; esac
			fi
			# Seeds above 1 MiB are skipped. Inputs are kept under 64 KiB (libFuzzer reads the
			# start of a larger seed) so each run stays fast, except for ELF files, whose
			# section headers sit at the end: there inputs may be as large as the largest seed.
			sz=$(stat -c %s "$f")
			[ "$sz" -le 1048576 ] || continue
			[ "$suffix" = ELF ] && [ "$sz" -gt "$maxlen" ] && maxlen=$sz
			cp -f "$f" "$corpus/seed-$(sha1sum "$f" | cut -c1-16)"
			nseed=$((nseed + 1))
		done < <(find -L "$d" -type f 2>/dev/null | sort)
	done
	log=$work/logs/$n.log
	start=$(date +%s)
	"$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024 \
		-max_len="$maxlen" -print_final_stats=1 -artifact_prefix="$work/crashes/$n-" "$corpus" >"$log" 2>&1
	rc=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
	cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
	printf 'fuzz %-22s %4ss  %8s runs  %-10s corpus %5d (%d seeds)  rc %d\n' "$n" "$(( $(date +%s) - start ))" \
		"${runs:-?}" "${cov:-cov: ?}" "$(ls "$corpus" | wc -l)" "$nseed" "$rc"
	[ "${FUZZ_FRESH:-0}" = 1 ] && rm -rf "$corpus"
	if [ "$rc" -ne 0 ]; then
		failed=1
		nfail=$((nfail + 1))
	else
		npass=$((npass + 1))
	fi
	if [ "$rc" -ne 0 ]; then
		grep -E '^(==[0-9]+==ERROR|SUMMARY|artifact_prefix|Test unit written)' "$log" | head -5 | sed 's/^/    /'
		art=$(sed -n 's/.*Test unit written to //p' "$log" | tail -1)
		[ -n "$art" ] && echo "    reproduce: $bin $art   (log: $log)"
	fi
done
echo "fuzz: $npass passed, $nfail failed"
exit $failed
