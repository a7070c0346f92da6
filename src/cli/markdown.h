/* cli/markdown.h - GitHub-flavoured summaries for pull request comments (see markdown.c). */
#ifndef TT_CLI_MARKDOWN_H
#define TT_CLI_MARKDOWN_H

#include <stddef.h>

#include <jansson.h>

#include "util/buf.h"

/* A PR comment's limit, in characters. */
#define CLI_MARKDOWN_CAP 65536

/* tt_repo_diff's entries (described: kind, state_a, state_b) from `from` to
 * `to`; limit: entries shown per object (-1: all the backend gave); the text
 * stays within cap bytes.  -1 when out of memory. */
int cli_markdown_diff(tt_buf *out, const json_t *entries, const char *from, const char *to, long long limit,
		      size_t cap);

/* tt_repo_status's answer: the objects that are not clean, within cap bytes. */
int cli_markdown_status(tt_buf *out, const json_t *status, const char *dataset_id, size_t cap);

#endif
