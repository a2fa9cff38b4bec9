/* pb.h — a small protocol-buffers encoder (varints, length-delimited fields, nested messages,
 * packed repeated integers) and a field reader, for the pprof export and its tests.
 * Return rule: analyze/'s (model.h): 0 or a negative GTT_E* code, NULL for objects, words in err. */
#ifndef ANA_PB_H
#define ANA_PB_H

#include <stddef.h>
#include <stdint.h>

/* A growable output buffer. Errors are sticky: after ENOMEM every call is a no-op and
 * ana_pb_failed() is true, so a message can be built without checking each field. */
typedef struct ana_pb {
	uint8_t *p;
	size_t n, cap;
	int failed;
} ana_pb;

/* Wire types. */
enum { ANA_PB_VARINT = 0, ANA_PB_I64 = 1, ANA_PB_LEN = 2, ANA_PB_I32 = 5 };

void ana_pb_init(ana_pb *b);
/* Free the buffer's memory (the struct itself is the caller's). */
void ana_pb_free(ana_pb *b);
int ana_pb_failed(const ana_pb *b);

/* field = value as a varint (uint64/int64/bool; negative int64 takes 10 bytes as in proto3). */
void ana_pb_uint(ana_pb *b, uint32_t field, uint64_t v);
void ana_pb_int(ana_pb *b, uint32_t field, int64_t v);
/* Same, but omitted when v is 0 (proto3 default values are not written). */
void ana_pb_uint_opt(ana_pb *b, uint32_t field, uint64_t v);
void ana_pb_int_opt(ana_pb *b, uint32_t field, int64_t v);
/* A length-delimited field: bytes or a string (written even when empty). */
void ana_pb_bytes(ana_pb *b, uint32_t field, const void *data, size_t len);
void ana_pb_string(ana_pb *b, uint32_t field, const char *s);
/* A packed repeated integer field (nothing written for n = 0). */
void ana_pb_packed_uint(ana_pb *b, uint32_t field, const uint64_t *v, size_t n);
void ana_pb_packed_int(ana_pb *b, uint32_t field, const int64_t *v, size_t n);

/* Bytes appended as they are (an already-encoded run of fields). */
void ana_pb_raw(ana_pb *b, const void *data, size_t len);

/* A nested message: begin returns a mark, the fields follow, end writes its length. */
size_t ana_pb_begin(ana_pb *b, uint32_t field);
void ana_pb_end(ana_pb *b, size_t mark);

/* ---- reading (tests, tools) ---- */
typedef struct ana_pb_field {
	uint32_t field;
	uint32_t wire;          /* ANA_PB_* */
	uint64_t v;             /* VARINT, I64, I32 */
	const uint8_t *data;    /* LEN: the bytes */
	size_t len;
} ana_pb_field;
/* Read the next field at *p (< end), advancing *p. 1 read, 0 at end, -1 malformed. */
int ana_pb_next(const uint8_t **p, const uint8_t *end, ana_pb_field *f);
/* Decode a packed varint list into out (up to cap); returns the count, -1 if malformed. */
long ana_pb_unpack(const uint8_t *data, size_t len, uint64_t *out, size_t cap);

#endif
