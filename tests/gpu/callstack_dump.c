/* callstack_dump.c — prints the records of a trace (or of a header-less agent side file) that
 * launch-stack checks need, one per line, for tests/gpu/check_stacks.py:
 *   api pid= tid= corr= domain= cbid= name=
 *   kernel pid= corr= start= name=
 *   capture pid= tid= time= event= source= name=
 *   counter pid= time= name= value=
 *   code pid= id=0x.. line= name= qual= file=
 *   stack pid= tid= corr= domain= cbid= name= flags=0x.. fn=0x.. call_ns= native=N py=N frames=ID:LINE,...
 *         ipmap=PATH,PATH,PATH (the mappings holding the first three native frames)
 *   config pid= count= v0= v1= v2= v3= text=
 *   dropped pid= count= v0= v1= text=
 *   note pid= text=
 * Usage: callstack_dump FILE. Exit 0, 2 when the file does not read. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gtt.h"

typedef struct str { uint32_t pid, id; char *text; } str;
typedef struct map { uint32_t pid; uint64_t start, end; char *path; } map;

static str *strs;
static size_t n_strs, cap_strs;
static map *maps;
static size_t n_maps, cap_maps;

static const char *str_get(uint32_t pid, uint32_t id)
{
	for (size_t i = 0; i < n_strs; i++)
		if (strs[i].pid == pid && strs[i].id == id)
			return strs[i].text;
	return "?";
}

static const char *map_get(uint32_t pid, uint64_t ip)
{
	for (size_t i = n_maps; i-- > 0;)
		if (maps[i].pid == pid && ip >= maps[i].start && ip < maps[i].end)
			return maps[i].path;
	return "?";
}

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *p = malloc((size_t)n + GTT_HEADER_LEN);
	/* room for a header in front: a side file has none */
	if (p && fread(p + GTT_HEADER_LEN, 1, (size_t)n, f) != (size_t)n) {
		free(p);
		p = NULL;
	}
	fclose(f);
	*len = (size_t)n;
	return p;
}

static void one_line(const char *s)
{
	for (; *s; s++)
		putchar(*s == '\n' || *s == '\t' ? ' ' : *s);
}

int main(int argc, char **argv)
{
	size_t len = 0;
	int err = 0, rc;
	if (argc != 2) {
		fprintf(stderr, "usage: callstack_dump FILE\n");
		return 64;
	}
	uint8_t *buf = slurp(argv[1], &len);
	if (!buf) {
		fprintf(stderr, "callstack_dump: cannot read %s\n", argv[1]);
		return 2;
	}
	uint8_t *start = buf + GTT_HEADER_LEN;
	if (len < GTT_MAGIC_LEN || memcmp(start, GTT_MAGIC, GTT_MAGIC_LEN) != 0) {
		memcpy(buf, GTT_MAGIC, GTT_MAGIC_LEN);
		memset(buf + GTT_MAGIC_LEN, 0, GTT_HEADER_LEN - GTT_MAGIC_LEN);
		buf[8] = GTT_VERSION_MAJOR;
		start = buf;
		len += GTT_HEADER_LEN;
	}
	gtt_reader *r = gtt_reader_open_mem(start, len, &err);
	if (!r) {
		fprintf(stderr, "callstack_dump: %s: %s\n", argv[1], gtt_strerror(err));
		free(buf);
		return 2;
	}
	gtt_record rec;
	while ((rc = gtt_reader_next(r, &rec)) != 0) {
		if (rc < 0)
			continue;
		switch (rec.tag) {
		case GTT_REC_STRING:
			if (n_strs == cap_strs) {
				cap_strs = cap_strs ? cap_strs * 2 : 256;
				strs = realloc(strs, cap_strs * sizeof(*strs));
			}
			strs[n_strs++] = (str){ rec.u.string.pid, rec.u.string.id, strdup(rec.u.string.text) };
			break;
		case GTT_REC_MAPPING:
			if (n_maps == cap_maps) {
				cap_maps = cap_maps ? cap_maps * 2 : 256;
				maps = realloc(maps, cap_maps * sizeof(*maps));
			}
			maps[n_maps++] = (map){ rec.u.mapping.pid, rec.u.mapping.start, rec.u.mapping.end,
			                        strdup(rec.u.mapping.path) };
			break;
		case GTT_REC_CUDA_API:
			printf("api pid=%u tid=%u corr=%u domain=%u cbid=%u start=%llu end=%llu status=%d name=%s\n", rec.u.api.pid,
			       rec.u.api.tid, rec.u.api.correlation, rec.u.api.domain, rec.u.api.cbid,
			       (unsigned long long)rec.u.api.start_ns, (unsigned long long)rec.u.api.end_ns, rec.u.api.status,
			       str_get(rec.u.api.pid, rec.u.api.name_id));
			break;
		case GTT_REC_CUDA_KERNEL:
			printf("kernel pid=%u corr=%u start=%llu name=%s\n", rec.u.kernel.pid, rec.u.kernel.correlation,
			       (unsigned long long)rec.u.kernel.start_ns, str_get(rec.u.kernel.pid, rec.u.kernel.name_id));
			break;
		case GTT_REC_CAPTURE:
			printf("capture pid=%u tid=%u time=%llu event=%u source=%u name=%s\n", rec.u.capture.pid,
			       rec.u.capture.tid, (unsigned long long)rec.u.capture.time_ns, rec.u.capture.event,
			       rec.u.capture.source, rec.u.capture.name);
			break;
		case GTT_REC_COUNTER:
			printf("counter pid=%u time=%llu name=%s value=%.17g\n", rec.u.counter.pid,
			       (unsigned long long)rec.u.counter.time_ns, str_get(rec.u.counter.pid, rec.u.counter.name_id),
			       rec.u.counter.value);
			break;
		case GTT_REC_PY_CODE:
			printf("code pid=%u id=%#llx line=%d name=%s qual=%s file=%s\n", rec.u.py_code.pid,
			       (unsigned long long)rec.u.py_code.code_id, rec.u.py_code.first_line, rec.u.py_code.name,
			       rec.u.py_code.qualname, rec.u.py_code.filename);
			break;
		case GTT_REC_CUDA_CALLSTACK: {
			const gtt_cuda_callstack *c = &rec.u.callstack;
			printf("stack pid=%u tid=%u corr=%u domain=%u cbid=%u name=%s flags=%#x fn=%#llx call_ns=%llu "
			       "native=%u py=%u frames=", c->pid, c->tid, c->correlation, c->domain, c->cbid,
			       str_get(c->pid, c->name_id), c->flags, (unsigned long long)c->function,
			       (unsigned long long)c->call_ns, c->n_native, c->n_py);
			for (uint32_t i = 0; i < c->n_py; i++)
				printf("%s%#llx:%d", i ? "," : "", (unsigned long long)c->py[i].code_id, c->py[i].line);
			printf(" ipmap=");
			for (uint32_t i = 0; i < c->n_native && i < 3; i++)
				printf("%s%s", i ? "," : "", map_get(c->pid, c->ips[i]));
			printf("\n");
			break;
		}
		case GTT_REC_HEALTH: {
			const gtt_health *h = &rec.u.health;
			if (h->source != GTT_SRC_CUPTI)
				break;
			if (h->kind == GTT_HEALTH_CONFIG)
				printf("config pid=%u count=%llu v0=%llu v1=%llu v2=%llu v3=%llu text=", h->pid,
				       (unsigned long long)h->count, (unsigned long long)h->value[0],
				       (unsigned long long)h->value[1], (unsigned long long)h->value[2],
				       (unsigned long long)h->value[3]);
			else if (h->kind == GTT_HEALTH_DROPPED)
				printf("dropped pid=%u count=%llu v0=%llu v1=%llu text=", h->pid, (unsigned long long)h->count,
				       (unsigned long long)h->value[0], (unsigned long long)h->value[1]);
			else if (h->kind == GTT_HEALTH_NOTE)
				printf("note pid=%u text=", h->pid);
			else
				break;
			one_line(h->text);
			printf("\n");
			break;
		}
		default:
			break;
		}
	}
	gtt_reader_close(r);
	for (size_t i = 0; i < n_strs; i++)
		free(strs[i].text);
	for (size_t i = 0; i < n_maps; i++)
		free(maps[i].path);
	free(strs);
	free(maps);
	free(buf);
	return 0;
}
