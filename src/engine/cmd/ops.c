/*
 * engine/cmd/ops.c - this checkout's journal as the user sees it (`ops`), and
 * the dataset commits it records that the VCS no longer has (vcs drift:
 * undone or abandoned behind tether's back), which `status` warns about.
 */
#include "engine/cmd/ops.h"

#include <stdlib.h>
#include <string.h>

#include "core/layout.h"
#include "core/oplog.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/mem.h"
#include "vcs/dispatch.h"
#include "engine/kernel/repo.h"

/*
 * Which journal commits the VCS still has, cached in
 * .tether/cache/alive-commits under the VCS's alive_token (git: a digest of
 * the ref tips), so a status whose refs have not moved does not walk the
 * history again.  The file is only a cache: its first line is
 * "tether-alive-commits 1 <token>", then one "<commit> 0|1" line per commit
 * asked about; anything else in it, another token or a commit it does not
 * list sends the question to the VCS, whose answer replaces the file.
 */
#define ALIVE_CACHE "alive-commits"
#define ALIVE_MAGIC "tether-alive-commits 1 "
#define ALIVE_CACHE_MAX ((size_t)16 << 20)

static bool hex_id(const char *s, size_t n)
{
	if (n != 40 && n != 64)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* Every commit's answer from the cache: true when all were there. */
static bool alive_from_cache(const char *path, const char *token, const char **commits, size_t n, bool *alive)
{
	tt_buf b = TT_BUF_INIT;
	bool ok = false;
	size_t found = 0, next = 0;
	bool *have = tt_calloc(n ? n : 1, sizeof *have);
	if (!have || tt_read_file(path, &b, ALIVE_CACHE_MAX, NULL) < 0)
		goto done;
	size_t hl = strlen(ALIVE_MAGIC);
	if (b.len < hl + 65 || memcmp(b.ptr, ALIVE_MAGIC, hl) != 0 || memcmp(b.ptr + hl, token, 64) != 0 ||
	    b.ptr[hl + 64] != '\n')
		goto done;
	for (const char *p = b.ptr + hl + 65, *end = b.ptr + b.len; p < end;) {
		const char *le = memchr(p, '\n', (size_t)(end - p));
		if (!le)
			goto done;  /* a last line without its newline: cut short */
		size_t len = (size_t)(le - p);
		if (len < 3 || p[len - 2] != ' ' || (p[len - 1] != '0' && p[len - 1] != '1') || !hex_id(p, len - 2))
			goto done;
		/* written in the order asked: the next commit first, then a scan */
		for (size_t k = 0; k < n; k++) {
			size_t i = (next + k) % n;
			if (!have[i] && strlen(commits[i]) == len - 2 && memcmp(commits[i], p, len - 2) == 0) {
				have[i] = true;
				alive[i] = p[len - 1] == '1';
				found++;
				next = i + 1;
				break;
			}
		}
		p = le + 1;
	}
	ok = found == n;
done:
	free(have);
	tt_buf_release(&b);
	return ok;
}

static int alive_commits_cached(tt_repo *repo, const char **commits, size_t n, bool *alive, tt_error *err)
{
	tt_vcs *v = repo->vcs;
	char token[65], after[65];
	char *path = NULL;
	bool cacheable = tt_vcs_has(v, alive_token) && tt_vcs_alive_token(v, token) == 1 && strlen(token) == 64;
	int rc;

	for (size_t i = 0; cacheable && i < n; i++)
		cacheable = commits[i] && hex_id(commits[i], strlen(commits[i]));
	/* never through a link, as every cache */
	if (cacheable && (tt_refuse_links(repo->root, TT_DIR "/" TT_CACHE_DIR, NULL) < 0 ||
			  !(path = tt_asprintf("%s/" TT_DIR "/" TT_CACHE_DIR "/" ALIVE_CACHE, repo->root))))
		cacheable = false;
	if (cacheable && alive_from_cache(path, token, commits, n, alive)) {
		free(path);
		return 0;
	}
	rc = tt_vcs_alive_commits(v, (const char *const *)commits, n, alive, err);
	/* Kept only when the refs did not move while the VCS answered. */
	if (rc == 0 && cacheable && tt_vcs_alive_token(v, after) == 1 && strcmp(after, token) == 0) {
		tt_buf b = TT_BUF_INIT;
		tt_buf_printf(&b, ALIVE_MAGIC "%s\n", token);
		for (size_t i = 0; i < n; i++)
			tt_buf_printf(&b, "%s %c\n", commits[i], alive[i] ? '1' : '0');
		if (!b.failed)
			(void)tt_write_file_atomic(path, b.ptr, b.len, 0644, NULL);  /* a cache: best effort */
		tt_buf_release(&b);
	}
	free(path);
	return rc;
}

int tt_engine_vcs_drift(tt_repo *repo, const tt_oplog *log, json_t **out, tt_error *err)
{
	json_t *gone = json_object(), *alias = json_object(), *wanted = json_array();
	const char **commits = NULL;
	bool *alive = NULL;
	int rc = 0;
	*out = json_array();
	if (!gone || !alias || !wanted || !*out) {
		rc = tt_error_oom(err);
		goto done;
	}
	for (size_t i = 0; i < log->count; i++) {
		const tt_op_entry *e = &log->entries[i];
		size_t k;
		json_t *c;
		if (strcmp(e->command, "abandon") == 0)
			json_array_foreach(json_object_get(e->result, "abandoned"), k, c)
				if (json_is_string(c))
					json_object_set(gone, json_string_value(c), json_true());
		const char *old;
		json_object_foreach(json_object_get(e->result, "rewritten_commits"), old, c)
			if (json_is_string(c))
				json_object_set(alias, old, c);
	}
	for (size_t i = 0; i < log->count; i++) {
		const tt_op_entry *e = tt_oplog_newest(log, i);
		const char *commit = json_string_value(json_object_get(e->result, "vcs_commit"));
		if (strcmp(e->command, "commit") != 0 || json_is_string(e->undone_by) || !commit)
			continue;
		for (int hops = 0; hops < 64 && json_is_string(json_object_get(alias, commit)); hops++)
			commit = json_string_value(json_object_get(alias, commit));
		if (json_object_get(gone, commit))
			continue;
		json_array_append_new(wanted, json_pack("{s:s,s:s,s:i}", "commit", commit, "id", e->id,
							 "index", (json_int_t)i));
	}
	size_t n = json_array_size(wanted);
	if (!n)
		goto done;
	commits = tt_calloc(n, sizeof *commits);
	alive = tt_calloc(n, sizeof *alive);
	if (!commits || !alive) {
		rc = tt_error_oom(err);
		goto done;
	}
	for (size_t i = 0; i < n; i++)
		commits[i] = json_string_value(json_object_get(json_array_get(wanted, i), "commit"));
	if ((rc = alive_commits_cached(repo, commits, n, alive, err)) < 0)
		goto done;
	for (size_t i = 0; i < n; i++) {
		if (alive[i])
			continue;
		json_t *w = json_array_get(wanted, i);
		const tt_op_entry *e = tt_oplog_newest(log, (size_t)json_integer_value(json_object_get(w, "index")));
		json_t *referenced = json_object();
		const char *key;
		json_t *pid;
		json_object_foreach(json_object_get(e->result, "pinned"), key, pid) {
			if (!json_is_string(pid))
				continue;
			const tt_manifest *m = tt_manifests_find(&repo->objects, key);
			json_object_set_new(referenced, key,
					    json_boolean(m && m->pin_id && strcmp(m->pin_id, json_string_value(pid)) == 0));
		}
		/* The message status prints, as tether-vcs words it. */
		tt_buf msg = TT_BUF_INIT, kept = TT_BUF_INIT, dropped = TT_BUF_INIT;
		json_t *v;
		json_object_foreach(referenced, key, v)
			tt_buf_printf(json_is_true(v) ? &kept : &dropped, "%s%s",
				      (json_is_true(v) ? kept.len : dropped.len) ? ", " : "", key);
		const char *vc = json_string_value(json_object_get(e->result, "vcs_commit"));
		tt_buf_printf(&msg, "dataset commit %.12s (op %s) is no longer in VCS history: undone or "
			      "abandoned outside tether", vc, e->id);
		if (kept.len)
			tt_buf_printf(&msg, "; its pins for %s are still named by the working tree (commit again, "
				      "or restore the manifests to drop them)", kept.ptr);
		if (dropped.len)
			tt_buf_printf(&msg, "; its pins for %s are unreferenced; `gc` will release them, `repair` "
				      "recreates them if the commit comes back", dropped.ptr);
		json_array_append_new(*out, json_pack("{s:s,s:s,s:o,s:s}", "op", e->id, "commit", vc,
						      "referenced", referenced, "message", msg.ptr));
		tt_buf_release(&msg);
		tt_buf_release(&kept);
		tt_buf_release(&dropped);
	}
done:
	free(commits);
	free(alive);
	json_decref(gone);
	json_decref(alias);
	json_decref(wanted);
	return rc;
}

int tt_repo_ops(tt_repo *repo, size_t limit, json_t **out, char **text, tt_error *err)
{
	tt_oplog log = TT_OPLOG_INIT;
	json_t *drift = NULL, *drifted = json_object();
	tt_buf t = TT_BUF_INIT;
	int rc;
	*out = NULL;
	if (text)
		*text = NULL;
	if ((rc = tt_oplog_read(repo->root, &log, err)) < 0) {
		json_decref(drifted);
		return rc;
	}
	if ((rc = tt_engine_vcs_drift(repo, &log, &drift, err)) < 0)
		goto done;
	size_t i;
	json_t *d;
	json_array_foreach(drift, i, d)
		json_object_set(drifted, json_string_value(json_object_get(d, "op")), json_true());
	*out = json_array();
	for (i = 0; i < log.count && i < limit; i++) {
		const tt_op_entry *e = tt_oplog_newest(&log, i);
		bool gone = json_object_get(drifted, e->id) != NULL;
		json_array_append_new(*out, tt_op_to_json(e, gone));
		char *line = tt_op_format_line(e, gone);
		if (line)
			tt_buf_printf(&t, "%s\n", line);
		free(line);
	}
	if (!log.count)
		tt_buf_puts(&t, "no operations recorded\n");
	if (text)
		*text = tt_buf_detach(&t);
done:
	tt_oplog_free(&log);
	json_decref(drift);
	json_decref(drifted);
	tt_buf_release(&t);
	return rc;
}
