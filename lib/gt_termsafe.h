/* gt_termsafe.h — text meant for people (gt-analyze's report, diff and check tables, warnings on
 * stderr of gt-analyze and gt-render; gt-record's --dump text and --top view) passes
 * through a filter that shows control characters as '?': names in a trace come from the
 * profiled program (a thread names itself, a Python function is called what its code says), and
 * an escape sequence or a carriage return in one must not reach the terminal, where it could
 * recolour, move the cursor over or rewrite what the report says. Kept: newline and tab; shown
 * as '?': the other C0 controls, DEL, and the C1 controls (U+0080..U+009F, UTF-8 C2 80..C2 9F;
 * some terminals read U+009B as ESC [). Other bytes, invalid UTF-8 included, pass unchanged.
 * Return rule (lib/): 0 or a negative GTT_E* code; NULL for objects. Never prints. */
#ifndef GT_TERMSAFE_H
#define GT_TERMSAFE_H

#include <stdio.h>

/* A stream that writes what it is given, filtered, to to (not owned: left open). NULL on
 * ENOMEM (the caller then writes to to directly). Unbuffered when to is stderr. */
FILE *gt_termsafe_open(FILE *to);
/* Flush and close the filter; 0, or GTT_EIO when a write to the underlying stream failed
 * (errno kept). NULL ok. */
int gt_termsafe_close(FILE *f);
/* Put the filter in front of the process's stderr (every message after this is filtered). */
void gt_termsafe_stderr(void);
/* The same rule on a string in place (fields shown inside a view that has escapes of its own). */
void gt_termsafe_scrub(char *s);

#endif
