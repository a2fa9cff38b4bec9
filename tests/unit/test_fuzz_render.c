/* test_fuzz_render.c — replays testdata/bad and testdata/bad/fuzz/render (.gtt files: traces that
 * once broke a gt-render view) through tests/fuzz/fuzz_render.c. */
#define GT_FUZZ_REPLAY 1
#include "../fuzz/fuzz_render.c"
#define REPLAY_DIRS "testdata/bad testdata/bad/fuzz/render"
#define REPLAY_SUFFIX ".gtt"
#include "../fuzz/replay.h"
