#!/usr/bin/env bash
# pack_perf.sh [DIR] — copies this machine's perf and every shared library it needs (ldd),
# glibc and the dynamic loader included, into DIR (default .perf/ in the repository, ignored by
# git) so that perf runs on a machine that has none (the GPU box: carry .perf/ along). Run perf
# there through DIR/perf: a wrapper that starts it with the bundled loader and --library-path,
# so that (a) perf's glibc is the one it was built for, whatever the host has, and (b) nothing
# leaks into the environment of the command perf launches (LD_LIBRARY_PATH would: torch would
# then load these libraries). ~35 MB.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR=${1:-$ROOT/.perf}
PERF=$(readlink -f "$(command -v perf)")
[ -x "$PERF" ] || { echo "pack_perf: no perf here" >&2; exit 2; }
file -L "$PERF" 2>/dev/null | grep -q ELF || { echo "pack_perf: $PERF is not an ELF binary (a wrapper script?)" >&2; exit 2; }
rm -rf "$DIR"
mkdir -p "$DIR/bin" "$DIR/lib"
cp -L "$PERF" "$DIR/bin/perf"
loader=
while read -r lib; do
	[ -n "$lib" ] || continue
	cp -L "$lib" "$DIR/lib/"
	case $(basename "$lib") in ld-linux*) loader=$(basename "$lib") ;; esac
done < <(ldd "$PERF" | awk '/=>/ && $3 ~ /^\// {print $3} $1 ~ /^\/.*ld-linux/ {print $1}')
[ -n "$loader" ] || { echo "pack_perf: no dynamic loader found in ldd's output" >&2; exit 2; }
cat >"$DIR/perf" <<WRAP
#!/bin/sh
# perf from $(hostname) ($("$PERF" --version 2>/dev/null)), with its own loader and libraries
D=\$(cd "\$(dirname "\$0")" && pwd)
exec "\$D/lib/$loader" --library-path "\$D/lib" "\$D/bin/perf" "\$@"
WRAP
chmod +x "$DIR/perf"
"$DIR/perf" --version >/dev/null || { echo "pack_perf: the packed perf does not start" >&2; exit 2; }
echo "pack_perf: $("$DIR/perf" --version) with $(ls "$DIR/lib" | wc -l) libraries in $DIR ($(du -sh "$DIR" | cut -f1)); run $DIR/perf"
