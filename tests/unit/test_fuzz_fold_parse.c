/* test_fuzz_fold_parse.c — replays testdata/bad/fuzz/fold_parse (.folded files: inputs that once broke the parser) through tests/fuzz/fuzz_fold_parse.c. */
#include "../fuzz/fuzz_fold_parse.c"
#define REPLAY_DIRS "testdata/bad testdata/bad/fuzz/fold_parse"
#define REPLAY_SUFFIX ".folded"
#include "../fuzz/replay.h"
