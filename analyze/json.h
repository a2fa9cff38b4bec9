/* json.h — a small streaming JSON writer with correct string escaping (UTF-8 checked),
 * shared by the exporters (speedscope, Chrome trace), diff --json and anyone else.
 * Return rule: analyze/'s (model.h): 0 or a negative GTT_E* code, NULL for objects, words in err. */
#ifndef ANA_JSON_H
#define ANA_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct ana_json ana_json;

/* A writer onto out (not owned; not closed). Commas between values and after keys are
 * inserted automatically. NULL on ENOMEM. */
ana_json *ana_json_create(FILE *out);
/* Free the writer (does not close out). NULL ok. */
void ana_json_destroy(ana_json *j);

/* Containers. Nesting is bounded only by memory; an unbalanced end is ignored and
 * remembered as an error (ana_json_error). */
void ana_json_obj_begin(ana_json *j);
void ana_json_obj_end(ana_json *j);
void ana_json_arr_begin(ana_json *j);
void ana_json_arr_end(ana_json *j);

/* An object key; the next call writes its value. */
void ana_json_key(ana_json *j, const char *key);
/* A string value. Control characters are escaped, bytes that are not valid UTF-8 become
 * U+FFFD, so the output is always valid JSON. NULL writes null. */
void ana_json_str(ana_json *j, const char *s);
void ana_json_strn(ana_json *j, const char *s, size_t len);
void ana_json_u64(ana_json *j, uint64_t v);
void ana_json_i64(ana_json *j, int64_t v);
/* A number in the shortest form that reads back to the same double; NaN/Inf write null. */
void ana_json_double(ana_json *j, double v);
/* v / 10^decimals written exactly in fixed point ("1234.567" for 1234567, 3): timestamps
 * in microseconds from nanoseconds without rounding through a double. decimals <= 18. */
void ana_json_decimal(ana_json *j, int64_t v, int decimals);
void ana_json_bool(ana_json *j, int v);
void ana_json_null(ana_json *j);
/* A line break before the next token (after its comma), to keep large arrays one element
 * per line; at the top level, after the value, it is written at once. */
void ana_json_newline(ana_json *j);

/* Shorthands for "key": value. */
void ana_json_kv_str(ana_json *j, const char *key, const char *s);
void ana_json_kv_u64(ana_json *j, const char *key, uint64_t v);
void ana_json_kv_i64(ana_json *j, const char *key, int64_t v);
void ana_json_kv_double(ana_json *j, const char *key, double v);

/* Write s escaped, with its quotes, to out (no writer state needed). */
void ana_json_write_string(FILE *out, const char *s, size_t len);
/* 0 when everything was written and balanced; <0 on an I/O error (see ferror) or misuse. */
int ana_json_error(const ana_json *j);

#endif
