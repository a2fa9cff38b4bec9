/* launch_report.h — the report's launch sites (launch_report.c) and the way launch stacks are
 * printed in one line, shared with the GPU-idle blame.
 * Return rule: analyze/'s (model.h); these print and return nothing. */
#ifndef ANA_LAUNCH_REPORT_H
#define ANA_LAUNCH_REPORT_H

#include <stdint.h>
#include <stdio.h>
#include "model.h"

/* Report section "Kernel launch sites": the top_n kernels, copies and memsets by GPU time, each
 * with its launch stacks, sampled counts and estimated launches and GPU time per site. Prints
 * nothing when the trace has no GPU work. */
void ana_launch_report(const ana_model *m, FILE *out, int top_n);
/* One frame: its name (cut before long C++ parameter lists), "(file:line)" for Python frames. */
void ana_launch_print_frame(const ana_model *m, FILE *out, uint32_t frame_id);
/* A launch stack in one line: up to n_py Python frames from the innermost, then "native: " and
 * up to n_native native frames from the caller of CUDA outwards. */
void ana_launch_print_stack(const ana_model *m, FILE *out, uint32_t stack_id, int n_py, int n_native);

/* A launch stack for a tooltip: "launch stack (why it was taken):", its Python frames from the
 * innermost, then its native frames from the caller of CUDA, one a line, at most max_frames in
 * all, into buf (always terminated). */
void ana_launch_stack_text(const ana_model *m, const ana_callstack *cs, int max_frames, char *buf, size_t len);

#endif
