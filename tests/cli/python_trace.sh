#!/usr/bin/env bash
# python_trace.sh — gt-analyze on a kept trace of a multi-threaded PyTorch script recorded on the
# GPU machine (Ubuntu's CPython 3.12.3, torch 2.11, attach mode, fp callchains, no symbol
# archive; tests/progs/py_torch.py): the Python section, classes and names stay right.
. "$(dirname "$0")/lib.sh"
ANA=$GT_BIN/gt-analyze T=$GT_ROOT/testdata/python/torch_py312.gtt ROLES=$GT_ROOT/testdata/python/torch_py312.roles
[ -x "$ANA" ] || { skip "gt-analyze not built"; exit 0; }
[ -f "$T" ] || { fail "testdata/python/torch_py312.gtt missing"; exit 0; }
tid() { awk -v r="$1" '$1 == r { print $2 }' "$ROLES"; }
py=$(tid pyloop) mm=$(tid cpu_mm) main=$(tid main)
check_rc "torch trace: gt-analyze report exits 0" 0 "$ANA" report "$T"
awk '/^Python and the GIL/ { on = 1 } /^== / && on && !/^== Python/ { on = 0 } on' "$TMP/out" >"$TMP/py"
col() { awk -v t="$1" '$2 == t && $1 ~ /^[0-9]+$/ { v = $NF; sub(/%$/, "", v); print v; exit }' "$TMP/py"; }
check "torch trace: Python section names CPython 3.12.3 and 594 stack reads" grep -q '^Python and the GIL (CPython 3.12.3, /usr/bin/python3.12; 594 stack reads)' "$TMP/py"
check "torch trace: pure-Python thread $py >= 90% GIL-held ($(col "$py")%)" awk -v h="$(col "$py")" 'BEGIN { exit !(h >= 90) }'
check "torch trace: CPU-matmul thread $mm <= 20% GIL-held ($(col "$mm")%)" awk -v h="$(col "$mm")" 'BEGIN { exit !(h != "" && h <= 20) }'
check "torch trace: GPU thread $main (cuda sync) <= 20% GIL-held ($(col "$main")%)" awk -v h="$(col "$main")" 'BEGIN { exit !(h != "" && h <= 20) }'
check "torch trace: python+GIL led by py_loop at py_torch.py:24/25" grep -Eq '^ +[0-9.]+%  py_loop \(py_torch\.py:2[45]\)$' "$TMP/py"
check "torch trace: the interpreter's switch counter is reported" grep -Eq 'GIL held [0-9.]+% of 2.00 s; .* [0-9.]+ switches/s' "$TMP/py"
"$ANA" fold --python-only --tid "$mm" "$T" >"$TMP/fold" 2>/dev/null
check "torch trace: --python-only stacks of the matmul thread end in cpu_matmul or torch's norm" \
	awk '{ n += $NF } $1 ~ /cpu_matmul(;Tensor\.norm;norm)?$/ { k += $NF } END { exit !(n > 0 && k == n) }' "$TMP/fold"
