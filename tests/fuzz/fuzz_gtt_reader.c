/* fuzz_gtt_reader.c — libFuzzer target: the trace reader and record decoder over arbitrary bytes.
 *
 * Each input is read three ways: (1) as a file image, through gtt_reader_open_mem() and
 * gtt_reader_next() until the end, skipping corrupt chunks as a tool would; (2) the same
 * bytes with every whole chunk's CRC recomputed, so mutations reach the decoders instead of
 * stopping at the checksum; (3) every record that decodes is encoded again with gtt_write()
 * and decoded once more, and the second encoding must equal the first (the writer and the
 * reader agree on every field). All decoded pointers are touched so ASan sees bad ones.
 * Inputs of format 1.1 reach the packed-chunk expansion and the compact decoders as well; a
 * window over the index (from the file or rebuilt) is read once more at the end; inputs of 1.2
 * reach codec 2's side frames, read once more with samples bare and whole by turns.
 * Seeds: .gtt in testdata
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gtt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile uint64_t sink; /* keeps the reads of decoded data from being optimized out */

static void touch_str(const char *s)
{
	if (s)
		sink += strlen(s);
}

static void touch_u64s(const uint64_t *v, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		sink += v[i];
}

static void touch_bytes(const uint8_t *b, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		sink += b[i];
}

/* Read every field a tool could read from a decoded record. */
static void touch(const gtt_record *rec)
{
	touch_bytes(rec->raw, rec->len);
	switch (rec->tag) {
	case GTT_REC_META: touch_str(rec->u.meta.key); touch_str(rec->u.meta.value); break;
	case GTT_REC_PROCESS: touch_str(rec->u.process.comm); break;
	case GTT_REC_THREAD: touch_str(rec->u.thread.name); break;
	case GTT_REC_MAPPING:
		if (rec->u.mapping.build_id_len > GTT_BUILD_ID_MAX)
			abort();
		touch_str(rec->u.mapping.path);
		break;
	case GTT_REC_SAMPLE: {
		const gtt_sample *s = &rec->u.sample;
		touch_u64s(s->ips, (uint64_t)s->n_kernel + s->n_user);
		if (s->flags & GTT_SAMPLE_REGS)
			touch_u64s(s->regs, s->n_regs);
		if (s->flags & GTT_SAMPLE_STACK)
			touch_bytes(s->stack, s->stack_len);
		break;
	}
	case GTT_REC_HEALTH: touch_str(rec->u.health.text); break;
	case GTT_REC_PY_CODE:
		touch_str(rec->u.py_code.name);
		touch_str(rec->u.py_code.qualname);
		touch_str(rec->u.py_code.filename);
		break;
	case GTT_REC_PY_STACK:
		for (uint32_t i = 0; i < rec->u.py_stack.n_frames; i++)
			sink += rec->u.py_stack.frames[i].code_id + (uint32_t)rec->u.py_stack.frames[i].line;
		break;
	case GTT_REC_STRING: touch_str(rec->u.string.text); break;
	case GTT_REC_CUDA_DEVICE: touch_str(rec->u.cuda_device.name); touch_str(rec->u.cuda_device.uuid); break;
	case GTT_REC_ARCHIVE:
		if (rec->u.archive.build_id_len > GTT_BUILD_ID_MAX)
			abort();
		touch_str(rec->u.archive.path);
		touch_bytes(rec->u.archive.data, rec->u.archive.len);
		break;
	default: break;
	}
}

static int memfd = -1;

/* Encode rec with the real writer into the memfd; returns the chunk bytes (malloc'ed). */
static uint8_t *encode_record(const gtt_record *rec, size_t *len)
{
	int err = 0;
	*len = 0;
	if (ftruncate(memfd, 0) != 0 || lseek(memfd, 0, SEEK_SET) != 0)
		abort();
	int fd = dup(memfd);
	gtt_writer *w = gtt_writer_fdopen(fd, 1, &err);
	if (!w)
		abort();
	int rc = gtt_write(w, rec);
	int rc_close = gtt_writer_close(w);
	if (rc < 0 || rc_close < 0)
		return NULL; /* the writer may refuse (e.g. a payload over the limit); it must not crash */
	off_t n = lseek(memfd, 0, SEEK_END);
	if (n < GTT_CHUNK_HEADER_LEN)
		abort(); /* a record the writer accepted must produce a chunk */
	uint8_t *buf = malloc((size_t)n);
	if (!buf || pread(memfd, buf, (size_t)n, 0) != n)
		abort();
	*len = (size_t)n;
	return buf;
}

/* Decode a chunk made by encode_record(); returns its payload's decode status. */
static int decode_chunk(const uint8_t *c, size_t len, gtt_record *rec, void **scratch, size_t *cap)
{
	uint32_t plen = (uint32_t)c[4] | (uint32_t)c[5] << 8 | (uint32_t)c[6] << 16 | (uint32_t)c[7] << 24;
	uint32_t tag = (uint32_t)c[0] | (uint32_t)c[1] << 8 | (uint32_t)c[2] << 16 | (uint32_t)c[3] << 24;
	if ((size_t)plen + GTT_CHUNK_HEADER_LEN != len)
		abort(); /* the writer framed the chunk wrongly */
	return gtt_decode(tag, c + GTT_CHUNK_HEADER_LEN, plen, rec, scratch, cap);
}

/* decode -> encode -> decode -> encode must reach a fixed point after the first encode. */
static void roundtrip(const gtt_record *rec)
{
	static void *scratch;
	static size_t cap;
	size_t n1 = 0, n2 = 0;
	gtt_record again;
	if (strcmp(gtt_tag_name(rec->tag), "unknown") == 0)
		return;
	uint8_t *c1 = encode_record(rec, &n1);
	if (!c1)
		return;
	if (decode_chunk(c1, n1, &again, &scratch, &cap) != 0)
		abort(); /* the reader refused what the writer wrote */
	uint8_t *c2 = encode_record(&again, &n2);
	if (!c2 || n1 != n2 || memcmp(c1, c2, n1) != 0)
		abort(); /* a field changed on the way through */
	free(c1);
	free(c2);
}

/* Read a trace image to its end as the tools do; returns the number of records. */
static size_t read_all(const uint8_t *data, size_t size, int check_roundtrip)
{
	int err = 0;
	size_t n = 0;
	gtt_record rec;
	gtt_reader *r = gtt_reader_open_mem(data, size, &err);
	if (!r) {
		if (err >= 0)
			abort(); /* NULL must come with an error code */
		return 0;
	}
	uint32_t major, minor;
	gtt_reader_version(r, &major, &minor);
	if (major > GTT_VERSION_MAJOR)
		abort();
	/* each step consumes a chunk (>= 12 bytes) or a record of a packed chunk (>= 2 of at most
	 * GTT_PACKED_MAX_RAW expanded bytes per chunk) */
	for (size_t guard = 0; guard <= size * (GTT_PACKED_MAX_RAW / 2 / GTT_CHUNK_HEADER_LEN + 1); guard++) {
		int rc = gtt_reader_next(r, &rec);
		if (rc == 0)
			break;
		if (gtt_reader_offset(r) > size)
			abort();
		if (rc < 0) {
			if (rc != GTT_ECORRUPT && rc != GTT_EINVAL && rc != GTT_ENOMEM && rc != GTT_EVERSION &&
			    rc != GTT_ENOZSTD)
				abort();
			continue;
		}
		n++;
		touch(&rec);
		if (check_roundtrip && n <= 64) /* a few syscalls per record: the first ones are enough */
			roundtrip(&rec);
	}
	/* the index (from the file or rebuilt) stays inside the input; a window reads */
	const gtt_index_entry *ix;
	size_t nix = 0;
	if (gtt_reader_index(r, &ix, &nix) >= 0) {
		for (size_t i = 0; i < nix; i++)
			if (ix[i].offset < GTT_HEADER_LEN || ix[i].offset >= ix[i].end || ix[i].end > size)
				abort();
		if (gtt_reader_set_window(r, 1000, 2000000000ull) == 0)
			for (size_t guard = 0; guard <= n + size; guard++) {
				int rc = gtt_reader_next(r, &rec);
				if (rc == 0)
					break;
				if (rc > 0)
					touch(&rec);
			}
	}
	gtt_reader_close(r);
	return n;
}

/* Read again with samples bare and whole by turns (gtt_reader_skip_stacks; in 1.2 a chunk's side
 * frame is then expanded late, or never), prefetch on: a bare sample has no registers or stack;
 * then a seek back to a sample read bare, read whole. */
static void read_bare(const uint8_t *data, size_t size)
{
	int err = 0, bare = 1, have_pos = 0;
	gtt_record rec;
	gtt_pos pos = { 0, 0 };
	gtt_reader *r = gtt_reader_open_mem(data, size, &err);
	if (!r)
		return;
	gtt_reader_prefetch(r);
	gtt_reader_skip_stacks(r, bare);
	for (size_t i = 0; i <= size * (GTT_PACKED_MAX_RAW / 2 / GTT_CHUNK_HEADER_LEN + 1); i++) {
		int rc = gtt_reader_next(r, &rec);
		if (rc == 0)
			break;
		if (rc < 0)
			continue;
		touch(&rec);
		if (rec.tag == GTT_REC_SAMPLE && bare) {
			const gtt_sample *sm = &rec.u.sample;
			if (sm->n_regs || sm->regs || sm->stack_len || sm->stack)
				abort(); /* a bare sample came with its registers or stack */
			if (!have_pos) {
				gtt_reader_tell(r, &pos);
				have_pos = 1;
			}
		}
		if (i % 5 == 4)
			gtt_reader_skip_stacks(r, bare = !bare);
	}
	gtt_reader_skip_stacks(r, 0);
	if (have_pos && gtt_reader_seek(r, &pos) == 0 && gtt_reader_next(r, &rec) > 0)
		touch(&rec);
	gtt_reader_close(r);
}

/* Copy of data with each whole chunk's CRC set to the right value. */
static uint8_t *fix_crcs(const uint8_t *data, size_t size)
{
	uint8_t *p = malloc(size ? size : 1);
	if (!p)
		abort();
	memcpy(p, data, size);
	size_t off = GTT_HEADER_LEN;
	while (off + GTT_CHUNK_HEADER_LEN <= size) {
		uint8_t *h = p + off;
		uint32_t len = (uint32_t)h[4] | (uint32_t)h[5] << 8 | (uint32_t)h[6] << 16 | (uint32_t)h[7] << 24;
		if (len > size - off - GTT_CHUNK_HEADER_LEN)
			break;
		uint32_t crc = gtt_crc32c(gtt_crc32c(0, h, 8), h + GTT_CHUNK_HEADER_LEN, len);
		h[8] = crc & 0xff; h[9] = crc >> 8 & 0xff; h[10] = crc >> 16 & 0xff; h[11] = crc >> 24;
		off += GTT_CHUNK_HEADER_LEN + (size_t)len;
	}
	return p;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (memfd < 0) {
		memfd = memfd_create("fuzz-gtt", MFD_CLOEXEC);
		if (memfd < 0)
			abort();
	}
	read_all(data, size, 0);
	/* Inputs without the magic get a valid header so the chunk path is always reached. */
	if (size < GTT_MAGIC_LEN || memcmp(data, GTT_MAGIC, GTT_MAGIC_LEN) != 0) {
		uint8_t *img = malloc(size + GTT_HEADER_LEN);
		if (!img)
			abort();
		memcpy(img, GTT_MAGIC, GTT_MAGIC_LEN);
		memset(img + GTT_MAGIC_LEN, 0, GTT_HEADER_LEN - GTT_MAGIC_LEN);
		img[8] = GTT_VERSION_MAJOR;
		memcpy(img + GTT_HEADER_LEN, data, size);
		uint8_t *fixed = fix_crcs(img, size + GTT_HEADER_LEN);
		read_all(fixed, size + GTT_HEADER_LEN, 1);
		read_bare(fixed, size + GTT_HEADER_LEN);
		free(fixed);
		free(img);
	} else {
		uint8_t *fixed = fix_crcs(data, size);
		read_all(fixed, size, 1);
		read_bare(fixed, size);
		free(fixed);
	}
	return 0;
}
