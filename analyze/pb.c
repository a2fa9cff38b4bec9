/* pb.c — protocol-buffers encoding: base-128 varints, tags, length prefixes patched in place. */
#include <stdlib.h>
#include <string.h>

#include "gt_util.h"
#include "pb.h"

void ana_pb_init(ana_pb *b)
{
	memset(b, 0, sizeof(*b));
}

void ana_pb_free(ana_pb *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

int ana_pb_failed(const ana_pb *b)
{
	return b->failed;
}

static int reserve(ana_pb *b, size_t more)
{
	if (b->failed)
		return -1;
	if (GT_GROW(b->p, b->cap, b->n + more) < 0) {
		b->failed = 1;
		return -1;
	}
	return 0;
}

static size_t varint_len(uint64_t v)
{
	size_t n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

static void put_varint(ana_pb *b, uint64_t v)
{
	if (reserve(b, 10) < 0)
		return;
	while (v >= 0x80) {
		b->p[b->n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	b->p[b->n++] = (uint8_t)v;
}

static void put_tag(ana_pb *b, uint32_t field, uint32_t wire)
{
	put_varint(b, ((uint64_t)field << 3) | wire);
}

void ana_pb_uint(ana_pb *b, uint32_t field, uint64_t v)
{
	put_tag(b, field, ANA_PB_VARINT);
	put_varint(b, v);
}

void ana_pb_int(ana_pb *b, uint32_t field, int64_t v)
{
	ana_pb_uint(b, field, (uint64_t)v);
}

void ana_pb_uint_opt(ana_pb *b, uint32_t field, uint64_t v)
{
	if (v)
		ana_pb_uint(b, field, v);
}

void ana_pb_int_opt(ana_pb *b, uint32_t field, int64_t v)
{
	if (v)
		ana_pb_int(b, field, v);
}

void ana_pb_bytes(ana_pb *b, uint32_t field, const void *data, size_t len)
{
	put_tag(b, field, ANA_PB_LEN);
	put_varint(b, len);
	if (len && reserve(b, len) == 0) {
		memcpy(b->p + b->n, data, len);
		b->n += len;
	}
}

void ana_pb_raw(ana_pb *b, const void *data, size_t len)
{
	if (len && reserve(b, len) == 0) {
		memcpy(b->p + b->n, data, len);
		b->n += len;
	}
}

void ana_pb_string(ana_pb *b, uint32_t field, const char *s)
{
	ana_pb_bytes(b, field, s, s ? strlen(s) : 0);
}

void ana_pb_packed_uint(ana_pb *b, uint32_t field, const uint64_t *v, size_t n)
{
	if (!n)
		return;
	size_t len = 0;
	for (size_t i = 0; i < n; i++)
		len += varint_len(v[i]);
	put_tag(b, field, ANA_PB_LEN);
	put_varint(b, len);
	if (reserve(b, len) < 0)
		return;
	for (size_t i = 0; i < n; i++)
		put_varint(b, v[i]);
}

void ana_pb_packed_int(ana_pb *b, uint32_t field, const int64_t *v, size_t n)
{
	_Static_assert(sizeof(int64_t) == sizeof(uint64_t), "two's complement int64");
	if (!n)
		return;
	size_t len = 0;
	for (size_t i = 0; i < n; i++)
		len += varint_len((uint64_t)v[i]);
	put_tag(b, field, ANA_PB_LEN);
	put_varint(b, len);
	for (size_t i = 0; i < n; i++)
		put_varint(b, (uint64_t)v[i]);
}

/* The body is written after a one-byte length placeholder; end() widens it when the body
 * turned out to be 128 bytes or longer (rare for profile messages, so the move is cheap). */
size_t ana_pb_begin(ana_pb *b, uint32_t field)
{
	put_tag(b, field, ANA_PB_LEN);
	if (reserve(b, 1) < 0)
		return 0;
	b->p[b->n++] = 0;
	return b->n;
}

void ana_pb_end(ana_pb *b, size_t mark)
{
	if (b->failed || mark == 0 || mark > b->n)
		return;
	size_t len = b->n - mark;
	size_t vl = varint_len(len);
	if (vl > 1) {
		if (reserve(b, vl - 1) < 0)
			return;
		memmove(b->p + mark + vl - 1, b->p + mark, len);
		b->n += vl - 1;
	}
	uint8_t *q = b->p + mark - 1;
	uint64_t v = len;
	while (v >= 0x80) {
		*q++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*q = (uint8_t)v;
}

static int get_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	uint64_t r = 0;
	for (int shift = 0; shift < 64; shift += 7) {
		if (*p >= end)
			return -1;
		uint8_t c = *(*p)++;
		r |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80)) {
			*v = r;
			return 0;
		}
	}
	return -1;
}

int ana_pb_next(const uint8_t **p, const uint8_t *end, ana_pb_field *f)
{
	uint64_t tag;
	if (*p >= end)
		return 0;
	if (get_varint(p, end, &tag) < 0 || (tag >> 3) == 0 || (tag >> 3) > UINT32_MAX)
		return -1;
	memset(f, 0, sizeof(*f));
	f->field = (uint32_t)(tag >> 3);
	f->wire = (uint32_t)(tag & 7);
	switch (f->wire) {
	case ANA_PB_VARINT:
		return get_varint(p, end, &f->v) < 0 ? -1 : 1;
	case ANA_PB_I64:
		if (end - *p < 8)
			return -1;
		for (int i = 7; i >= 0; i--)
			f->v = (f->v << 8) | (*p)[i];
		*p += 8;
		return 1;
	case ANA_PB_I32:
		if (end - *p < 4)
			return -1;
		for (int i = 3; i >= 0; i--)
			f->v = (f->v << 8) | (*p)[i];
		*p += 4;
		return 1;
	case ANA_PB_LEN: {
		uint64_t len;
		if (get_varint(p, end, &len) < 0 || len > (uint64_t)(end - *p))
			return -1;
		f->data = *p;
		f->len = (size_t)len;
		*p += len;
		return 1;
	}
	}
	return -1;
}

long ana_pb_unpack(const uint8_t *data, size_t len, uint64_t *out, size_t cap)
{
	const uint8_t *p = data, *end = data + len;
	long n = 0;
	while (p < end) {
		uint64_t v;
		if (get_varint(&p, end, &v) < 0)
			return -1;
		if ((size_t)n < cap)
			out[n] = v;
		n++;
	}
	return n;
}
