/* test_fuzz_analyze.c — replays testdata/bad and testdata/bad/fuzz/analyze (.gtt files: traces
 * that once broke a whole gt-analyze command) through tests/fuzz/fuzz_analyze.c. */
#define GT_FUZZ_REPLAY 1
#include "../fuzz/fuzz_analyze.c"
#define REPLAY_DIRS "testdata/bad testdata/bad/fuzz/analyze"
#define REPLAY_SUFFIX ".gtt"
#include "../fuzz/replay.h"
