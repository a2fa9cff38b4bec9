/* gtt_stat.c — where the bytes of a trace go: per record kind, the records, their bytes before
 * compression and their share of the bytes on disk, and the growth in bytes per second of
 * recording. A packed chunk's stored bytes are split between its kinds in proportion to what
 * each kind's records of the chunk take compressed on their own (zstd, the writer's level): a
 * kind that compresses well is not charged for one that does not.
 *   gtt_stat TRACE            a table
 *   gtt_stat --tsv TRACE      "kind records raw_bytes disk_bytes" lines, then "total ..." lines
 * Both end with the embedded binaries ("binary PATH BYTES" in --tsv): which ones the archive's
 * bytes go to (their size before compression).
 * Exit 0, or 2 when the trace does not open or a chunk is corrupt. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gt_util.h"
#include "gtt.h"
#include "gtt_priv.h" /* the zstd loader, to weigh each kind's share of a block */

#define N_TAGS 64

typedef struct kind {
	uint64_t n, raw;
	double disk;
} kind;

static kind kinds[N_TAGS + 1]; /* the last one: tags >= N_TAGS */

/* The embedded binaries, by path (pieces of one binary share it) */
typedef struct binary {
	char *path;
	uint64_t bytes;
} binary;
static binary *bins;
static size_t n_bins, cap_bins;

static void add_binary(const gtt_archive *a)
{
	const char *path = a->path ? a->path : "";
	for (size_t i = 0; i < n_bins; i++)
		if (strcmp(bins[i].path, path) == 0) {
			bins[i].bytes += a->len;
			return;
		}
	if (GT_GROW(bins, cap_bins, n_bins + 1) != 0 || !(bins[n_bins].path = strdup(path)))
		return;
	bins[n_bins++].bytes = a->len;
}

static int bin_cmp(const void *x, const void *y)
{
	const binary *a = x, *b = y;
	return a->bytes < b->bytes ? 1 : a->bytes > b->bytes ? -1 : strcmp(a->path, b->path);
}
static enc chunk_raw[N_TAGS + 1]; /* this chunk's records of each kind */
static void *cctx;
static uint8_t *zbuf;
static size_t zcap;

/* What bytes take compressed on their own (their size when zstd is missing). */
static double weight(const enc *e)
{
	if (!e->n)
		return 0;
	size_t need = gtt_zstd_bound(e->n), out = 0;
	if (!cctx || need > zcap) {
		free(zbuf);
		zcap = need > (1u << 20) ? need : (1u << 20);
		zbuf = malloc(zcap);
	}
	if (!cctx || !zbuf || gtt_zstd_compress(cctx, zbuf, zcap, e->p, e->n, GTT_ZSTD_LEVEL_DEFAULT, &out) != 0)
		return (double)e->n;
	return (double)out;
}

static size_t slot(uint32_t tag)
{
	return tag < N_TAGS ? tag : N_TAGS;
}

static unsigned varint_len(uint64_t v)
{
	unsigned n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/* The chunk just finished: its stored bytes go to its kinds in proportion to their raw bytes. */
static void settle(uint64_t stored, int packed)
{
	double w[N_TAGS + 1], sum = 0;
	for (size_t i = 0; i <= N_TAGS; i++)
		sum += w[i] = packed ? weight(&chunk_raw[i]) : (double)chunk_raw[i].n;
	for (size_t i = 0; sum > 0 && i <= N_TAGS; i++)
		kinds[i].disk += (double)stored * w[i] / sum;
	for (size_t i = 0; i <= N_TAGS; i++)
		chunk_raw[i].n = 0;
}

/* The bytes of a sample of a codec-2 chunk (format 1.2) kept in its side section: its registers
 * and stack copy, which were in its body before (a 1.1 trace of the same records counts them so). */
static uint64_t side_bytes(const gtt_record *rec, const gtt_chunk_info *ci)
{
	if (rec->tag != GTT_REC_SAMPLE || ci->codec != GTT_CODEC_ZSTD_SPLIT)
		return 0;
	const gtt_sample *s = &rec->u.sample;
	return (s->flags & GTT_SAMPLE_REGS ? 8 * (uint64_t)s->n_regs : 0) + (s->flags & GTT_SAMPLE_STACK ? s->stack_len : 0);
}

static void add_raw(size_t k, const gtt_record *rec, uint64_t raw, uint64_t side)
{
	enc *e = &chunk_raw[k];
	uint64_t body = raw - side;
	if (enc_reserve(e, (size_t)raw) != 0)
		return;
	/* the body is what compresses; the framing costs its few bytes alike */
	memset(e->p + e->n, 0, (size_t)body - rec->len);
	if (rec->len)
		memcpy(e->p + e->n + body - rec->len, rec->raw, rec->len);
	e->n += (size_t)body;
	if (side) {
		const gtt_sample *s = &rec->u.sample;
		for (uint32_t i = 0; (s->flags & GTT_SAMPLE_REGS) && i < s->n_regs; i++, e->n += 8)
			le64(e->p + e->n, s->regs[i]);
		if ((s->flags & GTT_SAMPLE_STACK) && s->stack_len) {
			memcpy(e->p + e->n, s->stack, s->stack_len);
			e->n += s->stack_len;
		}
	}
}

/* The time a record is about, for the recording's span (0 when it has none). */
static uint64_t rec_time(const gtt_record *r)
{
	switch (r->tag) {
	case GTT_REC_SAMPLE: return r->u.sample.time_ns;
	case GTT_REC_SWITCH: return r->u.sw.time_ns;
	case GTT_REC_PY_STACK: return r->u.py_stack.time_ns;
	case GTT_REC_GIL: return r->u.gil.time_ns;
	case GTT_REC_THREAD_CPU: return r->u.thread_cpu.time_ns;
	case GTT_REC_CUDA_KERNEL: return r->u.kernel.start_ns;
	case GTT_REC_CUDA_API: return r->u.api.start_ns;
	case GTT_REC_CUDA_MEMCPY: return r->u.memcpy.start_ns;
	case GTT_REC_PROCESS: return r->u.process.time_ns;
	case GTT_REC_END: return r->u.end.time_ns;
	default: return 0;
	}
}

int main(int argc, char **argv)
{
	int tsv = argc == 3 && strcmp(argv[1], "--tsv") == 0, err = 0, rc;
	if (argc != 2 + tsv) {
		fprintf(stderr, "usage: gtt_stat [--tsv] TRACE\n");
		return GT_EXIT_USAGE;
	}
	const char *path = argv[1 + tsv];
	cctx = gtt_zstd_cctx_new();
	gtt_reader *r = gtt_reader_open(path, &err);
	if (!r) {
		fprintf(stderr, "gtt_stat: %s: %s\n", path, gtt_strerror(err));
		return GT_EXIT_BROKEN;
	}
	gtt_record rec;
	gtt_chunk_info ci, last = { .offset = UINT64_MAX };
	uint64_t t_min = UINT64_MAX, t_max = 0, n_chunks = 0, n_packed = 0, packed_raw = 0;
	while ((rc = gtt_reader_next(r, &rec)) != 0) {
		if (rc < 0) {
			fprintf(stderr, "gtt_stat: %s: %s at byte %" PRIu64 "\n", path, gtt_strerror(rc), gtt_reader_offset(r));
			gtt_reader_close(r);
			return GT_EXIT_BROKEN;
		}
		gtt_reader_chunk(r, &ci);
		if (ci.offset != last.offset) {
			if (last.offset != UINT64_MAX)
				settle(GTT_CHUNK_HEADER_LEN + (uint64_t)last.stored_len, last.tag == GTT_REC_PACKED);
			last = ci;
			n_chunks++;
			if (ci.tag == GTT_REC_PACKED) {
				n_packed++;
				packed_raw += ci.raw_len + (uint64_t)ci.side_len;
			}
		}
		uint64_t side = side_bytes(&rec, &ci);
		uint64_t raw = (rec.flags & GTT_RECF_PACKED) ? varint_len(rec.tag) + varint_len(rec.len + side) + rec.len + side
		                                             : GTT_CHUNK_HEADER_LEN + (uint64_t)rec.len;
		if (rec.tag == GTT_REC_ARCHIVE)
			add_binary(&rec.u.archive);
		kind *k = &kinds[slot(rec.tag)];
		k->n++;
		k->raw += raw;
		add_raw(slot(rec.tag), &rec, raw, side);
		uint64_t t = rec_time(&rec);
		if (t) {
			if (t < t_min)
				t_min = t;
			if (t > t_max)
				t_max = t;
		}
	}
	if (last.offset != UINT64_MAX)
		settle(GTT_CHUNK_HEADER_LEN + (uint64_t)last.stored_len, last.tag == GTT_REC_PACKED);
	uint32_t major, minor;
	gtt_reader_version(r, &major, &minor);
	uint64_t size = gtt_reader_size(r);
	double secs = t_max > t_min ? gt_ns_to_s(t_max - t_min) : 0;
	double accounted = 0, archive = kinds[GTT_REC_ARCHIVE].disk;
	uint64_t raw_total = 0, n_total = 0;
	for (size_t i = 0; i <= N_TAGS; i++) {
		accounted += kinds[i].disk;
		raw_total += kinds[i].raw;
		n_total += kinds[i].n;
	}
	double other = (double)size - accounted; /* header, index, skipped chunks */
	if (tsv) {
		for (size_t i = 0; i <= N_TAGS; i++)
			if (kinds[i].n)
				printf("%s\t%" PRIu64 "\t%" PRIu64 "\t%.0f\n", i < N_TAGS ? gtt_tag_name((uint32_t)i) : "other-tags",
				       kinds[i].n, kinds[i].raw, kinds[i].disk);
		printf("total_bytes\t%" PRIu64 "\n", size);
		printf("archive_bytes\t%.0f\n", archive);
		printf("record_bytes\t%.0f\n", (double)size - archive);
		printf("seconds\t%.3f\n", secs);
		printf("record_bytes_per_s\t%.0f\n", secs > 0 ? ((double)size - archive) / secs : 0);
		printf("format\t%u.%u\n", major, minor);
	} else {
		printf("%s: format %u.%u, %" PRIu64 " bytes, %.2f s of records, %" PRIu64 " chunks (%" PRIu64
		       " packed, %.1fx smaller than their %" PRIu64 " raw bytes)\n",
		       path, major, minor, size, secs, n_chunks, n_packed,
		       packed_raw ? (double)packed_raw / (double)(size - (uint64_t)other) : 1.0, packed_raw);
		printf("%-14s %12s %14s %14s %7s %12s\n", "kind", "records", "raw bytes", "disk bytes", "disk%", "disk B/s");
		for (size_t i = 0; i <= N_TAGS; i++)
			if (kinds[i].n)
				printf("%-14s %12" PRIu64 " %14" PRIu64 " %14.0f %6.1f%% %12.0f\n",
				       i < N_TAGS ? gtt_tag_name((uint32_t)i) : "other-tags", kinds[i].n, kinds[i].raw,
				       kinds[i].disk, 100 * kinds[i].disk / (double)size, secs > 0 ? kinds[i].disk / secs : 0);
		printf("%-14s %12s %14s %14.0f %6.1f%%\n", "(framing)", "", "", other, 100 * other / (double)size);
		printf("%-14s %12" PRIu64 " %14" PRIu64 " %14" PRIu64 "\n", "total", n_total, raw_total, size);
		printf("records without the archive: %.0f bytes, %.3f MB/s; archive %.2f MiB on disk\n",
		       (double)size - archive, secs > 0 ? ((double)size - archive) / secs / 1e6 : 0, archive / 1048576.0);
	}
	if (n_bins) /* (qsort of no array: undefined for NULL) */
		qsort(bins, n_bins, sizeof(*bins), bin_cmp);
	for (size_t i = 0; i < n_bins; i++) {
		if (tsv)
			printf("binary\t%s\t%" PRIu64 "\n", bins[i].path, bins[i].bytes);
		else
			printf("  embedded %10.2f MiB  %s\n", (double)bins[i].bytes / 1048576.0, bins[i].path);
		free(bins[i].path);
	}
	free(bins);
	gtt_reader_close(r);
	for (size_t i = 0; i <= N_TAGS; i++)
		free(chunk_raw[i].p);
	free(zbuf);
	gtt_zstd_cctx_free(cctx);
	return GT_EXIT_OK;
}
