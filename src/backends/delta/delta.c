/*
 * backends/delta/delta.c - Delta Lake tables, read natively from `_delta_log`.
 *
 * Addressable tier: a state is {version, table_id}.  The version is the
 * newest commit the log lists (`_last_checkpoint` is only a hint, so the
 * directory is listed); the table id is `metaData.id`, taken from the
 * cheapest source that has it: the version's `.crc`, the commit JSONs back
 * to the checkpoint, the `_last_checkpoint` V2 non-file actions, a JSON V2
 * checkpoint, or the column statistics in a Parquet checkpoint's footer.
 * When none says, the id is "unknown" (never a guess).  No data file is
 * read, except that `verify --deep` checks the files a version needs still
 * exist.  Delta has no refs: nothing is pinned or forked, versions are
 * recorded, and tether never writes a table.  A table on an object store
 * (s3://, gs://, az://) is read through the storage layer: one paged
 * LIST of _delta_log/, GETs of its files, a ranged GET of a Parquet
 * checkpoint's footer.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "backends/backend.h"
#include "backends/kit.h"
#include "backends/delta/delta.h"
#include "formats/parquet.h"
#include "storage/open.h"
#include "storage/store.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/json.h"
#include "util/mem.h"

#define KIND "delta"
#define UNKNOWN_ID "unknown"
#define LOG_DIR "_delta_log"
#define MAX_LOG_FILE ((size_t)512 << 20)

/* --- errors -------------------------------------------------------------------- */


/* A reader's error, with the table named and the kind attached. */
static int named(tt_error *err, int rc, const char *uri)
{
	if (rc == TT_ENOMEM)
		return KOOM(err);
	tt_error_prefix(err, "delta table %s", uri);
	if (err && err->code == TT_EPARSE)
		err->code = TT_EBACKEND; /* the store's content, not tether's input */
	tt_error_object(err, NULL, KIND);
	return err ? err->code : rc;
}

/* --- the log directory ------------------------------------------------------------ */

typedef enum flavour { CP_CLASSIC, CP_MULTI, CP_UUID_JSON, CP_UUID_PARQUET } flavour;

typedef struct ckpt {
	long long version;
	flavour kind;
	long long part, parts;
	char *name;
} ckpt;

typedef struct dlog {
	const char *uri;   /* as the locator gives it (messages, addresses) */
	char *root;        /* the local table directory (remote: the URI, no trailing '/') */
	char *dir;         /* root/_delta_log */
	tt_store *st;      /* the table's store: its directory, or an object store */
	bool remote;       /* an object store */
	char *prefix;      /* the table's key prefix: "" locally, "" or "a/t/" remote */
	long long *commits;
	size_t nc, ac;
	ckpt *cps;
	size_t ncp, acp;
	long long head;
} dlog;

static void dlog_release(dlog *l)
{
	free(l->root);
	free(l->dir);
	tt_store_close(l->st);
	free(l->prefix);
	free(l->commits);
	for (size_t i = 0; i < l->ncp; i++)
		free(l->cps[i].name);
	free(l->cps);
	memset(l, 0, sizeof *l);
}

static bool digits(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return n > 0;
}

static long long number(const char *s, size_t n)
{
	long long v = 0;
	for (size_t i = 0; i < n; i++)
		v = v * 10 + (s[i] - '0');
	return v;
}

static bool uuid_like(const char *s, size_t n)
{
	if (n == 0 || n > 64)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f') ||
		      (s[i] >= 'A' && s[i] <= 'F') || s[i] == '-'))
			return false;
	return true;
}

/* Sort one entry of the directory into the log; others are ignored. */
static int classify(dlog *l, const char *name, tt_error *err)
{
	size_t n = strlen(name);
	if (n < 21 || name[0] == '.' || !digits(name, 20) || name[20] != '.')
		return 0;
	long long v = number(name, 20);
	const char *rest = name + 21;
	if (strcmp(rest, "json") == 0) {
		if (TT_ARRAY_GROW(l->commits, l->ac, l->nc + 1) != 0)
			return KOOM(err);
		l->commits[l->nc++] = v;
		return 0;
	}
	if (strncmp(rest, "checkpoint.", 11) != 0)
		return 0;
	rest += 11;
	ckpt c = { .version = v };
	size_t rn = strlen(rest);
	if (strcmp(rest, "parquet") == 0) {
		c.kind = CP_CLASSIC;
	} else if (rn == 10 + 1 + 10 + 8 && digits(rest, 10) && rest[10] == '.' &&
		   digits(rest + 11, 10) && strcmp(rest + 21, ".parquet") == 0) {
		c.kind = CP_MULTI;
		c.part = number(rest, 10);
		c.parts = number(rest + 11, 10);
	} else if (rn > 5 && strcmp(rest + rn - 5, ".json") == 0 && uuid_like(rest, rn - 5)) {
		c.kind = CP_UUID_JSON;
	} else if (rn > 8 && strcmp(rest + rn - 8, ".parquet") == 0 && uuid_like(rest, rn - 8)) {
		c.kind = CP_UUID_PARQUET;
	} else {
		return 0;
	}
	if (TT_ARRAY_GROW(l->cps, l->acp, l->ncp + 1) != 0 || !(c.name = tt_strdup(name)))
		return KOOM(err);
	l->cps[l->ncp++] = c;
	return 0;
}

static int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;
	return (x > y) - (x < y);
}

static bool has_commit(const dlog *l, long long v)
{
	return l->nc && bsearch(&v, l->commits, l->nc, sizeof *l->commits, cmp_ll) != NULL;
}

/* The best complete checkpoint at version v, or NULL: a single file first;
 * a multi-part one only with every part present. */
static const ckpt *checkpoint_at(const dlog *l, long long v)
{
	const ckpt *multi = NULL;
	for (size_t i = 0; i < l->ncp; i++) {
		const ckpt *c = &l->cps[i];
		if (c->version != v)
			continue;
		if (c->kind != CP_MULTI)
			return c;
		if (c->part == 1 && c->parts >= 1 && !multi) {
			long long seen = 0;
			for (size_t j = 0; j < l->ncp; j++)
				if (l->cps[j].version == v && l->cps[j].kind == CP_MULTI &&
				    l->cps[j].parts == c->parts && l->cps[j].part >= 1 &&
				    l->cps[j].part <= c->parts)
					seen++;
			if (seen == c->parts)
				multi = c;
		}
	}
	return multi;
}

/* The newest complete checkpoint at or below v (-1: none). */
static long long checkpoint_below(const dlog *l, long long v)
{
	long long best = -1;
	for (size_t i = 0; i < l->ncp; i++)
		if (l->cps[i].version <= v && l->cps[i].version > best &&
		    checkpoint_at(l, l->cps[i].version))
			best = l->cps[i].version;
	return best;
}

static int locator_uri(const json_t *loc, const char **uri, tt_error *err)
{
	json_t *v = json_object_get(loc, "uri");
	if (!json_is_string(v) || !json_string_length(v))
		v = json_object_get(loc, "path");
	if (!json_is_string(v) || !json_string_length(v))
		return KERR(err, TT_EBACKEND, "delta locator needs 'uri'");
	*uri = json_string_value(v);
	return 0;
}

/* The local directory a uri names, or (0 with *root NULL) none. */
static int local_root(const char *uri, char **root, tt_error *err)
{
	int local = tt_store_local_path(uri, root);
	if (local < 0)
		return KOOM(err);
	return 0;
}

/* The key of a file under _delta_log. */
static char *log_key(const dlog *l, const char *name)
{
	return tt_asprintf("%s" LOG_DIR "/%s", l->prefix, name);
}

/* A table on an object store: its store and key prefix. */
static int open_remote(tt_backend *b, const json_t *loc, dlog *l, tt_error *err)
{
	json_t *opts = NULL;
	char *key = NULL;
	int rc = tt_kit_storage_options(b, loc, &opts, err);
	size_t n;
	if (rc)
		return rc;
	rc = tt_store_open_uri(l->uri, opts, &l->st, &key, err);
	json_decref(opts);
	if (rc)
		return tt_error_object(err, NULL, KIND);
	l->remote = true;
	n = strlen(key);
	while (n && key[n - 1] == '/')
		key[--n] = '\0';
	l->prefix = n ? tt_asprintf("%s/", key) : tt_strdup("");
	free(key);
	n = strlen(l->uri);
	while (n > 1 && l->uri[n - 1] == '/')
		n--;
	l->root = tt_strndup(l->uri, n);
	if (!l->prefix || !l->root || !(l->dir = tt_asprintf("%s/" LOG_DIR, l->root)))
		return KOOM(err);
	return 0;
}

/* A local table: the store on its directory. */
static int open_local(dlog *l, tt_error *err)
{
	int rc;
	if (!tt_is_dir(l->root))
		return KERR(err, TT_EBACKEND, "delta table not found: %s (no such directory)", l->uri);
	if (!(l->prefix = tt_strdup("")) || !(l->dir = tt_path_join(l->root, LOG_DIR)))
		return KOOM(err);
	if ((rc = tt_store_local_open(l->root, false, &l->st, err)) != 0)
		return tt_error_object(err, NULL, KIND);
	return 0;
}

/* List _delta_log: commits, checkpoints and the head version. */
static int scan(tt_backend *b, const json_t *loc, dlog *l, tt_error *err)
{
	tt_store_page page = { 0 };
	char *dir = NULL;
	int rc;

	memset(l, 0, sizeof *l);
	if ((rc = locator_uri(loc, &l->uri, err)) != 0 || (rc = local_root(l->uri, &l->root, err)))
		return rc;
	if ((rc = l->root ? open_local(l, err) : open_remote(b, loc, l, err)) != 0)
		return rc;
	/* the names directly under _delta_log/ (one directory locally) */
	if (!(dir = tt_asprintf("%s" LOG_DIR, l->prefix)))
		return KOOM(err);
	if ((rc = tt_store_list_names(l->st, dir, &page, err)) != 0) {
		free(dir);
		tt_error_prefix(err, "delta table %s: cannot list %s", l->uri, l->dir);
		return tt_error_object(err, NULL, KIND);
	}
	for (size_t i = 0; i < page.n && rc == 0; i++)
		rc = classify(l, page.items[i].key, err);
	/* nothing listed: no _delta_log at all, or (locally) an empty one */
	if (rc == 0 && page.n == 0 && !tt_store_has_dir(l->st, dir))
		rc = KERR(err, TT_EBACKEND,
			  "delta table not found: %s has no %s%s (is it a Delta table?)", l->uri, LOG_DIR,
			  l->remote ? "" : " directory");
	tt_store_page_release(&page);
	free(dir);
	if (rc)
		return rc;
	if (l->nc > 1) /* no commits at all: only a checkpoint is left */
		qsort(l->commits, l->nc, sizeof *l->commits, cmp_ll);
	l->head = l->nc ? l->commits[l->nc - 1] : -1;
	for (size_t i = 0; i < l->ncp; i++)
		if (l->cps[i].version > l->head && checkpoint_at(l, l->cps[i].version))
			l->head = l->cps[i].version;
	if (l->head < 0)
		return KERR(err, TT_EBACKEND, "delta table %s: %s has no commits", l->uri, l->dir);
	return 0;
}

/*
 * Can version v be read?  It needs a complete checkpoint at or below it and
 * every commit after that up to v, or every commit from 0.  *base: the
 * checkpoint's version (-1: none).
 */
static int resolve(const dlog *l, long long v, long long *base, tt_error *err)
{
	long long cp;
	if (v > l->head)
		return KERR(err, TT_EBACKEND, "delta table %s has no version %lld (head is v%lld)",
			    l->uri, v, l->head);
	cp = checkpoint_below(l, v);
	for (long long k = v; k > cp; k--) {
		if (has_commit(l, k))
			continue;
		/* Commits on both sides of a missing one: a hole.  Otherwise log
		 * cleanup took the oldest commits, as it does. */
		if (l->nc && l->commits[0] < k)
			return KERR(err, TT_EBACKEND,
				    "delta table %s: the transaction log has a gap: %s/%020lld.json "
				    "is missing, so version %lld cannot be read", l->uri, l->dir, k, v);
		return KERR(err, TT_EBACKEND,
			    "delta table %s: version %lld is no longer in the log (log cleanup "
			    "removed commit %lld and no checkpoint at or below v%lld stands in)", l->uri, v,
			    k, v);
	}
	*base = cp;
	return 0;
}

/* --- reading log files ------------------------------------------------------------ */

static char *log_path(const dlog *l, const char *name)
{
	return tt_path_join(l->dir, name);
}

/* A file under _delta_log, whole. */
static int log_get(const dlog *l, const char *name, tt_buf *out, tt_error *err)
{
	char *key = log_key(l, name);
	int rc;
	if (!key)
		return KOOM(err);
	out->max = MAX_LOG_FILE;
	rc = tt_store_get(l->st, key, NULL, out, NULL, err);
	free(key);
	return rc;
}

static int read_log_file(const dlog *l, const char *name, tt_buf *out, tt_error *err)
{
	char *path = log_path(l, name);
	int rc;
	if (!path)
		return KOOM(err);
	rc = log_get(l, name, out, err);
	if (rc)
		rc = named(err, rc, l->uri);
	free(path);
	return rc;
}

/* Read commit v whole (info_only: only its commitInfo). */
static int read_commit(const dlog *l, long long v, bool info_only, tt_delta_commit *c,
		       tt_error *err)
{
	char name[32];
	tt_buf text = TT_BUF_INIT;
	char *what = NULL;
	int rc;

	snprintf(name, sizeof name, "%020lld.json", v);
	if ((rc = read_log_file(l, name, &text, err)) != 0)
		goto done;
	if (!(what = log_path(l, name))) {
		rc = KOOM(err);
		goto done;
	}
	rc = info_only ? tt_delta_parse_commit_info(text.ptr, text.len, what, c, err)
		       : tt_delta_parse_commit(text.ptr, text.len, what, c, err);
	if (rc)
		rc = named(err, rc, l->uri);
done:
	tt_buf_release(&text);
	free(what);
	return rc;
}

/* metaData.id from the version's .crc (a hint: unreadable means "not here"). */
static char *crc_id(const dlog *l, long long v)
{
	char name[32];
	tt_buf text = TT_BUF_INIT;
	tt_error ignored = TT_ERROR_INIT;
	char *id = NULL;

	snprintf(name, sizeof name, "%020lld.crc", v);
	char *path = log_path(l, name);
	if (path && log_get(l, name, &text, &ignored) == 0) {
		json_t *j = tt_json_parse(text.ptr, text.len, name, &ignored);
		json_t *mid = json_object_get(json_object_get(j, "metadata"), "id");
		if (json_is_string(mid))
			id = tt_strdup(json_string_value(mid));
		json_decref(j);
	}
	tt_error_clear(&ignored);
	tt_buf_release(&text);
	free(path);
	return id;
}

/* metaData.id from _last_checkpoint's V2 non-file actions, when it is about
 * checkpoint version cp (a hint too). */
static char *hint_id(const dlog *l, long long cp)
{
	tt_buf text = TT_BUF_INIT;
	tt_error ignored = TT_ERROR_INIT;
	char *id = NULL;
	char *path = log_path(l, "_last_checkpoint");

	if (path && log_get(l, "_last_checkpoint", &text, &ignored) == 0) {
		json_t *j = tt_json_parse(text.ptr, text.len, "_last_checkpoint", &ignored);
		json_t *ver = json_object_get(j, "version");
		json_t *acts = json_object_get(json_object_get(j, "v2Checkpoint"), "nonFileActions");
		size_t i;
		json_t *a;
		if (json_is_integer(ver) && json_integer_value(ver) == cp && json_is_array(acts))
			json_array_foreach(acts, i, a) {
				json_t *mid = json_object_get(json_object_get(a, "metaData"), "id");
				if (json_is_string(mid) && !id)
					id = tt_strdup(json_string_value(mid));
			}
		json_decref(j);
	}
	tt_error_clear(&ignored);
	tt_buf_release(&text);
	free(path);
	return id;
}

/* A Parquet file's footer and trailer (the whole tail): a HEAD for the
 * size, two ranged reads. */
static int read_tail(const dlog *l, const char *name, tt_buf *out, tt_error *err)
{
	char *key = log_key(l, name), *path = log_path(l, name);
	tt_store_meta meta = { 0 };
	tt_buf last = TT_BUF_INIT;
	uint32_t flen;
	int rc;

	if (!key || !path) {
		rc = KOOM(err);
		goto done;
	}
	if ((rc = tt_store_head(l->st, key, NULL, &meta, err)) != 0) {
		rc = tt_error_object(err, NULL, KIND);
		goto done;
	}
	if (meta.size < 12 ||
	    (rc = tt_store_get_range(l->st, key, NULL, meta.size - 8, 8, &last, err)) != 0 ||
	    last.len != 8) {
		if (!rc)
			rc = KERR(err, TT_EBACKEND, "delta table %s: %s is too short to be a Parquet "
				  "checkpoint (truncated?)", l->uri, path);
		else
			tt_error_object(err, NULL, KIND);
		goto done;
	}
	if ((rc = tt_delta_footer_length((const unsigned char *)last.ptr, path, &flen, err)) != 0) {
		rc = named(err, rc, l->uri);
		goto done;
	}
	if ((uint64_t)flen > meta.size - 8 || flen > MAX_LOG_FILE) {
		rc = KERR(err, TT_EBACKEND, "delta table %s: %s: the Parquet footer says %u bytes but "
			  "the file has only %llu (truncated?)", l->uri, path, flen,
			  (unsigned long long)meta.size - 8);
		goto done;
	}
	if ((rc = tt_store_get_range(l->st, key, NULL, meta.size - 8 - flen, (uint64_t)flen + 8,
				     out, err)) != 0) {
		rc = tt_error_object(err, NULL, KIND);
		goto done;
	}
	if (out->len != (size_t)flen + 8)
		rc = KERR(err, TT_EBACKEND, "delta table %s: %s changed while it was read; try again",
			  l->uri, path);
done:
	tt_store_meta_release(&meta);
	tt_buf_release(&last);
	free(key);
	free(path);
	return rc;
}

static int parquet_id(const dlog *l, const char *name, char **id, tt_error *err)
{
	tt_buf tail = TT_BUF_INIT;
	char *what = log_path(l, name);
	int rc = what ? read_tail(l, name, &tail, err) : KOOM(err);
	if (rc == 0 && (rc = tt_delta_footer_table_id((const unsigned char *)tail.ptr, tail.len,
						      what, id, err)) != 0)
		rc = named(err, rc, l->uri);
	tt_buf_release(&tail);
	free(what);
	return rc;
}

/* The table id a checkpoint at cp gives (*id NULL: it does not say). */
static int checkpoint_id(const dlog *l, long long cp, char **id, tt_error *err)
{
	const ckpt *c = checkpoint_at(l, cp);
	int rc = 0;

	*id = NULL;
	if ((*id = hint_id(l, cp)) != NULL || !c)
		return 0;
	if (c->kind == CP_UUID_JSON) {
		tt_buf text = TT_BUF_INIT;
		tt_delta_commit cc;
		char *what = log_path(l, c->name);
		if (!what)
			return KOOM(err);
		if ((rc = read_log_file(l, c->name, &text, err)) == 0) {
			if ((rc = tt_delta_parse_commit(text.ptr, text.len, what, &cc, err)) != 0) {
				rc = named(err, rc, l->uri);
			} else {
				*id = cc.table_id;
				cc.table_id = NULL;
				tt_delta_commit_release(&cc);
			}
		}
		tt_buf_release(&text);
		free(what);
		return rc;
	}
	if (c->kind != CP_MULTI)
		return parquet_id(l, c->name, id, err);
	for (size_t i = 0; i < l->ncp && !*id && rc == 0; i++)
		if (l->cps[i].version == cp && l->cps[i].kind == CP_MULTI &&
		    l->cps[i].parts == c->parts)
			rc = parquet_id(l, l->cps[i].name, id, err);
	return rc;
}

/* metaData.id as of version v (base: its checkpoint, -1 for none);
 * "unknown" when nothing in the log says. */
static int table_id_at(const dlog *l, long long v, long long base, char **id, tt_error *err)
{
	int rc;
	*id = crc_id(l, v);
	for (long long k = v; !*id && k > base; k--) {
		tt_delta_commit c;
		if ((rc = read_commit(l, k, false, &c, err)) != 0)
			return rc;
		*id = c.table_id;
		c.table_id = NULL;
		tt_delta_commit_release(&c);
	}
	if (!*id && base >= 0 && (rc = checkpoint_id(l, base, id, err)) != 0)
		return rc;
	if (!*id && !(*id = tt_strdup(UNKNOWN_ID)))
		return KOOM(err);
	return 0;
}

/* --- versions named by locators, refs and states ------------------------------------- */

/* A version number given as text or an integer (*v -1: none given). */
static int version_of(const json_t *value, const char *what, long long *v, tt_error *err)
{
	*v = -1;
	if (!value || json_is_null(value))
		return 0;
	if (json_is_integer(value) && json_integer_value(value) >= 0) {
		*v = json_integer_value(value);
		return 0;
	}
	if (json_is_string(value)) {
		const char *s = json_string_value(value);
		size_t n = strlen(s);
		if (n == 0)
			return 0;
		if (digits(s, n) && n <= 18) {
			*v = number(s, n);
			return 0;
		}
		return KERR(err, TT_EBACKEND, "delta %s must be a table version number, got '%s'", what,
			    s);
	}
	return KERR(err, TT_EBACKEND, "delta %s must be a table version number", what);
}

static int at_version(const json_t *loc, long long *v, tt_error *err)
{
	return version_of(json_object_get(loc, "at"), "`at`", v, err);
}

static int state_version(const json_t *state, long long *v, tt_error *err)
{
	int rc = version_of(json_object_get(state, "version"), "state's version", v, err);
	if (rc == 0 && *v < 0)
		return KERR(err, TT_EBACKEND, "a delta state needs a version");
	return rc;
}

static json_t *state_json(long long v, const char *id)
{
	return json_pack("{s:I, s:s}", "version", (json_int_t)v, "table_id", id);
}

/* --- identity, fingerprint ----------------------------------------------------------- */

static int delta_identity(tt_backend *b, const json_t *loc, json_t **out, tt_error *err)
{
	const char *uri = NULL;
	int rc;
	*out = NULL;
	if ((rc = locator_uri(loc, &uri, err)) != 0)
		return rc;
	return tt_kit_uri_identity(b, uri, out, err);
}

static int delta_fingerprint(tt_backend *b, const json_t *loc, const char *working_ref,
			     json_t **state, tt_error *err)
{
	dlog l;
	long long v, base;
	char *id = NULL;
	int rc;

	(void)b, (void)working_ref; /* no branches: the table's own log */
	*state = NULL;
	if ((rc = at_version(loc, &v, err)) != 0)
		return rc;
	if ((rc = scan(b, loc, &l, err)) != 0)
		goto done;
	if (v < 0)
		v = l.head;
	if ((rc = resolve(&l, v, &base, err)) != 0 || (rc = table_id_at(&l, v, base, &id, err)))
		goto done;
	if (!(*state = state_json(v, id)))
		rc = KOOM(err);
done:
	free(id);
	dlog_release(&l);
	return rc;
}

/* Pins and forks: none (the kit's stubs, see the ops table). */

/* --- history and diff ------------------------------------------------------------------ */

/* tether-vcs's iso_utc on an epoch number (s, ms or us by magnitude). */
static char *iso_utc(long long t)
{
	char out[40];
	long long s = t;
	if (t > 100000000000000LL)
		s = t >= 0 ? t / 1000000 : -((-t + 999999) / 1000000);
	else if (t > 100000000000LL)
		s = t >= 0 ? t / 1000 : -((-t + 999) / 1000);
	time_t tt = (time_t)s;
	struct tm tm;
	if (!gmtime_r(&tt, &tm))
		return NULL;
	strftime(out, sizeof out, "%Y-%m-%dT%H:%M:%S+00:00", &tm);
	return tt_strdup(out);
}

/* "+2 rows, -1 rows"; with files, also "+1 files, -1 files". */
static int describe(tt_buf *out, const tt_delta_metrics *m, bool files)
{
	struct { long long v; const char *sign, *label; } parts[] = {
		{ m->added_rows, "+", "rows" },     { m->deleted_rows, "-", "rows" },
		{ m->updated_rows, "~", "rows" },   { m->added_files, "+", "files" },
		{ m->removed_files, "-", "files" },
	};
	size_t n = files ? 5 : 3, shown = 0;
	for (size_t i = 0; i < n; i++) {
		if (parts[i].v <= 0)
			continue;
		tt_buf_printf(out, "%s%s%lld %s", shown++ ? ", " : "", parts[i].sign, parts[i].v,
			      parts[i].label);
	}
	return (int)shown;
}

static char *message_of(const tt_delta_commit *c, bool files)
{
	tt_buf b = TT_BUF_INIT;
	const char *op = c->operation ? c->operation : "COMMIT";
	tt_buf_puts(&b, op);
	tt_buf_puts(&b, ": ");
	size_t mark = b.len;
	if (describe(&b, &c->metrics, files) == 0) {
		if (files)
			tt_buf_puts(&b, "metadata");
		else
			tt_buf_truncate(&b, mark - 2);
	}
	if (b.failed) {
		tt_buf_release(&b);
		return NULL;
	}
	return tt_buf_detach(&b);
}

/* When a commit happened: inCommitTimestamp, commitInfo.timestamp, else
 * the commit file's modification time. */
static char *when_of(const dlog *l, long long v, const tt_delta_commit *c)
{
	if (c->has_ict)
		return iso_utc(c->ict_ms);
	if (c->has_timestamp)
		return iso_utc(c->timestamp_ms);
	char name[32];
	struct stat st;
	snprintf(name, sizeof name, "%020lld.json", v);
	char *path = log_path(l, name);
	char *out = path && stat(path, &st) == 0 ? iso_utc((long long)st.st_mtime) : NULL;
	free(path);
	return out;
}

static int delta_history(tt_backend *b, const json_t *loc, const char *ref, size_t limit,
			 tt_history_entry **out, size_t *n, tt_error *err)
{
	dlog l;
	long long hi;
	tt_history_entry *entries = NULL;
	size_t count = 0, alloc = 0;
	int rc;

	(void)b;
	*out = NULL;
	*n = 0;
	if (ref && *ref) {
		json_t *r = json_string(ref);
		rc = r ? version_of(r, "history start", &hi, err) : KOOM(err);
		json_decref(r);
	} else {
		rc = at_version(loc, &hi, err);
	}
	if (rc)
		return rc;
	if ((rc = scan(b, loc, &l, err)) != 0)
		goto done;
	if (hi < 0)
		hi = l.head;
	if (hi > l.head) {
		rc = KERR(err, TT_EBACKEND, "delta table %s has no version %lld (head is v%lld)", l.uri,
			  hi, l.head);
		goto done;
	}
	/* Commits survive only as JSON: the log lists back to the first gap. */
	for (long long v = hi; v >= 0 && count < limit && has_commit(&l, v); v--) {
		tt_delta_commit c;
		if ((rc = read_commit(&l, v, true, &c, err)) != 0)
			goto done;
		if (TT_ARRAY_GROW(entries, alloc, count + 1) != 0) {
			tt_delta_commit_release(&c);
			rc = KOOM(err);
			goto done;
		}
		tt_history_entry *e = &entries[count++];
		memset(e, 0, sizeof *e);
		e->id = tt_asprintf("%lld", v);
		e->when = when_of(&l, v, &c);
		e->message = message_of(&c, false);
		e->refs = json_array();
		tt_delta_commit_release(&c);
		if (!e->id || !e->message || !e->refs) {
			rc = KOOM(err);
			goto done;
		}
	}
	*out = entries;
	*n = count;
	entries = NULL;
done:
	tt_history_release(entries, count);
	dlog_release(&l);
	return rc;
}

static int add_note(tt_object_diff *out, const char *note, tt_error *err)
{
	char *n = out->note ? tt_asprintf("%s; %s", out->note, note) : tt_strdup(note);
	if (!n)
		return KOOM(err);
	free(out->note);
	out->note = n;
	return 0;
}

static int delta_diff(tt_backend *b, const json_t *loc, const json_t *a, const json_t *bstate,
		      const char *la, const char *lb, tt_object_diff *out, tt_error *err)
{
	dlog l;
	long long va, vb, lo, hi, gone = 0;
	int rc;
	const char *ia = json_string_value(json_object_get(a, "table_id"));
	const char *ib = json_string_value(json_object_get(bstate, "table_id"));

	(void)b, (void)la, (void)lb;
	memset(&l, 0, sizeof l);
	tt_object_diff_init(out, "commits");
	if ((rc = state_version(a, &va, err)) != 0 || (rc = state_version(bstate, &vb, err)) != 0)
		return rc;
	if ((!ia != !ib || (ia && strcmp(ia, ib) != 0)) &&
	    (rc = add_note(out, "table was recreated between the two states", err)) != 0)
		return rc;
	if (va == vb)
		return 0;
	lo = va < vb ? va : vb;
	hi = va < vb ? vb : va;
	if (vb < va && (rc = add_note(out, "b is older than a", err)) != 0)
		return rc;
	if ((rc = scan(b, loc, &l, err)) != 0)
		goto done;
	if (hi > l.head) {
		rc = KERR(err, TT_EBACKEND, "delta table %s has no version %lld (head is v%lld)", l.uri,
			  hi, l.head);
		goto done;
	}
	for (long long v = lo + 1; v <= hi; v++) {
		tt_delta_commit c;
		char path[32], *detail;
		if (!has_commit(&l, v)) {
			gone++;
			continue;
		}
		if ((rc = read_commit(&l, v, true, &c, err)) != 0)
			goto done;
		snprintf(path, sizeof path, "v%lld", v);
		detail = message_of(&c, true);
		tt_delta_commit_release(&c);
		if (!detail) {
			rc = KOOM(err);
			goto done;
		}
		rc = tt_object_diff_add(out, path, "modified", detail, err);
		free(detail);
		if (rc)
			goto done;
	}
	if (gone) {
		char note[96];
		snprintf(note, sizeof note, "%lld commit%s no longer in the log", gone,
			 gone == 1 ? " is" : "s are");
		rc = add_note(out, note, err);
	}
done:
	dlog_release(&l);
	if (rc)
		tt_object_diff_release(out);
	return rc;
}

/* --- verify ----------------------------------------------------------------------------- */

/* The data files a replay of the log has seen: JSON objects as string sets. */
typedef struct replay {
	json_t *active;      /* added in (base, v], not removed since */
	json_t *later_added; /* added after v */
	json_t *needed;      /* live at v (removed after it) */
	bool after;
} replay;

/* A deletion-vector file live in (base, v]: one count per data file whose
 * vector it holds, gone at zero. */
static int count_dv(json_t *set, const char *path, int by)
{
	json_int_t n = json_integer_value(json_object_get(set, path)) + by;
	if (n <= 0) {
		json_object_del(set, path);
		return 0;
	}
	return json_object_set_new(set, path, json_integer(n));
}

static int replay_file(void *ctx, tt_delta_file_action action, const char *path, tt_error *err)
{
	replay *r = ctx;
	int rc = 0;
	bool add = action == TT_DELTA_ADD || action == TT_DELTA_ADD_DV;
	bool dv = action == TT_DELTA_ADD_DV || action == TT_DELTA_REMOVE_DV;
	if (action == TT_DELTA_SIDECAR)
		return 0; /* only a V2 checkpoint lists sidecars (checkpoint_files) */
	if (!r->after) {
		if (dv)
			rc = count_dv(r->active, path, add ? 1 : -1);
		else if (add)
			rc = json_object_set_new(r->active, path, json_true());
		else
			json_object_del(r->active, path);
	} else if (add) {
		rc = json_object_set_new(r->later_added, path, json_true());
	} else if (!json_object_get(r->later_added, path)) {
		rc = json_object_set_new(r->needed, path, json_true());
	}
	return rc ? tt_error_oom(err) : 0;
}

static int replay_commit(const dlog *l, long long v, replay *r, tt_error *err)
{
	char name[32];
	tt_buf text = TT_BUF_INIT;
	char *what = NULL;
	int rc;
	snprintf(name, sizeof name, "%020lld.json", v);
	if ((rc = read_log_file(l, name, &text, err)) == 0) {
		if (!(what = log_path(l, name)))
			rc = KOOM(err);
		else if ((rc = tt_delta_commit_files(text.ptr, text.len, what, replay_file, r, err)))
			rc = named(err, rc, l->uri);
	}
	tt_buf_release(&text);
	free(what);
	return rc;
}

/* --- a checkpoint's files ------------------------------------------------------------ */

/* What reading a checkpoint's file lists gathers. */
typedef struct ckpt_read {
	replay *r;
	json_t *sidecars;   /* sidecar file names a V2 checkpoint lists */
	const char *what;   /* the file being read */
	struct dv_row {
		int64_t row;
		char type;
	} *dv_rows;         /* the storage types of one file's deletion vectors */
	size_t ndv, dv_alloc, dv_at;
} ckpt_read;

static int ckpt_value(ckpt_read *c, tt_delta_file_action action, const char *s, size_t n,
		      tt_error *err)
{
	if (!tt_utf8_valid(s, n) || memchr(s, 0, n))
		return tt_error_set(err, TT_EPARSE, "%s lists a path that is not UTF-8 text",
				    c->what);
	json_t *v = json_stringn(s, n);
	if (!v)
		return tt_error_oom(err);
	int rc = 0;
	if (action == TT_DELTA_SIDECAR)
		rc = json_array_append_new(c->sidecars, v) ? tt_error_oom(err) : 0;
	else
		rc = replay_file(c->r, action, json_string_value(v), err);
	if (action != TT_DELTA_SIDECAR)
		json_decref(v);
	return rc;
}

static int ckpt_add(void *ctx, int64_t row, const unsigned char *s, size_t n, tt_error *err)
{
	(void)row;
	return ckpt_value(ctx, TT_DELTA_ADD, (const char *)s, n, err);
}

static int ckpt_sidecar(void *ctx, int64_t row, const unsigned char *s, size_t n, tt_error *err)
{
	(void)row;
	return ckpt_value(ctx, TT_DELTA_SIDECAR, (const char *)s, n, err);
}

/* add.deletionVector.storageType, by row. */
static int ckpt_dv_type(void *ctx, int64_t row, const unsigned char *s, size_t n, tt_error *err)
{
	ckpt_read *c = ctx;
	if (TT_ARRAY_GROW(c->dv_rows, c->dv_alloc, c->ndv + 1) != 0)
		return tt_error_oom(err);
	c->dv_rows[c->ndv].row = row;
	c->dv_rows[c->ndv].type = n == 1 ? (char)s[0] : '?';
	c->ndv++;
	return 0;
}

/* add.deletionVector.pathOrInlineDv: with the row's storageType, the file. */
static int ckpt_dv_value(void *ctx, int64_t row, const unsigned char *s, size_t n, tt_error *err)
{
	ckpt_read *c = ctx;
	char type[2] = { 0, 0 }, *path = NULL;
	/* Both columns come in row order: the type is at or after c->dv_at. */
	while (c->dv_at < c->ndv && c->dv_rows[c->dv_at].row < row)
		c->dv_at++;
	if (c->dv_at < c->ndv && c->dv_rows[c->dv_at].row == row)
		type[0] = c->dv_rows[c->dv_at].type;
	if (!type[0] || tt_delta_dv_file(type, (const char *)s, n, &path) != 0) {
		if (errno == ENOMEM)
			return tt_error_oom(err);
		return tt_error_set(err, TT_EPARSE, "%s: the deletion vector in row %lld is "
				    "malformed", c->what, (long long)row);
	}
	int rc = path ? ckpt_value(c, TT_DELTA_ADD_DV, path, strlen(path), err) : 0;
	free(path);
	return rc;
}

static int ckpt_json_action(void *ctx, tt_delta_file_action action, const char *path,
			    tt_error *err)
{
	return ckpt_value(ctx, action, path, strlen(path), err);
}

/* The add.path column of one Parquet checkpoint file (name relative to
 * _delta_log), and its sidecar.path column when sidecars may be listed. */
static int parquet_files(const dlog *l, const char *name, ckpt_read *c, bool sidecars,
			 tt_error *err)
{
	static const char *const add_path[] = { "add", "path" };
	static const char *const sidecar_path[] = { "sidecar", "path" };
	static const char *const dv_type[] = { "add", "deletionVector", "storageType" };
	static const char *const dv_value[] = { "add", "deletionVector", "pathOrInlineDv" };
	tt_buf data = TT_BUF_INIT;
	char *what = log_path(l, name);
	bool found_add, found_sidecar = false, found_dv = false;
	int rc = what ? read_log_file(l, name, &data, err) : KOOM(err);

	c->what = what;
	if (rc == 0) {
		rc = tt_parquet_strings((const unsigned char *)data.ptr, data.len, what, add_path, 2,
					ckpt_add, c, &found_add, err);
		if (rc == 0 && sidecars)
			rc = tt_parquet_strings((const unsigned char *)data.ptr, data.len, what,
						sidecar_path, 2, ckpt_sidecar, c, &found_sidecar, err);
		/* The files holding the deletion vectors of the adds. */
		c->ndv = c->dv_at = 0;
		if (rc == 0)
			rc = tt_parquet_strings((const unsigned char *)data.ptr, data.len, what,
						dv_type, 3, ckpt_dv_type, c, &found_dv, err);
		if (rc == 0 && found_dv && c->ndv)
			rc = tt_parquet_strings((const unsigned char *)data.ptr, data.len, what,
						dv_value, 3, ckpt_dv_value, c, &found_dv, err);
		if (rc == 0 && !found_add && !found_sidecar)
			rc = tt_error_set(err, TT_EPARSE, "%s: a Delta checkpoint must have an "
					  "add.path column", what);
		if (rc)
			rc = named(err, rc, l->uri);
	}
	c->what = NULL;
	tt_buf_release(&data);
	free(what);
	return rc;
}

/* A sidecar's file name under _delta_log/_sidecars: the protocol keeps them
 * all there, so only the last component of the path counts. */
static char *sidecar_name(const char *path)
{
	char *decoded = tt_percent_decode(path);
	if (!decoded)
		return NULL;
	const char *base = strrchr(decoded, '/');
	base = base ? base + 1 : decoded;
	char *out = !*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0
			    ? tt_strdup("")
			    : tt_asprintf("_sidecars/%s", base);
	free(decoded);
	return out;
}

/*
 * Feed the data files checkpoint cp lists as live (its add actions, in
 * every part and every sidecar) to r as added up to its version.  A
 * malformed file is TT_EBACKEND naming it; a Parquet codec or encoding
 * tether does not read is TT_ECAPABILITY.
 */
static int checkpoint_files(const dlog *l, long long cp, replay *r, tt_error *err)
{
	const ckpt *k = checkpoint_at(l, cp);
	ckpt_read c = { r, json_array(), NULL, NULL, 0, 0, 0 };
	int rc = 0;

	if (!c.sidecars)
		return KOOM(err);
	if (!k) {
		rc = KERR(err, TT_EBACKEND, "delta table %s has no complete checkpoint at v%lld",
			  l->uri, cp);
	} else if (k->kind == CP_UUID_JSON) {
		tt_buf text = TT_BUF_INIT;
		char *what = log_path(l, k->name);
		c.what = what;
		if (!what)
			rc = KOOM(err);
		else if ((rc = read_log_file(l, k->name, &text, err)) == 0 &&
			 (rc = tt_delta_commit_files(text.ptr, text.len, what, ckpt_json_action, &c,
						     err)) != 0)
			rc = named(err, rc, l->uri);
		tt_buf_release(&text);
		free(what);
	} else {
		for (size_t i = 0; i < l->ncp && rc == 0; i++) {
			const ckpt *p = &l->cps[i];
			if (p == k || (k->kind == CP_MULTI && p->version == cp &&
				       p->kind == CP_MULTI && p->parts == k->parts))
				rc = parquet_files(l, p->name, &c, true, err);
		}
	}
	for (size_t i = 0; rc == 0 && i < json_array_size(c.sidecars); i++) {
		char *name = sidecar_name(json_string_value(json_array_get(c.sidecars, i)));
		if (!name)
			rc = KOOM(err);
		else if (!*name)
			rc = KERR(err, TT_EBACKEND, "delta table %s: checkpoint v%lld lists a sidecar "
				  "with no file name", l->uri, cp);
		else
			rc = parquet_files(l, name, &c, false, err);
		free(name);
	}
	json_decref(c.sidecars);
	free(c.dv_rows);
	return rc;
}

/* Where a data file is: add.path is a URI-encoded path relative to the
 * table (a key in its store, *key set), or an absolute URI (locally a
 * path, *key clear; NULL: on no storage of this table, cannot be checked). */
static char *data_path(const dlog *l, const char *p, bool *key)
{
	char *decoded = tt_percent_decode(p);
	if (!decoded)
		return NULL;
	char *out = NULL;
	*key = false;
	if (strstr(p, "://") || strncmp(p, "file:", 5) == 0) {
		if (l->remote || tt_store_local_path(decoded, &out) <= 0)
			out = NULL;
	} else {
		out = tt_asprintf("%s%s", l->prefix, decoded);
		*key = true;
	}
	free(decoded);
	return out;
}

/* A checkpoint's files read (a Parquet footer parses, a JSON one parses). */
static int check_checkpoint(const dlog *l, long long cp, tt_error *err)
{
	const ckpt *c = checkpoint_at(l, cp);
	char *id = NULL;
	int rc = 0;
	if (!c)
		return KERR(err, TT_EBACKEND, "delta table %s has no complete checkpoint at v%lld",
			    l->uri, cp);
	if (c->kind == CP_UUID_JSON) {
		rc = checkpoint_id(l, cp, &id, err);
		free(id);
		return rc;
	}
	for (size_t i = 0; i < l->ncp && rc == 0; i++) {
		const ckpt *p = &l->cps[i];
		if (p->version == cp && p->kind == c->kind && (c->kind != CP_MULTI || p->parts == c->parts)) {
			rc = parquet_id(l, p->name, &id, err);
			free(id);
			id = NULL;
			if (c->kind != CP_MULTI)
				break;
		}
	}
	return rc;
}

static int delta_verify(tt_backend *b, const json_t *loc, const json_t *state, const tt_pin *pin,
			bool deep, tt_verify_status *status, char **message, tt_error *err)
{
	dlog l;
	long long v, base, hbase, checked = 0, unchecked = 0;
	char *head_id = NULL;
	const char *want_id = json_string_value(json_object_get(state, "table_id"));
	replay r = { json_object(), json_object(), json_object(), false };
	tt_error why = TT_ERROR_INIT;
	int rc;

	(void)b, (void)pin;
	*status = TT_VERIFY_UNKNOWN;
	*message = NULL;
	if (!r.active || !r.later_added || !r.needed) {
		rc = KOOM(err);
		goto out;
	}
	if ((rc = state_version(state, &v, err)) != 0)
		goto out;
	/* A table that cannot be read is missing, with the reason. */
	if (scan(b, loc, &l, &why) != 0 || resolve(&l, l.head, &hbase, &why) != 0 ||
	    table_id_at(&l, l.head, hbase, &head_id, &why) != 0) {
		if (why.code == TT_ENOMEM) {
			rc = KOOM(err);
			goto done;
		}
		*status = TT_VERIFY_MISSING;
		*message = tt_strdup(tt_error_text(&why));
		goto done;
	}
	if (want_id && strcmp(want_id, UNKNOWN_ID) != 0 && strcmp(head_id, UNKNOWN_ID) != 0 &&
	    strcmp(want_id, head_id) != 0) {
		*status = TT_VERIFY_DRIFTED;
		*message = tt_strdup("table was recreated (metadata id changed)");
		goto done;
	}
	if (l.head < v) {
		*status = TT_VERIFY_MISSING;
		*message = tt_asprintf("table head is v%lld < v%lld", l.head, v);
		goto done;
	}
	if (!deep) {
		*message = tt_strdup("pass --deep to load the version (vacuum check)");
		goto done;
	}
	/* The version must be reconstructable: its checkpoint readable and the
	 * commits after it present. */
	if (resolve(&l, v, &base, &why) != 0 || (base >= 0 && check_checkpoint(&l, base, &why))) {
		*status = TT_VERIFY_MISSING;
		*message = tt_strdup(tt_error_text(&why));
		goto done;
	}
	/* Its files: those live at v, and those a later commit removed (so
	 * they were live at v).  When every commit from 0 is still in the log,
	 * the replay starts there and sees every file; otherwise it starts from
	 * the files the checkpoint lists as live (its add.path column). */
	bool whole = true;
	for (long long k = 0; base >= 0 && k <= base && whole; k++)
		whole = has_commit(&l, k);
	if (!whole) {
		r.after = false;
		if (checkpoint_files(&l, base, &r, &why) != 0) {
			if (why.code == TT_ENOMEM) {
				rc = KOOM(err);
				goto done;
			}
			/* A checkpoint Delta cannot read leaves v unreadable; one in a
			 * codec tether does not decode leaves it unknown. */
			*status = why.code == TT_ECAPABILITY ? TT_VERIFY_UNKNOWN : TT_VERIFY_MISSING;
			*message = tt_strdup(tt_error_text(&why));
			goto done;
		}
	}
	for (long long k = whole ? 0 : base + 1; k <= l.head; k++) {
		r.after = k > v;
		if (r.after && !has_commit(&l, k)) {
			*message = tt_asprintf("commit %lld after v%lld is gone from the log, so which of "
					       "its files later commits removed cannot be told", k, v);
			goto done;
		}
		if (replay_commit(&l, k, &r, &why) != 0) {
			if (why.code == TT_ENOMEM) {
				rc = KOOM(err);
				goto done;
			}
			/* A commit up to v that cannot be read leaves v unreadable; a
			 * later one only hides which files v had. */
			*status = r.after ? TT_VERIFY_UNKNOWN : TT_VERIFY_MISSING;
			*message = tt_strdup(tt_error_text(&why));
			goto done;
		}
	}
	json_t *sets[2] = { r.active, r.needed };
	for (int s = 0; s < 2; s++) {
		const char *p;
		json_t *ignored;
		json_object_foreach(sets[s], p, ignored) {
			bool is_key;
			char *path = data_path(&l, p, &is_key);
			if (!path) {
				unchecked++;
				continue;
			}
			bool there;
			if (is_key) {
				tt_store_meta meta;
				tt_error miss = TT_ERROR_INIT;
				int hr = tt_store_head(l.st, path, NULL, &meta, &miss);
				if (hr == 0)
					tt_store_meta_release(&meta);
				there = hr == 0;
				if (hr && hr != TT_ENOTFOUND) {
					tt_error_move(err, &miss);
					free(path);
					rc = tt_error_object(err, NULL, KIND);
					goto done;
				}
				tt_error_clear(&miss);
			} else {
				there = tt_exists(path);
			}
			free(path);
			checked++;
			if (!there) {
				*status = TT_VERIFY_MISSING;
				*message = tt_asprintf("version %lld cannot be read: its data file %s is "
						       "gone (vacuumed?)", v, p);
				goto done;
			}
		}
	}
	*status = TT_VERIFY_OK;
	if (unchecked)
		*message = tt_asprintf("%lld data files found; %lld not on local storage were not "
				       "checked", checked, unchecked);
done:
	dlog_release(&l);
out:
	free(head_id);
	json_decref(r.active);
	json_decref(r.later_added);
	json_decref(r.needed);
	tt_error_clear(&why);
	if (rc == 0 && (*status != TT_VERIFY_OK || unchecked) && !*message)
		rc = KOOM(err);
	return rc;
}

/* --- open ------------------------------------------------------------------------------ */

static int delta_open(tt_backend *b, const json_t *loc, const tt_target *target, bool read_only,
		      json_t **handle, tt_error *err)
{
	dlog l;
	long long v = -1, base;
	char *address = NULL;
	int rc;

	(void)b, (void)read_only; /* tether never writes Delta tables */
	*handle = NULL;
	if (target->kind == TT_TARGET_PIN)
		return KERR(err, TT_ECAPABILITY, "delta has no native tags; versions are recorded only");
	if (target->kind == TT_TARGET_STATE)
		rc = state_version(target->state, &v, err);
	else if (target->kind == TT_TARGET_BASE)
		rc = at_version(loc, &v, err);
	else
		rc = 0; /* a ref: Delta has none; the table as it is */
	if (rc)
		return rc;
	if ((rc = scan(b, loc, &l, err)) != 0)
		goto done;
	if (v < 0)
		v = l.head;
	if ((rc = resolve(&l, v, &base, err)) != 0)
		goto done;
	if (!(address = tt_asprintf("%s@v%lld", l.uri, v)) ||
	    !(*handle = json_pack("{s:s, s:s, s:b, s:s, s:I}", "type", KIND, "address", address,
				  "read_only", 1, "uri", l.uri, "version", (json_int_t)v)))
		rc = KOOM(err);
done:
	free(address);
	dlog_release(&l);
	return rc;
}

/* --- the backend ----------------------------------------------------------------------- */

static void delta_free(tt_backend *b)
{
	b->impl = NULL;
}

static const tt_backend_ops delta_ops = {
	.abi = TT_BACKEND_ABI,
	.no_pin = "delta has no native tags; versions are recorded only",
	.no_fork = "delta cannot fork; write a new table instead",
	.identity = delta_identity,
	.fingerprint = delta_fingerprint,
	.pin = tt_kit_no_pin,
	.unpin = tt_kit_no_unpin,
	.list_pins = tt_kit_no_pins,
	.verify = delta_verify,
	.fork = tt_kit_no_fork,
	.delete_working_ref = tt_kit_no_working_ref,
	.open = delta_open,
	.diff = delta_diff,
	.history = delta_history,
	.storage_options = tt_kit_storage_options,
	.free = delta_free,
};

int tt_delta_backend_new(tt_backend *b, tt_error *err)
{
	(void)err;
	b->ops = &delta_ops;
	b->impl = NULL;
	return 0;
}
