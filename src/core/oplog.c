/* core/oplog.c - appending to the journal (see oplog.h). */
#include "core/oplog.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/ids.h"
#include "core/layout.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/json.h"

void tt_now_iso_seconds(char out[32])
{
	time_t t = time(NULL);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(out, 32, "%Y-%m-%dT%H:%M:%S+00:00", &tm);
}

int tt_oplog_append(const char *root, json_t *line, tt_error *err)
{
	/* json.dumps(obj) defaults: ", " and ": ", ensure_ascii, insertion order. */
	static const tt_json_style style = { -1, false, true, false };
	tt_buf b = TT_BUF_INIT;
	char *path = tt_tether_path(root, TT_OPS_FILENAME);
	int rc;
	if (!path)
		return tt_error_oom(err);
	tt_json_dump(&b, line, style);
	tt_buf_putc(&b, '\n');
	rc = tt_buf_check(&b, err, "journal entry");
	if (rc == 0)
		rc = tt_append_fsync(path, b.ptr, b.len, 0644, err);
	free(path);
	tt_buf_release(&b);
	return rc;
}

int tt_oplog_record(const char *root, const char *command, json_t *result, json_t *pre,
		    char *id_out, tt_error *err)
{
	char id[TT_OP_ID_LEN + 1], at[32];
	int rc;
	if ((rc = tt_random_hex(id, TT_OP_ID_LEN, err)) < 0)
		return rc;
	tt_now_iso_seconds(at);
	json_t *e = json_pack("{s:s,s:s,s:s,s:n,s:O,s:O,s:n,s:n,s:s,s:n,s:[]}", "id", id, "at", at,
			      "command", command, "plan", "result", result, "pre", pre, "undoes",
			      "undone_by", "status", "done", "parent", "progress");
	if (!e)
		return tt_error_oom(err);
	rc = tt_oplog_append(root, e, err);
	json_decref(e);
	if (rc == 0 && id_out)
		memcpy(id_out, id, sizeof id);
	return rc;
}
