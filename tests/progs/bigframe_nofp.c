// build: -O2 -fomit-frame-pointer
/* bigframe_nofp.c — tests/progs/bigframe.c built without frame pointers: nothing can find the
 * callers of its 128 KiB frame, and the analyzer must say so (tests/cli/analyze_truncated.sh). */
#include "bigframe.c"
