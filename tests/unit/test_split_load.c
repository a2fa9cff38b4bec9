/* test_split_load.c — the loader on format 1.2 traces, whose samples' registers and stack copies
 * lie in frames of their own (codec 2): report's passes read samples bare where they do not
 * unwind (pass 1, pass 3, and pass 2's second read, which takes the unwinds its first read
 * kept), so the outputs must be those of the same records in 1.1. A recording of four ranks on
 * the H200 (DWARF stacks, its binaries embedded: testdata/gpu) is written again as 1.2 and as 1.1:
 * `report` (streamed) and the kept model's report and fold are the same for both, but for the
 * format line. A stack copies' frame damaged with the chunk's checksum right, which pass 1 does
 * not expand: the load fails with the words pass 1 gives when it expands it (the kept model's),
 * and with --skip-corrupt the chunk is counted once and the reports agree. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fold.h"
#include "gtt.h"
#include "report.h"
#include "testhelp.h"

#define SRC "testdata/gpu/job_ranks_h200.gtt"

/* Every record of src written again to dst in format 1.minor. 0 or -1. */
static int rewrite(const char *src, const char *dst, uint32_t minor)
{
	int err = 0, rc = 0;
	gtt_record rec;
	gtt_reader *r = gtt_reader_open(src, &err);
	gtt_writer_opts o;
	gtt_writer_opts_init(&o);
	o.minor = minor;
	int fd = open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	gtt_writer *w = r && fd >= 0 ? gtt_writer_fdopen_opts(fd, 0, &o, &err) : NULL;
	if (!w)
		rc = -1;
	while (rc == 0 && (rc = gtt_reader_next(r, &rec)) > 0) {
		/* the writer interns callchains and names its compression itself */
		if (rec.tag == GTT_REC_CALLCHAIN || (rec.tag == GTT_REC_META && strcmp(rec.u.meta.key, "compression") == 0))
			rc = 0;
		else
			rc = gtt_write(w, &rec) == 0 ? 0 : -1;
	}
	if (gtt_writer_close(w) != 0 || !w)
		rc = -1;
	gtt_reader_close(r);
	return rc;
}

static char *report_of(const ana_model *m)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	ana_report(m, NULL, f);
	fclose(f);
	return buf;
}

static char *fold_of(const ana_model *m)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	ana_fold_opts fo;
	ana_folded fd;
	if (!f)
		return NULL;
	ana_fold_opts_init(&fo);
	if (ana_fold(m, &fo, &fd) == 0) {
		ana_fold_write(&fd, f);
		ana_folded_free(&fd);
	}
	fclose(f);
	return buf;
}

/* The report without its first line (the file's name) and its format line. */
static void strip(char *s)
{
	char *p = s ? strstr(s, "\nformat:    1.") : NULL;
	if (p)
		p[14] = 'x'; /* the minor version */
	if (s && (p = strchr(s, '\n')))
		memmove(s, p + 1, strlen(p + 1) + 1);
}

static ana_model *load(const char *path, int report_mode, int skip_corrupt, char *eb, size_t n)
{
	ana_opts o;
	ana_opts_init(&o);
	if (report_mode) {
		o.stream_cuda = ANA_STREAM_CUDA_REPORT;
		o.stream_samples = 1;
	}
	o.skip_corrupt = skip_corrupt;
	eb[0] = 0;
	return ana_model_load(path, &o, eb, n);
}

static void compare(const char *p12, const char *p11)
{
	char eb[256], eb2[256];
	ana_model *a = load(p12, 1, 0, eb, sizeof(eb)), *b = load(p11, 1, 0, eb2, sizeof(eb2));
	ana_model *ka = load(p12, 0, 0, eb, sizeof(eb)), *kb = load(p11, 0, 0, eb2, sizeof(eb2));
	th_check(a && b && ka && kb, "1.2 and 1.1 load both ways (%s%s)", eb, eb2);
	char *ra = a ? report_of(a) : NULL, *rb = b ? report_of(b) : NULL;
	char *rka = ka ? report_of(ka) : NULL, *rkb = kb ? report_of(kb) : NULL;
	char *fa = ka ? fold_of(ka) : NULL, *fb = kb ? fold_of(kb) : NULL;
	th_check(ra && strstr(ra, "format:    1.2") && rb && strstr(rb, "format:    1.1"), "the reports say 1.2 and 1.1");
	strip(ra), strip(rb), strip(rka), strip(rkb);
	th_check(ra && rb && strlen(ra) > 2000 && strcmp(ra, rb) == 0, "report (streamed): the same for 1.2 and 1.1");
	th_check(rka && rkb && strcmp(rka, rkb) == 0 && strcmp(ra, rka) == 0,
	         "the kept model's report: the same for both, and as streamed");
	th_check(fa && fb && strlen(fa) > 1000 && strcmp(fa, fb) == 0, "fold: the same for 1.2 and 1.1");
	free(ra), free(rb), free(rka), free(rkb), free(fa), free(fb);
	ana_model_free(a), ana_model_free(b), ana_model_free(ka), ana_model_free(kb);
}

/* The second codec-2 chunk's side frame damaged, its checksum made right. */
static int damage(const char *src, const char *dst)
{
	int fd = open(src, O_RDONLY), out = open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0600), k = 1, done = 0;
	off_t n = fd >= 0 ? lseek(fd, 0, SEEK_END) : -1;
	uint8_t *b = n > 0 ? malloc((size_t)n) : NULL;
	if (!b || out < 0 || pread(fd, b, (size_t)n, 0) != n)
		return -1;
	close(fd);
	for (size_t off = GTT_HEADER_LEN; !done && off + GTT_CHUNK_HEADER_LEN + GTT_PACKED_HEADER_LEN + 8 <= (size_t)n;) {
		uint8_t *h = b + off, *p = h + GTT_CHUNK_HEADER_LEN, *z = p + GTT_PACKED_HEADER_LEN;
		uint32_t len = (uint32_t)h[4] | (uint32_t)h[5] << 8 | (uint32_t)h[6] << 16 | (uint32_t)h[7] << 24;
		if (h[0] == GTT_REC_PACKED && p[0] == GTT_CODEC_ZSTD_SPLIT && k-- == 0) {
			uint32_t rzlen = (uint32_t)z[4] | (uint32_t)z[5] << 8 | (uint32_t)z[6] << 16 | (uint32_t)z[7] << 24;
			size_t side = GTT_PACKED_HEADER_LEN + 8 + rzlen, at = side + (len - side) / 2;
			p[at] ^= 0x5a;
			p[at + 1] ^= 0x33;
			uint32_t crc = gtt_crc32c(gtt_crc32c(0, h, 8), p, len);
			for (int i = 0; i < 4; i++)
				h[8 + i] = (uint8_t)(crc >> (8 * i));
			done = 1;
		}
		off += GTT_CHUNK_HEADER_LEN + len;
	}
	int rc = done && write(out, b, (size_t)n) == n ? 0 : -1;
	close(out);
	free(b);
	return rc;
}

static void damaged(const char *p12, const char *bad)
{
	char eb[256], eb2[256];
	th_check(damage(p12, bad) == 0, "a stack copies' frame damaged");
	ana_model *kept = load(bad, 0, 0, eb, sizeof(eb)), *piped = load(bad, 1, 0, eb2, sizeof(eb2));
	th_check(!kept && !piped && eb[0] && strcmp(eb, eb2) == 0 && strstr(eb, "corrupt chunk at byte"),
	         "report's load fails with the words of a pass 1 that expands it (%s | %s)", eb, eb2);
	ana_model_free(kept);
	ana_model_free(piped);
	kept = load(bad, 0, 1, eb, sizeof(eb));
	piped = load(bad, 1, 1, eb2, sizeof(eb2));
	char *a = kept ? report_of(kept) : NULL, *c = piped ? report_of(piped) : NULL;
	th_check(a && c && strcmp(a, c) == 0 && kept->n_corrupt == 1 && piped->n_corrupt == 1,
	         "--skip-corrupt: the chunk counted once (%llu, %llu), the reports the same",
	         kept ? (unsigned long long)kept->n_corrupt : 0ull, piped ? (unsigned long long)piped->n_corrupt : 0ull);
	free(a);
	free(c);
	ana_model_free(kept);
	ana_model_free(piped);
}

int main(void)
{
	char p12[] = "/tmp/gt-split-12-XXXXXX", p11[] = "/tmp/gt-split-11-XXXXXX", bad[] = "/tmp/gt-split-bad-XXXXXX";
	int f1 = mkstemp(p12), f2 = mkstemp(p11), f3 = mkstemp(bad);
	if (f1 < 0 || f2 < 0 || f3 < 0)
		return 1;
	close(f1), close(f2), close(f3);
	th_check(rewrite(SRC, p12, 2) == 0 && rewrite(SRC, p11, 1) == 0, "%s written again as 1.2 and 1.1", SRC);
	compare(p12, p11);
	damaged(p12, bad);
	if (!getenv("KEEP")) unlink(p12), unlink(p11), unlink(bad);
	return th_report();
}
