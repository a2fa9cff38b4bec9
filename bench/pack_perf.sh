#!/usr/bin/env bash
# pack_perf.sh [DIR [BINARY...]] — copies this machine's perf and every shared library it needs (ldd),
# glibc and the dynamic loader included, into DIR (default .perf/ in the repository, ignored by
# git) so that perf runs on a machine that has none (the GPU box: carry .perf/ along). Run perf
# there through DIR/perf: a wrapper that starts it with the bundled loader and --library-path,
# so that (a) perf's glibc is the one it was built for, whatever the host has, and (b) nothing
# leaks into the environment of the command perf launches (LD_LIBRARY_PATH would: torch would
# then load these libraries). ~35 MB. Each BINARY (e.g. build/bin/gt-analyze, to analyze big
# traces on the GPU box, which has no libdw) is packed beside it the same way, as DIR/NAME.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR=${1:-$ROOT/.perf}
PERF=$(readlink -f "$(command -v perf)")
[ -x "$PERF" ] || { echo "pack_perf: no perf here" >&2; exit 2; }
file -L "$PERF" 2>/dev/null | grep -q ELF || { echo "pack_perf: $PERF is not an ELF binary (a wrapper script?)" >&2; exit 2; }
rm -rf "$DIR"
mkdir -p "$DIR/bin" "$DIR/lib"
pack() { # BINARY NAME: it and its libraries into DIR, run through DIR/NAME with the bundled loader
	local bin=$1 name=$2 lib loader=
	cp -L "$bin" "$DIR/bin/$name"
	while read -r lib; do
		[ -n "$lib" ] || continue
		[ -f "$DIR/lib/$(basename "$lib")" ] || cp -L "$lib" "$DIR/lib/"
		case $(basename "$lib") in ld-linux*) loader=$(basename "$lib") ;; esac
	done < <(ldd "$bin" | awk '/=>/ && $3 ~ /^\// {print $3} $1 ~ /^\/.*ld-linux/ {print $1}')
	[ -n "$loader" ] || { echo "pack_perf: no dynamic loader in ldd's output for $bin" >&2; exit 2; }
	cat >"$DIR/$name" <<WRAP
#!/bin/sh
# $name from $(hostname), with its own loader and libraries
D=\$(cd "\$(dirname "\$0")" && pwd)
exec "\$D/lib/$loader" --library-path "\$D/lib" "\$D/bin/$name" "\$@"
WRAP
	chmod +x "$DIR/$name"
}
pack "$PERF" perf
"$DIR/perf" --version >/dev/null || { echo "pack_perf: the packed perf does not start" >&2; exit 2; }
shift || true
for b in "$@"; do
	[ -x "$b" ] || { echo "pack_perf: $b: no such program" >&2; exit 2; }
	pack "$b" "$(basename "$b")"
	# groundtruth's tools load libzstd at run time (not in ldd's list)
	z=$(ldconfig -p | awk '$1 == "libzstd.so.1" && /x86-64/ {print $NF; exit}')
	[ -n "$z" ] && [ ! -f "$DIR/lib/libzstd.so.1" ] && cp -L "$z" "$DIR/lib/libzstd.so.1"
	echo "pack_perf: also $DIR/$(basename "$b")"
done
echo "pack_perf: $("$DIR/perf" --version) with $(ls "$DIR/lib" | wc -l) libraries in $DIR ($(du -sh "$DIR" | cut -f1)); run $DIR/perf"
