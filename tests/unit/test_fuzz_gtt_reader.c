/* test_fuzz_gtt_reader.c — replays testdata/bad, testdata/bad/fuzz/gtt_reader (.gtt files: inputs that once broke the parser) through tests/fuzz/fuzz_gtt_reader.c. */
#include "../fuzz/fuzz_gtt_reader.c"
#define REPLAY_DIRS "testdata/bad testdata/bad/fuzz/gtt_reader"
#define REPLAY_SUFFIX ".gtt"
#include "../fuzz/replay.h"
