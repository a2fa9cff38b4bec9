/* test_cuda_callstack.c — the cuda_callstack record (tag 29): round trip of every field through
 * the writer and reader, empty stacks, and payloads whose frame counts do not fit their length. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gtt.h"
#include "testhelp.h"

static int encode(const gtt_record *r, uint8_t **payload, uint32_t *len)
{
	char path[] = "/tmp/gtt-cs-XXXXXX";
	int fd = mkstemp(path), err = 0, rc = -1;
	gtt_writer_opts o;
	gtt_writer_opts_init(&o);
	o.minor = 0; /* a plain chunk: back.raw is the 1.0 payload the layout check measures */
	gtt_writer *w = fd >= 0 ? gtt_writer_fdopen_opts(fd, 0, &o, &err) : NULL;
	if (!w)
		return -1;
	gtt_write(w, r);
	gtt_writer_close(w);
	gtt_reader *rd = gtt_reader_open(path, &err);
	gtt_record back;
	if (rd && gtt_reader_next(rd, &back) == 1 && back.tag == r->tag) {
		*payload = malloc(back.len + 1);
		memcpy(*payload, back.raw, back.len);
		*len = back.len;
		rc = 0;
	}
	gtt_reader_close(rd);
	unlink(path);
	return rc;
}

int main(void)
{
	uint64_t ips[3] = { 0x7f0000001234ull, 0x7f0000005678ull, 0x401000 };
	gtt_py_frame py[2] = { { 0x7f00000a0001ull, 44, 0 }, { 0x5600000b0001ull | 3ull << 48, -1, GTT_PYFRAME_ENTRY } };
	gtt_record r = { .tag = GTT_REC_CUDA_CALLSTACK };
	r.u.callstack = (gtt_cuda_callstack){ .time_ns = 123456789, .call_ns = 30000000, .pid = 10, .tid = 11,
	                                      .correlation = 4242, .domain = GTT_API_RUNTIME, .cbid = 211, .name_id = 7,
	                                      .flags = GTT_CALLSTACK_FIRST | GTT_CALLSTACK_LONG | GTT_CALLSTACK_PY_TRUNC,
	                                      .function = 0xa000, .n_native = 3, .ips = ips, .n_py = 2, .py = py };
	uint8_t *p = NULL;
	uint32_t len = 0;
	th_check(encode(&r, &p, &len) == 0, "a cuda_callstack record is written and read back");
	th_check(len == 8 + 8 + 7 * 4 + 8 + 4 + 3 * 8 + 4 + 2 * 16, "payload is %u bytes, as docs/FORMAT.md lays it out", len);
	th_check(strcmp(gtt_tag_name(GTT_REC_CUDA_CALLSTACK), "cuda_callstack") == 0, "tag 29 is named cuda_callstack");

	void *scratch = NULL;
	size_t cap = 0;
	gtt_record d;
	int rc = p ? gtt_decode(GTT_REC_CUDA_CALLSTACK, p, len, &d, &scratch, &cap) : -1;
	const gtt_cuda_callstack *c = &d.u.callstack;
	th_check(rc == 0, "decodes (rc %d)", rc);
	if (rc == 0) {
		th_check(c->time_ns == 123456789 && c->call_ns == 30000000 && c->pid == 10 && c->tid == 11 &&
		         c->correlation == 4242 && c->domain == GTT_API_RUNTIME && c->cbid == 211 && c->name_id == 7 &&
		         c->flags == (GTT_CALLSTACK_FIRST | GTT_CALLSTACK_LONG | GTT_CALLSTACK_PY_TRUNC) &&
		         c->function == 0xa000, "scalar fields equal what was written");
		th_check(c->n_native == 3 && c->ips[0] == ips[0] && c->ips[2] == 0x401000, "native frames, leaf first");
		th_check(c->n_py == 2 && c->py[0].code_id == py[0].code_id && c->py[0].line == 44 &&
		         c->py[1].code_id == py[1].code_id && c->py[1].line == -1 && c->py[1].flags == GTT_PYFRAME_ENTRY,
		         "Python frames: code id, line, flags");
	}

	/* the same record through a 1.1 writer (packed, compressed block) comes back whole */
	{
		char path[] = "/tmp/gtt-cs11-XXXXXX";
		int fd = mkstemp(path), err = 0, ok = 0;
		gtt_writer *w = fd >= 0 ? gtt_writer_fdopen(fd, 0, &err) : NULL;
		if (w) {
			gtt_write(w, &r);
			gtt_writer_close(w);
			gtt_reader *rd = gtt_reader_open(path, &err);
			gtt_record back;
			while (rd && gtt_reader_next(rd, &back) == 1)
				if (back.tag == GTT_REC_CUDA_CALLSTACK)
					ok = back.u.callstack.correlation == 4242 && back.u.callstack.n_native == 3 &&
					     back.u.callstack.ips[1] == ips[1] && back.u.callstack.n_py == 2 &&
					     back.u.callstack.py[0].line == 44 && back.u.callstack.time_ns == 123456789;
			gtt_reader_close(rd);
		}
		unlink(path);
		th_check(ok, "a cuda_callstack record round-trips through a 1.1 (packed) trace");
	}

	/* counts that claim more frames than the payload holds are refused, never over-read */
	if (p && len > 60) {
		uint8_t *bad = malloc(len);
		memcpy(bad, p, len);
		size_t n_native_at = 8 + 8 + 7 * 4 + 8;
		bad[n_native_at + 3] = 0x40;
		th_check(gtt_decode(GTT_REC_CUDA_CALLSTACK, bad, len, &d, &scratch, &cap) == GTT_EINVAL,
		         "a native frame count beyond the payload is refused");
		memcpy(bad, p, len);
		size_t n_py_at = n_native_at + 4 + 3 * 8;
		bad[n_py_at] = 3;
		th_check(gtt_decode(GTT_REC_CUDA_CALLSTACK, bad, len, &d, &scratch, &cap) == GTT_EINVAL,
		         "a Python frame count beyond the payload is refused");
		int all_bad = 1;
		for (uint32_t cut = 0; cut < len; cut++)
			all_bad &= gtt_decode(GTT_REC_CUDA_CALLSTACK, p, cut, &d, &scratch, &cap) != 0;
		th_check(all_bad, "every cut-short payload is refused");
		free(bad);
	}

	gtt_record e = { .tag = GTT_REC_CUDA_CALLSTACK };
	e.u.callstack = (gtt_cuda_callstack){ .time_ns = 1, .pid = 2, .tid = 3, .flags = GTT_CALLSTACK_NTH | GTT_CALLSTACK_PY_NONE };
	free(p);
	p = NULL;
	th_check(encode(&e, &p, &len) == 0 && gtt_decode(GTT_REC_CUDA_CALLSTACK, p, len, &d, &scratch, &cap) == 0 &&
	         d.u.callstack.n_native == 0 && d.u.callstack.n_py == 0 && d.u.callstack.flags == e.u.callstack.flags,
	         "a stack with no frames (no unwinder, not a Python thread) round-trips");
	free(p);
	free(scratch);
	return th_report();
}
