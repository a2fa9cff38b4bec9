/* test_gpu_golden.c — the GPU report of a real H200 trace (testdata/gpu/torch_small.gtt, recorded
 * by tests/gpu/record_gpu.sh) must equal testdata/gpu/torch_small.gpu.expected byte for byte, so
 * CI checks GPU analysis without a GPU. `test_gpu_golden --update` rewrites the expected file. */
#include <stdlib.h>
#include <string.h>
#include "gpu.h"
#include "testhelp.h"

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	char *buf = NULL;
	size_t cap = 0, n = 0;
	for (;;) {
		if (n + 65536 > cap) {
			cap = cap ? cap * 2 : 131072;
			char *nb = realloc(buf, cap);
			if (!nb)
				break;
			buf = nb;
		}
		size_t k = fread(buf + n, 1, cap - n - 1, f);
		if (!k)
			break;
		n += k;
	}
	fclose(f);
	if (buf)
		buf[n] = 0;
	*len = n;
	return buf;
}

int main(int argc, char **argv)
{
	const char *root = getenv("GT_ROOT");
	char trace[4096], expected[4096], err[512];
	snprintf(trace, sizeof(trace), "%s/testdata/gpu/torch_small.gtt", root ? root : ".");
	snprintf(expected, sizeof(expected), "%s/testdata/gpu/torch_small.gpu.expected", root ? root : ".");
	FILE *probe = fopen(trace, "rb");
	if (!probe) {
		printf("SKIP: %s is not in the tree yet (record it with tests/gpu/record_gpu.sh)\n", trace);
		return 0;
	}
	fclose(probe);
	ana_opts o;
	ana_opts_init(&o);
	ana_model *m = ana_model_load(trace, &o, err, sizeof(err));
	th_check(m != NULL, "the GPU trace loads (%s)", m ? "ok" : err);
	if (!m)
		return th_report();
	char *out = NULL;
	size_t out_len = 0;
	FILE *f = open_memstream(&out, &out_len);
	ana_gpu_report(m, f, 20);
	fclose(f);
	th_check(m->kernels.n > 0 && m->apis.n > 0 && m->cuda_devices.n > 0, "trace has kernels (%zu), API calls (%zu) "
	         "and a device (%zu)", m->kernels.n, m->apis.n, m->cuda_devices.n);
	if (argc > 1 && strcmp(argv[1], "--update") == 0) {
		FILE *w = fopen(expected, "wb");
		th_check(w && fwrite(out, 1, out_len, w) == out_len && fclose(w) == 0, "wrote %s", expected);
	} else {
		size_t want_len = 0;
		char *want = slurp(expected, &want_len);
		th_check(want != NULL, "expected report %s exists", expected);
		int same = want && want_len == out_len && memcmp(want, out, out_len) == 0;
		if (!same && want) {
			/* show the first differing line */
			size_t i = 0, line = 1;
			while (i < want_len && i < out_len && want[i] == out[i])
				line += want[i++] == '\n';
			printf("first difference at line %zu:\n  want: %.*s\n  got:  %.*s\n", line,
			       (int)strcspn(want + i - (i && want[i - 1] != '\n' ? 0 : 0), "\n"), want + i,
			       (int)strcspn(out + i, "\n"), out + i);
		}
		th_check(same, "GPU report equals the expected one byte for byte (%zu vs %zu bytes)", out_len, want_len);
		free(want);
	}
	free(out);
	ana_model_free(m);
	return th_report();
}
