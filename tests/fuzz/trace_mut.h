/* trace_mut.h — what the whole-command fuzz targets (fuzz_analyze.c, fuzz_render.c) share: a
 * chunk-aware custom mutator for .gtt images that keeps every chunk's CRC right (so mutations
 * reach the analysis instead of stopping at the checksum), the CRC fixer, a trace image loaded
 * as a model through a memfd, and a strict JSON checker for the exports.
 *
 * The mutator works on whole chunks as often as on bytes: it overwrites an aligned field of a
 * payload with a value from the edges of its range (0, 1, 2^31, 2^32 - 1, 2^63, 2^64 - 1, ...:
 * the numbers that wrap size and time arithmetic), duplicates, drops or swaps chunks, or lets
 * libFuzzer mutate one payload. Include once per target; define GT_FUZZ_REPLAY to leave the
 * mutator out (the replay tests link without libFuzzer). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gtt.h"
#include "model.h"

static inline uint32_t tm_rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline void tm_wr32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* Set the CRC of every whole chunk of a trace image in place (a file image with a header). */
static inline void tm_fix_crcs(uint8_t *p, size_t size)
{
	size_t off = GTT_HEADER_LEN;
	while (off + GTT_CHUNK_HEADER_LEN <= size) {
		uint8_t *h = p + off;
		uint32_t len = tm_rd32(h + 4);
		if (len > size - off - GTT_CHUNK_HEADER_LEN)
			break;
		tm_wr32(h + 8, gtt_crc32c(gtt_crc32c(0, h, 8), h + GTT_CHUNK_HEADER_LEN, len));
		off += GTT_CHUNK_HEADER_LEN + (size_t)len;
	}
}

/* A copy of data made a trace image with valid CRCs: inputs without the magic get a header. */
static uint8_t *tm_image(const uint8_t *data, size_t size, size_t *out_len)
{
	int has_magic = size >= GTT_MAGIC_LEN && memcmp(data, GTT_MAGIC, GTT_MAGIC_LEN) == 0;
	size_t n = has_magic ? size : size + GTT_HEADER_LEN;
	uint8_t *p = malloc(n ? n : 1);
	if (!p)
		abort();
	if (has_magic) {
		memcpy(p, data, size);
	} else {
		memcpy(p, GTT_MAGIC, GTT_MAGIC_LEN);
		memset(p + GTT_MAGIC_LEN, 0, GTT_HEADER_LEN - GTT_MAGIC_LEN);
		p[8] = GTT_VERSION_MAJOR;
		memcpy(p + GTT_HEADER_LEN, data, size);
	}
	tm_fix_crcs(p, n);
	*out_len = n;
	return p;
}

/* Load an image as gt-analyze loads a file: through a memfd's path, so the reader maps it. */
static ana_model *tm_load(const uint8_t *img, size_t len, const ana_opts *o, char *err, size_t errlen)
{
	static int fd = -1;
	static char path[64];
	if (fd < 0) {
		fd = memfd_create("fuzz-trace", MFD_CLOEXEC);
		if (fd < 0)
			abort();
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	}
	if (ftruncate(fd, 0) != 0 || (len && pwrite(fd, img, len, 0) != (ssize_t)len))
		abort();
	return ana_model_load(path, o, err, errlen);
}

/* A cheap deterministic choice of options from the input bytes. */
static inline uint32_t tm_hash(const uint8_t *p, size_t n)
{
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < n; i += 1 + n / 4096)
		h = (h ^ p[i]) * 16777619u;
	return h ^ (uint32_t)n;
}

/* ---- a strict JSON checker (RFC 8259: no NaN or Infinity, escapes and UTF-8 valid) ---- */

typedef struct tm_json { const unsigned char *p, *end; int depth; } tm_json;

static inline void tm_ws(tm_json *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
		j->p++;
}

static inline int tm_json_value(tm_json *j);

static inline int tm_json_string(tm_json *j)
{
	if (j->p >= j->end || *j->p != '"')
		return -1;
	j->p++;
	while (j->p < j->end && *j->p != '"') {
		unsigned c = *j->p;
		if (c < 0x20)
			return -1;
		if (c == '\\') {
			if (++j->p >= j->end || !strchr("\"\\/bfnrtu", *j->p))
				return -1;
			if (*j->p == 'u') {
				for (int i = 0; i < 4; i++)
					if (++j->p >= j->end || !strchr("0123456789abcdefABCDEF", *j->p))
						return -1;
			}
			j->p++;
			continue;
		}
		size_t k = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
		if (!k || (size_t)(j->end - j->p) < k || (k == 2 && c < 0xc2))
			return -1;
		for (size_t i = 1; i < k; i++)
			if ((j->p[i] & 0xc0) != 0x80)
				return -1;
		j->p += k;
	}
	if (j->p >= j->end)
		return -1;
	j->p++;
	return 0;
}

static inline int tm_json_number(tm_json *j)
{
	const unsigned char *s = j->p;
	if (j->p < j->end && *j->p == '-')
		j->p++;
	if (j->p >= j->end || *j->p < '0' || *j->p > '9')
		return -1;
	if (*j->p == '0')
		j->p++;
	else
		while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
			j->p++;
	if (j->p < j->end && *j->p == '.') {
		j->p++;
		if (j->p >= j->end || *j->p < '0' || *j->p > '9')
			return -1;
		while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
			j->p++;
	}
	if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
		j->p++;
		if (j->p < j->end && (*j->p == '+' || *j->p == '-'))
			j->p++;
		if (j->p >= j->end || *j->p < '0' || *j->p > '9')
			return -1;
		while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
			j->p++;
	}
	return j->p > s ? 0 : -1;
}

static inline int tm_json_word(tm_json *j, const char *w)
{
	size_t n = strlen(w);
	if ((size_t)(j->end - j->p) < n || memcmp(j->p, w, n) != 0)
		return -1;
	j->p += n;
	return 0;
}

static inline int tm_json_value(tm_json *j)
{
	tm_ws(j);
	if (j->p >= j->end || ++j->depth > 200)
		return -1;
	int rc = 0;
	switch (*j->p) {
	case '{':
		j->p++;
		tm_ws(j);
		if (j->p < j->end && *j->p == '}') {
			j->p++;
			break;
		}
		for (;;) {
			tm_ws(j);
			if (tm_json_string(j) < 0)
				return -1;
			tm_ws(j);
			if (j->p >= j->end || *j->p++ != ':' || tm_json_value(j) < 0)
				return -1;
			tm_ws(j);
			if (j->p < j->end && *j->p == ',') {
				j->p++;
				continue;
			}
			if (j->p >= j->end || *j->p++ != '}')
				return -1;
			break;
		}
		break;
	case '[':
		j->p++;
		tm_ws(j);
		if (j->p < j->end && *j->p == ']') {
			j->p++;
			break;
		}
		for (;;) {
			if (tm_json_value(j) < 0)
				return -1;
			tm_ws(j);
			if (j->p < j->end && *j->p == ',') {
				j->p++;
				continue;
			}
			if (j->p >= j->end || *j->p++ != ']')
				return -1;
			break;
		}
		break;
	case '"': rc = tm_json_string(j); break;
	case 't': rc = tm_json_word(j, "true"); break;
	case 'f': rc = tm_json_word(j, "false"); break;
	case 'n': rc = tm_json_word(j, "null"); break;
	default: rc = tm_json_number(j); break;
	}
	j->depth--;
	return rc;
}

/* 0 when buf[0..len) is one valid JSON document. */
static inline int tm_json_valid(const char *buf, size_t len)
{
	tm_json j = { (const unsigned char *)buf, (const unsigned char *)buf + len, 0 };
	if (tm_json_value(&j) < 0)
		return -1;
	tm_ws(&j);
	return j.p == j.end ? 0 : -1;
}

#ifndef GT_FUZZ_REPLAY
size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed);

#define TM_MAX_CHUNKS 8192

/* Offsets of the whole chunks (up to cap); returns their number. */
static inline size_t tm_chunks(const uint8_t *p, size_t size, size_t *off, size_t cap)
{
	size_t n = 0, at = GTT_HEADER_LEN;
	while (n < cap && at + GTT_CHUNK_HEADER_LEN <= size) {
		uint32_t len = tm_rd32(p + at + 4);
		if (len > size - at - GTT_CHUNK_HEADER_LEN)
			break;
		off[n++] = at;
		at += GTT_CHUNK_HEADER_LEN + (size_t)len;
	}
	return n;
}

static inline size_t tm_chunk_len(const uint8_t *p, size_t off)
{
	return GTT_CHUNK_HEADER_LEN + (size_t)tm_rd32(p + off + 4);
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
	static size_t off[TM_MAX_CHUNKS];
	static const uint64_t edges[] = { 0, 1, 2, 0x7f, 0xff, 0x7fff, 0xffff, 0x7fffffff, 0x80000000u, 0xffffffffu,
	                                  0x100000000ull, 1000000000ull, 0x7fffffffffffffffull, 0x8000000000000000ull,
	                                  UINT64_MAX - 1, UINT64_MAX };
	uint32_t r = seed * 2654435761u + 1;
#define TM_RAND() (r = r * 1103515245u + 12345u, r >> 8)
	/* libFuzzer hands over inputs longer than max_size (a corpus file over -max_len): the buffer
	 * is not known to hold more, so the input is cut to it first (the growth below counted from
	 * max_size - size, which wrapped, and wrote past the buffer: fuzz_render, 2026-12-07) */
	if (size > max_size)
		size = max_size;
	size_t n = size >= GTT_HEADER_LEN && memcmp(data, GTT_MAGIC, GTT_MAGIC_LEN) == 0
	           ? tm_chunks(data, size, off, TM_MAX_CHUNKS) : 0;
	unsigned op = n ? TM_RAND() % 8 : 7;
	size_t c = n ? TM_RAND() % n : 0, clen = n ? tm_chunk_len(data, off[c]) : 0;
	switch (op) {
	case 0:
	case 1:
	case 2: { /* a field of one payload set to an edge value (or a near neighbour of one) */
		size_t plen = clen - GTT_CHUNK_HEADER_LEN;
		if (plen < 4)
			break;
		int wide = plen >= 8 && TM_RAND() % 2;
		size_t at = off[c] + GTT_CHUNK_HEADER_LEN + (TM_RAND() % (plen - (wide ? 8 : 4) + 1) & ~(size_t)3);
		uint64_t v = edges[TM_RAND() % (sizeof(edges) / sizeof(edges[0]))];
		if (TM_RAND() % 4 == 0)
			v -= TM_RAND() % 3; /* 2^64 - 3, 2^32 - 2, ... */
		for (int i = 0; i < (wide ? 8 : 4); i++)
			data[at + (size_t)i] = (uint8_t)(v >> (8 * i));
		break;
	}
	case 3: /* duplicate a chunk right after itself */
		if (size + clen > max_size)
			break;
		memmove(data + off[c] + clen, data + off[c], size - off[c]);
		size += clen;
		break;
	case 4: /* drop a chunk */
		memmove(data + off[c], data + off[c] + clen, size - off[c] - clen);
		size -= clen;
		break;
	case 5: { /* swap a chunk with the next one */
		if (c + 1 >= n)
			break;
		size_t nlen = tm_chunk_len(data, off[c + 1]);
		uint8_t *tmp = malloc(clen);
		if (!tmp)
			break;
		memcpy(tmp, data + off[c], clen);
		memmove(data + off[c], data + off[c + 1], nlen);
		memcpy(data + off[c] + nlen, tmp, clen);
		free(tmp);
		break;
	}
	case 6: { /* libFuzzer's own mutation of one payload; the length field follows it */
		size_t plen = clen - GTT_CHUNK_HEADER_LEN, room = max_size - size + plen;
		if (room > (1u << 20))
			room = 1u << 20;
		if (plen > room)
			break; /* a payload over the 1 MiB cap: left as it is */
		uint8_t *tmp = malloc(room ? room : 1);
		if (!tmp)
			break;
		memcpy(tmp, data + off[c] + GTT_CHUNK_HEADER_LEN, plen);
		size_t nl = LLVMFuzzerMutate(tmp, plen, room);
		size_t tail = off[c] + clen;
		memmove(data + off[c] + GTT_CHUNK_HEADER_LEN + nl, data + tail, size - tail);
		memcpy(data + off[c] + GTT_CHUNK_HEADER_LEN, tmp, nl);
		tm_wr32(data + off[c] + 4, (uint32_t)nl);
		size = size - plen + nl;
		free(tmp);
		break;
	}
	default: /* bytes anywhere, header and framing included */
		size = LLVMFuzzerMutate(data, size, max_size);
		break;
	}
#undef TM_RAND
	if (size >= GTT_HEADER_LEN && memcmp(data, GTT_MAGIC, GTT_MAGIC_LEN) == 0)
		tm_fix_crcs(data, size);
	return size;
}
#endif
