/* test_fuzz_pyreader.c — replays testdata/bad/fuzz/pyreader (.pymem files: inputs that once broke the parser) through tests/fuzz/fuzz_pyreader.c. */
#include "../fuzz/fuzz_pyreader.c"
#define REPLAY_DIRS "testdata/bad/fuzz/pyreader"
#define REPLAY_SUFFIX ".pymem"
#include "../fuzz/replay.h"
