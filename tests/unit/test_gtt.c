/* test_gtt.c — trace format 1.0 framing (one record per chunk): round trip of every record
 * kind, cut-off at every byte, corrupt chunks, bad headers, newer versions, concurrent writers.
 * Format 1.1 (packed chunks, the index) is tested in test_gtt_pack.c. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gtt.h"
#include "testhelp.h"

static char tmpl[] = "/tmp/gtt-test-XXXXXX";

/* A writer of format 1.0: one plain chunk per record. */
static gtt_writer *open_v10(int fd, int *err)
{
	gtt_writer_opts o;
	gtt_writer_opts_init(&o);
	o.minor = 0;
	return gtt_writer_fdopen_opts(fd, 0, &o, err);
}

/* Write one record of every kind; returns the number written. */
static int write_all_kinds(gtt_writer *w)
{
	int n = 0;
	gtt_record r;
	uint64_t ips[5] = { 0xffffffff81000010ull, 0x401000, 0x401100, 0x401200, 0x7f0000001234ull };
	uint64_t regs[3] = { 1, 2, 3 };
	uint8_t stack[40];
	for (int i = 0; i < 40; i++)
		stack[i] = (uint8_t)i;
	gtt_py_frame pf[2] = { { 0x1000, 42, GTT_PYFRAME_ENTRY }, { 0x2000, -1, 0 } };

#define W(TAG, FIELD, ...) do { memset(&r, 0, sizeof(r)); r.tag = TAG; r.u.FIELD = (typeof(r.u.FIELD)){ __VA_ARGS__ }; \
	th_check(gtt_write(w, &r) == 0, "write %s", gtt_tag_name(TAG)); n++; } while (0)
	W(GTT_REC_META, meta, .key = "command", .value = "a <b> & \"c\"");
	W(GTT_REC_PROCESS, process, .time_ns = 1, .pid = 10, .ppid = 1, .event = GTT_PROC_EXIT, .status = -3, .comm = "prog");
	W(GTT_REC_THREAD, thread, .time_ns = 2, .pid = 10, .tid = 11, .event = GTT_THREAD_NAME, .name = "worker");
	W(GTT_REC_MAPPING, mapping, .time_ns = 3, .pid = 10, .prot = 5, .start = 0x400000, .end = 0x500000,
	  .pgoff = 0x1000, .build_id_len = 3, .build_id = { 0xab, 0xcd, 0xef }, .path = "/bin/prog");
	W(GTT_REC_SAMPLE, sample, .time_ns = 4, .pid = 10, .tid = 11, .cpu = 1,
	  .flags = GTT_SAMPLE_REGS | GTT_SAMPLE_STACK, .period_ns = 10101010, .n_kernel = 1, .n_user = 4,
	  .ips = ips, .regs_abi = 2, .regs_mask = 0x7, .n_regs = 3, .regs = regs, .stack_len = 40, .stack = stack);
	W(GTT_REC_SWITCH, sw, .time_ns = 5, .pid = 10, .tid = 11, .cpu = 1, .kind = GTT_SWITCH_OUT_PREEMPT);
	W(GTT_REC_THREAD_CPU, thread_cpu, .time_ns = 6, .pid = 10, .tid = 11, .utime_ns = 100, .stime_ns = 200,
	  .nvcsw = 3, .nivcsw = 4, .state = 'R');
	W(GTT_REC_HEALTH, health, .time_ns = 7, .end_ns = 8, .source = GTT_SRC_PERF, .kind = GTT_HEALTH_LOST,
	  .tid = 11, .count = 99, .value = { 1, 2, 3, 4 }, .text = "lost");
	W(GTT_REC_TICKS, ticks, .start_ns = 9, .end_ns = 10, .source = GTT_SRC_GIL, .flags = GTT_TICKS_WHOLE,
	  .period_ns = 1000000, .intended = 1000, .done = 990, .late_p50_ns = 5, .late_p99_ns = 50, .late_max_ns = 500);
	W(GTT_REC_PY_CODE, py_code, .pid = 10, .code_id = 0x1000, .first_line = 40, .name = "f",
	  .qualname = "C.f", .filename = "x.py");
	W(GTT_REC_PY_STACK, py_stack, .time_ns = 11, .pid = 10, .tid = 11, .thread_id = 0xdead,
	  .flags = GTT_PYSTACK_HOLDS_GIL, .n_frames = 2, .frames = pf);
	W(GTT_REC_GIL, gil, .time_ns = 12, .pid = 10, .holder_tid = 11, .locked = 1, .switches = 77);
	W(GTT_REC_STRING, string, .pid = 10, .id = 5, .text = "_Z6kernelPf");
	W(GTT_REC_CUDA_DEVICE, cuda_device, .pid = 10, .device = 0, .cc_major = 9, .cc_minor = 0,
	  .sm_count = 132, .global_mem_bytes = 1ull << 37, .name = "NVIDIA H200", .uuid = "GPU-1");
	W(GTT_REC_CUDA_KERNEL, kernel, .start_ns = 13, .end_ns = 14, .pid = 10, .device = 0, .context = 1,
	  .stream = 7, .correlation = 99, .grid = { 1, 2, 3 }, .block = { 4, 5, 6 }, .shared_bytes = 7,
	  .registers = 8, .name_id = 5);
	W(GTT_REC_CUDA_MEMCPY, memcpy, .start_ns = 15, .end_ns = 16, .pid = 10, .stream = 7, .correlation = 100,
	  .kind = GTT_MEMCPY_DTOH, .flags = 1, .bytes = 4);
	W(GTT_REC_CUDA_MEMSET, memset, .start_ns = 17, .end_ns = 18, .pid = 10, .stream = 7, .value = 0, .bytes = 64);
	W(GTT_REC_CUDA_SYNC, sync, .start_ns = 19, .end_ns = 20, .pid = 10, .stream = 7, .kind = GTT_SYNC_STREAM);
	W(GTT_REC_CUDA_API, api, .start_ns = 21, .end_ns = 22, .pid = 10, .tid = 11, .correlation = 99,
	  .domain = GTT_API_RUNTIME, .cbid = 211, .status = 0, .name_id = 6);
	W(GTT_REC_CUDA_ALLOC, alloc, .time_ns = 23, .pid = 10, .op = GTT_ALLOC_ALLOC, .address = 0x7000,
	  .bytes = 1 << 20);
	W(GTT_REC_NVTX, nvtx, .start_ns = 24, .end_ns = 25, .pid = 10, .tid = 11, .kind = GTT_NVTX_RANGE, .name_id = 7);
	W(GTT_REC_COUNTER, counter, .time_ns = 26, .pid = 10, .name_id = 8, .value = 9.5);
	W(GTT_REC_ARCHIVE, archive, .build_id_len = 3, .build_id = { 0xab, 0xcd, 0xef }, .path = "/bin/prog",
	  .kind = GTT_ARCHIVE_ELF, .total_bytes = 100, .offset = 60, .len = 40, .data = stack);
	W(GTT_REC_END, end, .time_ns = 27, .reason = GTT_END_TARGET_EXIT, .status = 0, .n_samples = 1, .n_records = 23);
#undef W
	return n;
}

static void check_all_kinds(gtt_reader *r)
{
	gtt_record rec;
	int n = 0, ok = 1;
	int rc;
	while ((rc = gtt_reader_next(r, &rec)) == 1) {
		n++;
		switch (rec.tag) {
		case GTT_REC_META:
			ok &= strcmp(rec.u.meta.value, "a <b> & \"c\"") == 0;
			break;
		case GTT_REC_PROCESS:
			ok &= rec.u.process.status == -3 && strcmp(rec.u.process.comm, "prog") == 0;
			break;
		case GTT_REC_MAPPING:
			ok &= rec.u.mapping.build_id_len == 3 && rec.u.mapping.build_id[2] == 0xef &&
			      rec.u.mapping.end == 0x500000 && strcmp(rec.u.mapping.path, "/bin/prog") == 0;
			break;
		case GTT_REC_SAMPLE: {
			const gtt_sample *s = &rec.u.sample;
			ok &= s->n_kernel == 1 && s->n_user == 4 && s->ips[0] == 0xffffffff81000010ull &&
			      s->ips[4] == 0x7f0000001234ull && s->n_regs == 3 && s->regs[2] == 3 &&
			      s->stack_len == 40 && s->stack[39] == 39 && s->period_ns == 10101010;
			break;
		}
		case GTT_REC_HEALTH:
			ok &= rec.u.health.count == 99 && rec.u.health.value[3] == 4 && strcmp(rec.u.health.text, "lost") == 0;
			break;
		case GTT_REC_TICKS:
			ok &= rec.u.ticks.late_max_ns == 500 && rec.u.ticks.done == 990;
			break;
		case GTT_REC_PY_STACK:
			ok &= rec.u.py_stack.n_frames == 2 && rec.u.py_stack.frames[0].line == 42 &&
			      rec.u.py_stack.frames[1].line == -1 && rec.u.py_stack.frames[1].code_id == 0x2000;
			break;
		case GTT_REC_CUDA_KERNEL:
			ok &= rec.u.kernel.grid[2] == 3 && rec.u.kernel.block[0] == 4 && rec.u.kernel.name_id == 5;
			break;
		case GTT_REC_COUNTER:
			ok &= rec.u.counter.value == 9.5;
			break;
		case GTT_REC_ARCHIVE:
			ok &= rec.u.archive.len == 40 && rec.u.archive.offset == 60 && rec.u.archive.data[1] == 1;
			break;
		case GTT_REC_END:
			ok &= rec.u.end.n_records == 23;
			break;
		default:
			break;
		}
	}
	th_check(rc == 0, "reader ends cleanly (rc %d)", rc);
	th_check(n == 24, "all 24 record kinds read back (%d)", n);
	th_check(ok, "decoded fields equal what was written");
	th_check(!gtt_reader_truncated(r), "whole trace is not reported truncated");
}

static uint8_t *slurp_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	*len = (size_t)ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *p = malloc(*len ? *len : 1);
	if (fread(p, 1, *len, f) != *len) {
		free(p);
		p = NULL;
	}
	fclose(f);
	return p;
}

/* Counts whole records in buf[0..len); -1 on error. */
static int count_records(const uint8_t *buf, size_t len, int *truncated)
{
	int err = 0, n = 0, rc;
	gtt_reader *r = gtt_reader_open_mem(buf, len, &err);
	if (!r)
		return err;
	gtt_record rec;
	while ((rc = gtt_reader_next(r, &rec)) == 1)
		n++;
	*truncated = gtt_reader_truncated(r);
	gtt_reader_close(r);
	return rc < 0 ? rc : n;
}

struct thr_arg { gtt_writer *w; uint32_t tid; };
static void *thr_write(void *p)
{
	struct thr_arg *a = p;
	uint64_t ip = 0x1234;
	for (int i = 0; i < 5000; i++) {
		gtt_record r = { .tag = GTT_REC_SAMPLE };
		r.u.sample = (gtt_sample){ .time_ns = (uint64_t)i, .pid = 1, .tid = a->tid, .n_user = 1, .ips = &ip };
		gtt_write(a->w, &r);
	}
	return NULL;
}

int main(void)
{
	int fd = mkstemp(tmpl), err = 0;
	th_check(fd >= 0, "temp file");
	gtt_writer *w = open_v10(fd, &err);
	th_check(w != NULL, "writer opens");
	int n = write_all_kinds(w);
	th_check(gtt_writer_records(w) == (uint64_t)n, "writer counts records");
	th_check(gtt_writer_close(w) == 0, "writer closes without error");

	gtt_reader *r = gtt_reader_open(tmpl, &err);
	th_check(r != NULL, "reader opens the file (%s)", gtt_strerror(err));
	if (r) {
		uint32_t maj, min;
		gtt_reader_version(r, &maj, &min);
		th_check(maj == GTT_VERSION_MAJOR && min == 0, "version %u.%u", maj, min);
		check_all_kinds(r);
		gtt_reader_rewind(r);
		gtt_record rec;
		th_check(gtt_reader_next(r, &rec) == 1 && rec.tag == GTT_REC_META, "rewind restarts at the first chunk");
		gtt_reader_close(r);
	}

	size_t len = 0;
	uint8_t *buf = slurp_file(tmpl, &len);
	th_check(buf && len > 100, "trace file has content (%zu bytes)", len);

	/* Cut off at every byte: never an error, the count of whole chunks only grows. */
	int bad = 0, prev = 0, nontrunc = 0;
	for (size_t cut = 1; buf && cut < len; cut++) {
		uint8_t *copy = malloc(cut); /* exact-size copy so ASan catches overreads */
		memcpy(copy, buf, cut);
		int tr = 0, k = count_records(copy, cut, &tr);
		if (k < 0 || k < prev || k > n)
			bad++;
		if (!tr)
			nontrunc++; /* only cuts exactly at chunk boundaries are whole */
		prev = k < 0 ? prev : k;
		free(copy);
	}
	th_check(bad == 0, "every cut-off prefix reads back to its last whole chunk (%d bad)", bad);
	th_check(nontrunc == n, "exactly the %d chunk boundaries are read as whole traces (%d)", n, nontrunc);

	/* One flipped payload byte in every chunk position: a checksum error, then reading goes on. */
	if (buf) {
		uint8_t *copy = malloc(len);
		memcpy(copy, buf, len);
		copy[GTT_HEADER_LEN + GTT_CHUNK_HEADER_LEN + 2] ^= 0x40; /* inside the first payload */
		gtt_reader *rc = gtt_reader_open_mem(copy, len, &err);
		gtt_record rec;
		int first = gtt_reader_next(rc, &rec);
		int second = gtt_reader_next(rc, &rec);
		th_check(first == GTT_ECORRUPT, "flipped byte is a corrupt chunk (%d)", first);
		th_check(second == 1 && rec.tag == GTT_REC_PROCESS, "reading goes on after a corrupt chunk");
		gtt_reader_close(rc);
		/* An impossible length stops reading with an error, never an allocation. */
		memcpy(copy, buf, len);
		copy[GTT_HEADER_LEN + 7] = 0x7f;
		rc = gtt_reader_open_mem(copy, len, &err);
		th_check(gtt_reader_next(rc, &rec) == GTT_ECORRUPT, "huge length is corrupt");
		th_check(gtt_reader_next(rc, &rec) == 0, "and reading stops there");
		gtt_reader_close(rc);
		/* A newer major version is refused with its own error. */
		memcpy(copy, buf, len);
		copy[8] = GTT_VERSION_MAJOR + 1;
		th_check(gtt_reader_open_mem(copy, len, &err) == NULL && err == GTT_EVERSION, "newer major version refused");
		/* A newer minor version with an unknown tag is read, the tag skipped. */
		free(copy);
	}

	/* Bad headers. */
	th_check(gtt_reader_open_mem("", 0, &err) == NULL && err == GTT_EEMPTY, "empty input");
	th_check(gtt_reader_open_mem("hello world, not a trace", 24, &err) == NULL && err == GTT_EFORMAT, "text is not a trace");
	th_check(gtt_reader_open("/nonexistent/x.gtt", &err) == NULL && err == GTT_EIO, "missing file is an I/O error");

	/* Unknown tags from a newer minor version pass through raw. */
	{
		char path[] = "/tmp/gtt-test2-XXXXXX";
		int fd2 = mkstemp(path);
		gtt_writer *w2 = open_v10(fd2, &err);
		th_check(gtt_write_raw(w2, 999, "abc", 3) == 0, "raw chunk with unknown tag");
		gtt_writer_close(w2);
		gtt_reader *r2 = gtt_reader_open(path, &err);
		gtt_record rec;
		th_check(r2 && gtt_reader_next(r2, &rec) == 1 && rec.tag == 999 && rec.len == 3 &&
		         memcmp(rec.raw, "abc", 3) == 0, "unknown tag returned raw");
		gtt_reader_close(r2);
		unlink(path);
	}

	/* Payloads shorter than the kind needs are undecodable, not crashes. */
	{
		gtt_record rec;
		void *scratch = NULL;
		size_t cap = 0;
		uint8_t shortp[6] = { 1, 2, 3, 4, 5, 6 };
		int bad_short = 0;
		for (uint32_t tag = 1; tag <= 31; tag++)
			if (strcmp(gtt_tag_name(tag), "unknown") && tag != GTT_REC_PACKED && tag != GTT_REC_INDEX &&
			    gtt_decode(tag, shortp, sizeof(shortp), &rec, &scratch, &cap) >= 0)
				bad_short++;
		th_check(bad_short == 0, "6-byte payloads are refused by every known kind (%d accepted)", bad_short);
		uint8_t huge[40] = { 0 };
		huge[32] = 0xff; huge[33] = 0xff; huge[34] = 0xff; huge[35] = 0x7f; /* n_kernel = 2^31 */
		th_check(gtt_decode(GTT_REC_SAMPLE, huge, sizeof(huge), &rec, &scratch, &cap) == GTT_EINVAL,
		         "sample claiming 2^31 frames is refused");
		free(scratch);
	}

	/* Concurrent writers never interleave bytes inside a chunk. */
	{
		char path[] = "/tmp/gtt-test3-XXXXXX";
		int fd3 = mkstemp(path);
		gtt_writer *w3 = open_v10(fd3, &err);
		pthread_t t[4];
		struct thr_arg a[4];
		for (int i = 0; i < 4; i++) {
			a[i] = (struct thr_arg){ w3, (uint32_t)(i + 1) };
			pthread_create(&t[i], NULL, thr_write, &a[i]);
		}
		for (int i = 0; i < 4; i++)
			pthread_join(t[i], NULL);
		th_check(gtt_writer_close(w3) == 0, "concurrent writer closes");
		gtt_reader *r3 = gtt_reader_open(path, &err);
		gtt_record rec;
		int k = 0, rc;
		while ((rc = gtt_reader_next(r3, &rec)) == 1)
			k++;
		th_check(rc == 0 && k == 20000, "4 threads x 5000 records all read back (%d, rc %d)", k, rc);
		gtt_reader_close(r3);
		unlink(path);
	}

	th_check(gtt_crc32c(0, "123456789", 9) == 0xE3069283u, "CRC-32C check value");
	th_check(gtt_crc32c_sw(0, "123456789", 9) == 0xE3069283u, "table CRC-32C check value");
	{
		uint8_t rnd[4099];
		int same = 1;
		for (size_t i = 0; i < sizeof(rnd); i++)
			rnd[i] = (uint8_t)(i * 2654435761u >> 13);
		for (size_t off = 0; off < 9; off++)
			for (size_t k = 0; k + off <= sizeof(rnd); k += 97)
				same &= gtt_crc32c(7, rnd + off, k) == gtt_crc32c_sw(7, rnd + off, k);
		th_check(same, "hardware and table CRC-32C agree at every alignment and length");
	}
	free(buf);
	unlink(tmpl);
	return th_report();
}
