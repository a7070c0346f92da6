/*
 * backends/icechunk/icechunk.c - the icechunk backend: Icechunk repositories read
 * natively (no icechunk library), with the semantics of tether-vcs's
 * IcechunkBackend.  The state is {snapshot_id} of the branch head, a tag
 * "tether.<id>" (or a generation "tether.<id>.N" when that name was burnt
 * by a deletion: icechunk never reuses a deleted tag name) the pin, and a
 * branch at the pin's snapshot the fork.
 *
 * Two on-disk layouts (icechunk_fmt.h reads the bytes):
 *   - spec 2: one `repo` file holds branches, tags, deleted tags and the
 *     snapshot list with parents, messages and times;
 *   - spec 1: refs/{branch,tag}.<name>/ref.json pointers, a tag tombstone
 *     ref.json.deleted, and each snapshot file naming its parent.
 *
 * Every read and write goes through the storage layer (storage/store.h):
 * a local directory, or an s3:// or az:// prefix.  Locally the store
 * writes the way icechunk does on local storage (create-if-absent through
 * link(), replace through rename(), temporaries named "<name>#<digits>",
 * which icechunk's listing skips).  Creation is If-None-Match and every
 * ref move with an expected state is If-Match on the ETag read with what
 * the change was planned on (CONDITIONAL_REF), on every store.
 *
 * Nothing decoded is kept between calls: every operation re-reads the
 * repository, so the backend is safe to call from several threads.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "backends/backend.h"
#include "backends/kit.h"
#include "backends/icechunk/icechunk_fmt.h"
#include "storage/open.h"
#include "storage/store.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/json.h"
#include "util/mem.h"

#define KIND "icechunk"
#define PIN_PREFIX "tether."
#define MAX_GENERATIONS 1000
#define REF_MAX ((size_t)1 << 16)
#define META_MAX ((size_t)1 << 30)
/* Far beyond any real history; stops a corrupt spec-1 parent cycle. */
#define MAX_ANCESTRY ((size_t)10 * 1000 * 1000)


/* --- storage ------------------------------------------------------------------ */

/*
 * The repository's blobs through the storage layer (storage/store.h): a
 * local directory or an object-store prefix.  Keys are '/'-separated paths
 * under the repository root.  The local store stages its writes as
 * "<name>#<digits>", the form object_store's local listing (what icechunk
 * reads through) skips, and creates through link(), as icechunk does; on
 * an object store creation is If-None-Match and every ref move If-Match on
 * the ETag read with what the change was planned on (CONDITIONAL_REF).
 */
typedef struct ic_store {
	tt_store *st;      /* NULL while a local root does not exist */
	bool remote;
	char *root;        /* the local path, or the URI as written (for messages) */
	char *prefix;      /* the repository's key prefix, "" or "a/b/" */
	char *etag;        /* the ETag of the blob the last ic_get read */
} ic_store;

static char *ic_key(ic_store *s, const char *key)
{
	return tt_asprintf("%s%s", s->prefix, key);
}

/* The local root's store, made (with the root) the first time a write
 * needs it. */
static int ic_for_write(ic_store *s, tt_error *err)
{
	return s->st ? 0 : tt_store_local_open(s->root, true, &s->st, err);
}

/* The whole blob (at most max bytes); TT_ENOTFOUND when absent. */
static int ic_get(ic_store *s, const char *key, size_t max, tt_buf *out, tt_error *err)
{
	tt_store_meta meta;
	char *k;
	int rc;
	free(s->etag);
	s->etag = NULL;
	if (!s->st)
		return tt_error_set(err, TT_ENOTFOUND, "%s/%s does not exist", s->root, key);
	if (!(k = ic_key(s, key)))
		return tt_error_oom(err);
	out->max = max;
	rc = tt_store_get(s->st, k, NULL, out, &meta, err);
	if (rc == 0 && meta.etag && !(s->etag = tt_strdup(meta.etag)))
		rc = tt_error_oom(err);
	tt_store_meta_release(&meta);
	free(k);
	return rc;
}

static bool ic_exists(ic_store *s, const char *key)
{
	tt_error quiet = TT_ERROR_INIT;
	tt_store_meta meta;
	char *k = s->st ? ic_key(s, key) : NULL;
	bool yes = k && tt_store_head(s->st, k, NULL, &meta, &quiet) == 0;
	if (k)
		tt_store_meta_release(&meta);
	tt_error_clear(&quiet);
	free(k);
	return yes;
}

/* How ic_write writes: create only (TT_EEXISTS when there), replace
 * atomically (readers see old or new), or replace only while the key
 * still has the ETag given (TT_EREFMOVED otherwise). */
typedef enum ic_mode { IC_CREATE, IC_REPLACE, IC_IF_MATCH } ic_mode;

static int ic_write(ic_store *s, const char *key, ic_mode mode, const char *etag, const void *data,
		    size_t len, tt_error *err)
{
	char *k;
	int rc = ic_for_write(s, err);
	if (rc)
		return rc;
	if (!(k = ic_key(s, key)))
		return tt_error_oom(err);
	rc = mode == IC_CREATE    ? tt_store_put_if_absent(s->st, k, data, len, NULL, err)
	     : mode == IC_REPLACE ? tt_store_put(s->st, k, data, len, NULL, err)
				  : tt_store_put_if_match(s->st, k, etag, data, len, NULL, err);
	free(k);
	return rc;
}

/* The names directly under dir ("" for the top): a JSON array. */
static int ic_list(ic_store *s, const char *dir, json_t **names, tt_error *err)
{
	tt_store_page page = { 0 };
	char *k = NULL;
	size_t n;
	int rc = 0;
	if (!(*names = json_array()))
		return tt_error_oom(err);
	if (!s->st)
		return 0;
	n = strlen(s->prefix);
	k = *dir ? ic_key(s, dir) : n ? tt_strndup(s->prefix, n - 1) : tt_strdup("");
	if (!k)
		rc = tt_error_oom(err);
	else
		rc = tt_store_list_names(s->st, k, &page, err);
	for (size_t i = 0; rc == 0 && i < page.n; i++)
		if (json_array_append_new(*names, json_string(page.items[i].key)) != 0)
			rc = tt_error_oom(err);
	tt_store_page_release(&page);
	free(k);
	if (rc) {
		json_decref(*names);
		*names = NULL;
	}
	return rc;
}

/* Deleting what is not there succeeds. */
static int ic_remove(ic_store *s, const char *key, tt_error *err)
{
	char *k = s->st ? ic_key(s, key) : NULL;
	int rc = !s->st ? 0 : k ? tt_store_delete(s->st, k, err) : tt_error_oom(err);
	free(k);
	return rc;
}

static void ic_store_release(ic_store *s)
{
	free(s->root);
	tt_store_close(s->st);
	free(s->prefix);
	free(s->etag);
	memset(s, 0, sizeof *s);
}

/* --- locators ------------------------------------------------------------------ */

static int get_uri(const json_t *loc, char **uri, tt_error *err)
{
	static const char *const keys[] = { "uri", "path" };
	*uri = NULL;
	for (size_t i = 0; i < 2; i++) {
		const json_t *v = json_object_get(loc, keys[i]);
		if (!tt_pyv_truthy(v))
			continue;
		if (!json_is_string(v))
			return KERR(err, TT_EBACKEND, "icechunk locator '%s' must be a string", keys[i]);
		*uri = tt_strdup(json_string_value(v));
		return *uri ? 0 : KOOM(err);
	}
	return KERR(err, TT_EBACKEND, "icechunk locator needs 'uri'");
}

static bool opt_truthy(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);
	if (json_is_string(v)) {
		const char *t = json_string_value(v);
		return !strcasecmp(t, "true") || !strcmp(t, "1") || !strcasecmp(t, "yes") ||
		       !strcasecmp(t, "on");
	}
	return tt_pyv_truthy(v);
}

/*
 * The options an s3:// repository's store is opened with, as tether-vcs
 * hands them to icechunk's s3_storage: the object's secrets (endpoint_url,
 * keys, profile or role), the region from them else the locator, and the
 * two switches only secrets.toml may set: allow_http (plain HTTP to the
 * endpoint) and force_path_style (the bucket in the path).
 */
static int ic_storage_options(tt_backend *b, const json_t *loc, json_t **out, tt_error *err)
{
	json_t *o = NULL;
	int rc;
	*out = NULL;
	if ((rc = tt_backend_secrets_for(b, loc, &o, err)) != 0)
		return rc;
	if (!tt_pyv_truthy(json_object_get(o, "region")) && tt_pyv_truthy(json_object_get(loc, "region")) &&
	    json_object_set(o, "region", json_object_get(loc, "region")) < 0)
		goto oom;
	if (json_object_set_new(o, "allow_http", json_boolean(opt_truthy(o, "allow_http"))) < 0)
		goto oom;
	if (opt_truthy(o, "force_path_style") &&
	    json_object_set_new(o, "virtual_hosted_style_request", json_false()) < 0)
		goto oom;
	json_object_del(o, "force_path_style");
	*out = o;
	return 0;
oom:
	json_decref(o);
	return KOOM(err);
}

/* Open the repository's storage: a local directory (its store opened
 * once the directory exists), or an s3:// or az:// prefix (the URI's own
 * spelling in messages). */
static int store_open(tt_backend *b, const json_t *loc, ic_store *s, tt_error *err)
{
	char *uri = NULL, *key = NULL;
	json_t *opts = NULL;
	tt_store_uri u;
	int rc = get_uri(loc, &uri, err);

	memset(s, 0, sizeof *s);
	if (rc)
		return rc;
	rc = tt_store_local_path(uri, &s->root);
	if (rc < 0) {
		rc = KOOM(err);
		goto done;
	}
	if (rc > 0) {
		rc = 0;
		if (!(s->prefix = tt_strdup("")))
			rc = KOOM(err);
		else if (tt_is_dir(s->root) && (rc = tt_store_local_open(s->root, false, &s->st, err)) != 0)
			tt_error_object(err, NULL, KIND);
		goto done;
	}
	if ((rc = tt_store_uri_parse(uri, &u, err)) != 0) {
		tt_error_object(err, NULL, KIND);
		goto done;
	}
	/* Azure too, where icechunk itself writes (Azurite included); not gs://,
	 * whose emulator refuses icechunk's writes, so it is untested (and
	 * tether-vcs takes s3 only) */
	if (u.kind != TT_STORE_S3 && u.kind != TT_STORE_AZURE) {
		rc = KERR(err, TT_ECAPABILITY,
			  "unsupported icechunk storage scheme: '%s' (one of '', 'file', 's3', 'az'): %s",
			  u.scheme, uri);
		tt_store_uri_release(&u);
		goto done;
	}
	tt_store_uri_release(&u);
	if ((rc = ic_storage_options(b, loc, &opts, err)) != 0)
		goto done;
	if ((rc = tt_store_open_uri(uri, opts, &s->st, &key, err)) != 0) {
		tt_error_object(err, NULL, KIND);
		goto done;
	}
	{
		size_t n = strlen(key);
		while (n && key[n - 1] == '/')
			key[--n] = '\0';
		s->prefix = n ? tt_asprintf("%s/", key) : tt_strdup("");
	}
	s->root = tt_strdup(uri);
	s->remote = true;
	if (!s->prefix || !s->root)
		rc = KOOM(err);
done:
	if (rc)
		ic_store_release(s);
	json_decref(opts);
	free(key);
	free(uri);
	return rc;
}

static bool has_text(const json_t *v)
{
	return v && !json_is_null(v) && !(json_is_string(v) && json_string_length(v) == 0);
}

static int base_branch_of(const json_t *loc, char **out, tt_error *err)
{
	const json_t *v = json_object_get(loc, "branch");
	if (has_text(v)) {
		*out = tt_pyv_str_dup(v);
	} else {
		*out = tt_strdup("main");
	}
	return *out ? 0 : KOOM(err);
}

/* --- the repository view --------------------------------------------------------- */

typedef struct view {
	ic_store store;
	int spec;       /* 1 or 2 */
	ic_repo repo;   /* spec 2 */
	tt_buf raw;     /* spec 2: the repo file as read */
	tt_buf fb;      /* spec 2: its flatbuffer */
} view;

static void view_release(view *v)
{
	ic_store_release(&v->store);
	tt_ic_repo_release(&v->repo);
	tt_buf_release(&v->raw);
	tt_buf_release(&v->fb);
	memset(v, 0, sizeof *v);
}

/* Read and decompress a metadata object (container type want); raw (may
 * be NULL) keeps the file's bytes. */
static int read_object_raw(view *v, const char *key, int want, tt_buf *fb, int *spec, tt_buf *raw,
			   tt_error *err)
{
	tt_buf own = TT_BUF_INIT;
	char *what = tt_asprintf("%s/%s", v->store.root, key);
	int rc;
	if (!raw)
		raw = &own;
	if (!what)
		return KOOM(err);
	rc = ic_get(&v->store, key, META_MAX, raw, err);
	if (rc == 0)
		rc = tt_ic_container_read((const uint8_t *)raw->ptr, raw->len, want, what, 0, fb, spec,
				       err);
	if (rc && rc != TT_ENOTFOUND)
		tt_error_object(err, NULL, KIND);
	tt_buf_release(&own);
	free(what);
	return rc;
}

static int read_object(view *v, const char *key, int want, tt_buf *fb, int *spec, tt_error *err)
{
	return read_object_raw(v, key, want, fb, spec, NULL, err);
}

/* Which layout is there: *spec 2 (a `repo` file), 1 (refs/branch.main/
 * ref.json) or 0 (no repository).  A remote store's failure to answer (a
 * refused signature, an unreachable server) is an error naming the URI,
 * not "no repository". */
static int store_probe(ic_store *s, int *spec, tt_error *err)
{
	static const char *const keys[] = { "repo", "refs/branch.main/ref.json" };
	*spec = 0;
	for (int i = 0; i < 2; i++) {
		if (!s->remote) {
			if (ic_exists(s, keys[i])) {
				*spec = 2 - i;
				return 0;
			}
			continue;
		}
		/* a GET, not a HEAD: a refusal's body says why (an expired
		 * token, a bad signature), a HEAD's has nothing */
		tt_buf b = TT_BUF_INIT;
		int rc = ic_get(s, keys[i], META_MAX, &b, err);
		tt_buf_release(&b);
		if (rc == 0) {
			*spec = 2 - i;
			return 0;
		}
		if (rc != TT_ENOTFOUND) {
			tt_error_object(err, NULL, KIND);
			return rc;
		}
		tt_error_clear(err);
	}
	return 0;
}

/* (Re)read the spec-2 repo file into v. */
static int view_read_repo(view *v, tt_error *err)
{
	int rc, spec;
	char *what;
	tt_ic_repo_release(&v->repo);
	tt_buf_release(&v->raw);
	tt_buf_release(&v->fb);
	if ((rc = read_object_raw(v, "repo", IC_FILE_REPO, &v->fb, &spec, &v->raw, err)) != 0)
		return rc;
	what = tt_asprintf("%s/repo", v->store.root);
	rc = what ? tt_ic_repo_decode((const uint8_t *)v->fb.ptr, v->fb.len, what, &v->repo, err)
		  : KOOM(err);
	if (rc)
		tt_error_object(err, NULL, KIND);
	free(what);
	return rc;
}

static int view_open(tt_backend *b, const json_t *loc, view *v, tt_error *err)
{
	int rc = 0;

	memset(v, 0, sizeof *v);
	v->raw = (tt_buf)TT_BUF_INIT;
	v->fb = (tt_buf)TT_BUF_INIT;
	if ((rc = store_open(b, loc, &v->store, err)) != 0)
		return rc;
	/* icechunk's own rule: a `repo` file means spec 2 (even beside an
	 * unfinished migration's refs/); else refs/branch.main/ref.json means
	 * spec 1; else there is no repository. */
	if (v->store.remote) {
		/* one GET of `repo` both probes and reads it */
		rc = view_read_repo(v, err);
		v->spec = rc == 0 ? 2 : 0;
		if (rc == TT_ENOTFOUND) {
			tt_error_clear(err);
			rc = store_probe(&v->store, &v->spec, err);
		}
		if (rc)
			goto out;
	} else if ((rc = store_probe(&v->store, &v->spec, err)) != 0) {
		goto out;
	} else if (v->spec == 2) {
		rc = view_read_repo(v, err);
	}
	if (rc == 0 && v->spec == 0) {
		rc = KERR(err, TT_EBACKEND,
			  "no icechunk repository at %s (neither a `repo` file nor "
			  "refs/branch.main/ref.json); check the uri, or create it with `tether add "
			  "--create`",
			  v->store.root);
	}
out:
	if (rc)
		view_release(v);
	return rc;
}

/* --- spec-2 writes --------------------------------------------------------------- */

/* Decide the change on a freshly read repo (under the write lock): 0 with
 * *ch filled, 1 when there is nothing to write, or an error. */
typedef int (*v2_plan_fn)(view *v, ic_change *ch, void *ctx, tt_error *err);

static uint64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* A short random pause before another round against racing writers. */
static void backoff(int attempt)
{
	unsigned r = 0;
	struct timespec ts;
	if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r)
		r = (unsigned)now_us();
	long ms = 5 + (long)(r % (unsigned)(10 * (attempt < 8 ? attempt : 8)));
	ts.tv_sec = ms / 1000;
	ts.tv_nsec = (ms % 1000) * 1000000L;
	nanosleep(&ts, NULL);
}

/* "repo.<ms until 3000-01-01, 14 digits>.<random id>": newest sorts first. */
static int backup_name(char out[64], tt_error *err)
{
	uint8_t id[IC_ID_LEN];
	char s[IC_ID_CHARS + 1];
	long long ms = (long long)(now_us() / 1000u);
	size_t got = 0;
	while (got < sizeof id) {
		ssize_t r = getrandom(id + got, sizeof id - got, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return KERR(err, TT_EIO, "no random bytes for a backup name");
		got += (size_t)r;
	}
	tt_ic_id_encode(id, s);
	snprintf(out, 64, "repo.%014lld.%s", 32503680000000LL - ms, s);
	return 0;
}

/*
 * One read-modify-write of `repo`, the way icechunk does it: the old bytes
 * are copied to overwritten/ first, then `repo` is replaced (on local
 * storage through rename, so icechunk's cached version notices).  The
 * replace is If-Match on the ETag the plan read, on every store (the local
 * one compares it under a lock on the directory): of racing writers one
 * wins and the others plan again on its file, as many rounds as they need.
 * icechunk's own local writes take no such lock, so one of theirs between
 * the compare and the rename is missed, a window of a few system calls.
 */
static int v2_update(view *v, v2_plan_fn plan, void *ctx, tt_error *err)
{
	tt_buf fb = TT_BUF_INIT, file = TT_BUF_INIT;
	char bname[64], *bkey = NULL, *what = NULL, *etag = NULL;
	ic_change ch;
	int rc;

	for (int attempt = 0; attempt < 32; attempt++) {
		if (attempt)
			backoff(attempt);
		if ((rc = view_read_repo(v, err)) != 0)
			goto done;
		free(etag);
		if (!(etag = tt_strdup(v->store.etag ? v->store.etag : ""))) {
			rc = KOOM(err);
			goto done;
		}
		memset(&ch, 0, sizeof ch);
		rc = plan(v, &ch, ctx, err);
		if (rc)
			goto done; /* 1: nothing to write */
		if ((rc = backup_name(bname, err)) != 0)
			goto done;
		ch.now_us = now_us();
		ch.backup_name = bname;
		free(what);
		what = tt_asprintf("%s/repo", v->store.root);
		if (!what) {
			rc = KOOM(err);
			goto done;
		}
		if ((rc = tt_ic_repo_rewrite((const uint8_t *)v->fb.ptr, v->fb.len, &v->repo, &ch, what,
					  &fb, err)) != 0 ||
		    (rc = tt_ic_container_write((const uint8_t *)fb.ptr, fb.len, IC_FILE_REPO, 2, &file,
					     err)) != 0) {
			tt_error_object(err, NULL, KIND);
			goto done;
		}
		free(bkey);
		if (!(bkey = tt_asprintf("overwritten/%s", bname))) {
			rc = KOOM(err);
			goto done;
		}
		if ((rc = ic_write(&v->store, bkey, IC_CREATE, NULL, v->raw.ptr, v->raw.len, err)) != 0) {
			tt_error_object(err, NULL, KIND);
			goto done;
		}
		/* someone else's write in between: plan again on their file (our
		 * backup copy stays, as icechunk's would) */
		rc = ic_write(&v->store, "repo", IC_IF_MATCH, etag, file.ptr, file.len, err);
		if (rc == TT_EREFMOVED) {
			tt_error_clear(err);
			continue;
		}
		if (rc)
			tt_error_object(err, NULL, KIND);
		goto done;
	}
	rc = KERR(err, TT_EBACKEND, "icechunk repository %s kept changing under this write; try again",
		  v->store.root);
done:
	free(etag);
	tt_buf_release(&fb);
	tt_buf_release(&file);
	free(bkey);
	free(what);
	return rc;
}

static long snap_index(view *v, const char *sid)
{
	uint8_t id[IC_ID_LEN];
	return tt_ic_id_decode(sid, id) == 0 ? tt_ic_repo_find_snap(&v->repo, id) : -1;
}

/* Ref names in spec-1 paths: object_store percent-encodes a key segment's
 * control characters and these. */
static bool needs_escape(unsigned char c)
{
	return c < 0x20 || c == 0x7f || strchr("\\{^}%`]\">[~<#|*?", c);
}

static char *escape_name(const char *name)
{
	tt_buf b = TT_BUF_INIT;
	if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return tt_strdup(name[1] ? "%2E%2E" : "%2E");
	for (const char *p = name; *p; p++) {
		unsigned char c = (unsigned char)*p;
		if (needs_escape(c))
			tt_buf_printf(&b, "%%%02X", c);
		else
			tt_buf_putc(&b, (char)c);
	}
	if (b.failed) {
		tt_buf_release(&b);
		return NULL;
	}
	return b.len ? tt_buf_detach(&b) : tt_strdup("");
}

/* "refs/<kind>.<escaped name>/<file>" */
static char *ref_key(const char *kind, const char *name, const char *file)
{
	char *e = escape_name(name), *k = e ? tt_asprintf("refs/%s.%s/%s", kind, e, file) : NULL;
	free(e);
	return k;
}

/* Read a spec-1 ref.json: 0 with sid, TT_ENOTFOUND when absent. */
static int v1_read_ref(view *v, const char *kind, const char *name, char sid[IC_ID_CHARS + 1],
		       tt_error *err)
{
	char *key = ref_key(kind, name, "ref.json");
	tt_buf b = TT_BUF_INIT;
	json_t *doc = NULL, *s;
	int rc;
	uint8_t id[IC_ID_LEN];

	if (!key)
		return KOOM(err);
	rc = ic_get(&v->store, key, REF_MAX, &b, err);
	if (rc)
		goto done;
	doc = tt_json_parse(b.ptr, b.len, key, err);
	s = doc ? json_object_get(doc, "snapshot") : NULL;
	if (!json_is_string(s) || tt_ic_id_decode(json_string_value(s), id) != 0) {
		tt_error_clear(err);
		rc = KERR(err, TT_EPARSE,
			  "icechunk ref %s/%s is corrupt (expected {\"snapshot\": \"<id>\"}); restore it "
			  "or delete the ref with icechunk",
			  v->store.root, key);
		goto done;
	}
	tt_ic_id_encode(id, sid);
done:
	json_decref(doc);
	tt_buf_release(&b);
	free(key);
	return rc;
}

/* Branch head: 0, TT_ENOTFOUND (quietly, err untouched) or an error. */
static int lookup_branch(view *v, const char *name, char sid[IC_ID_CHARS + 1], tt_error *err)
{
	if (v->spec == 2) {
		long i = tt_ic_repo_find_ref(v->repo.branches, v->repo.nbranches, name);
		if (i < 0)
			return TT_ENOTFOUND;
		tt_ic_id_encode(v->repo.snaps[v->repo.branches[i].snap].id, sid);
		return 0;
	} else {
		tt_error quiet = TT_ERROR_INIT;
		int rc = v1_read_ref(v, "branch", name, sid, &quiet);
		if (rc && rc != TT_ENOTFOUND)
			tt_error_move(err, &quiet);
		tt_error_clear(&quiet);
		return rc;
	}
}

/* A live tag (a spec-1 tombstone makes it dead). */
static int lookup_tag(view *v, const char *name, char sid[IC_ID_CHARS + 1], tt_error *err)
{
	if (v->spec == 2) {
		long i = tt_ic_repo_find_ref(v->repo.tags, v->repo.ntags, name);
		if (i < 0)
			return TT_ENOTFOUND;
		tt_ic_id_encode(v->repo.snaps[v->repo.tags[i].snap].id, sid);
		return 0;
	} else {
		tt_error quiet = TT_ERROR_INIT;
		char *dead = ref_key("tag", name, "ref.json.deleted");
		int rc;
		if (!dead)
			return KOOM(err);
		if (ic_exists(&v->store, dead)) {
			free(dead);
			return TT_ENOTFOUND;
		}
		free(dead);
		rc = v1_read_ref(v, "tag", name, sid, &quiet);
		if (rc && rc != TT_ENOTFOUND)
			tt_error_move(err, &quiet);
		tt_error_clear(&quiet);
		return rc;
	}
}

/* Names of branches or live tags (kind "branch" / "tag"), sorted. */
static int list_refs(view *v, const char *kind, json_t **out, tt_error *err)
{
	json_t *names = NULL;
	int rc = 0;
	size_t i;
	json_t *e;

	*out = json_array();
	if (!*out)
		return KOOM(err);
	if (v->spec == 2) {
		bool tags = strcmp(kind, "tag") == 0;
		ic_ref *refs = tags ? v->repo.tags : v->repo.branches;
		size_t n = tags ? v->repo.ntags : v->repo.nbranches;
		for (i = 0; i < n; i++)
			if (json_array_append_new(*out, json_string(refs[i].name)) != 0)
				return KOOM(err);
		return 0;
	}
	if ((rc = ic_list(&v->store, "refs", &names, err)) != 0) {
		tt_error_object(err, NULL, KIND);
		return rc;
	}
	json_array_foreach(names, i, e) {
		const char *d = json_string_value(e);
		size_t kl = strlen(kind);
		char *name, sid[IC_ID_CHARS + 1];
		if (strncmp(d, kind, kl) != 0 || d[kl] != '.')
			continue;
		if (!(name = tt_percent_decode(d + kl + 1))) {
			rc = KOOM(err);
			break;
		}
		rc = strcmp(kind, "tag") == 0 ? lookup_tag(v, name, sid, err)
					      : lookup_branch(v, name, sid, err);
		if (rc == TT_ENOTFOUND) {
			rc = 0;
		} else if (rc == 0 && json_array_append_new(*out, json_string(name)) != 0) {
			rc = KOOM(err);
		}
		free(name);
		if (rc)
			break;
	}
	json_decref(names);
	if (rc == 0) {
		/* byte order, as icechunk lists them */
		size_t n = json_array_size(*out);
		for (size_t a = 1; a < n; a++)
			for (size_t b2 = a; b2 > 0; b2--) {
				json_t *x = json_array_get(*out, b2 - 1), *y = json_array_get(*out, b2);
				if (strcmp(json_string_value(x), json_string_value(y)) <= 0)
					break;
				json_incref(x);
				json_array_set(*out, b2 - 1, y);
				json_array_set_new(*out, b2, x);
			}
	}
	return rc;
}

/* One snapshot as ancestry sees it. */
typedef struct snapinfo {
	char id[IC_ID_CHARS + 1];
	bool has_parent;
	char parent[IC_ID_CHARS + 1];
	uint64_t flushed_at;
	char *message;
} snapinfo;

/* A spec-1 snapshot file: 0, TT_ENOTFOUND, or an error. */
static int v1_snapshot(view *v, const char *sid, ic_snapshot *out, tt_error *err)
{
	tt_buf fb = TT_BUF_INIT;
	char *key = tt_asprintf("snapshots/%s", sid), *what = NULL;
	int rc, spec;
	if (!key)
		return KOOM(err);
	rc = read_object(v, key, IC_FILE_SNAPSHOT, &fb, &spec, err);
	if (rc == 0) {
		what = tt_asprintf("%s/%s", v->store.root, key);
		rc = what ? tt_ic_snapshot_decode((const uint8_t *)fb.ptr, fb.len, what, out, err)
			  : KOOM(err);
		if (rc)
			tt_error_object(err, NULL, KIND);
	}
	free(what);
	free(key);
	tt_buf_release(&fb);
	return rc;
}

/* Snapshot info by id: 0, TT_ENOTFOUND (err untouched), or an error. */
static int snap_info(view *v, const char *sid, snapinfo *out, tt_error *err)
{
	uint8_t id[IC_ID_LEN];
	memset(out, 0, sizeof *out);
	if (tt_ic_id_decode(sid, id) != 0)
		return TT_ENOTFOUND;
	if (v->spec == 2) {
		long i = tt_ic_repo_find_snap(&v->repo, id);
		const ic_snapinfo *s;
		if (i < 0)
			return TT_ENOTFOUND;
		s = &v->repo.snaps[i];
		tt_ic_id_encode(s->id, out->id);
		out->flushed_at = s->flushed_at;
		if (s->parent >= 0) {
			out->has_parent = true;
			tt_ic_id_encode(v->repo.snaps[s->parent].id, out->parent);
		}
		out->message = tt_strdup(s->message);
		return out->message ? 0 : KOOM(err);
	} else {
		ic_snapshot s;
		char canon[IC_ID_CHARS + 1];
		int rc;
		tt_ic_id_encode(id, canon);
		if ((rc = v1_snapshot(v, canon, &s, err)) != 0) {
			if (rc == TT_ENOTFOUND)
				tt_error_clear(err);
			return rc;
		}
		tt_ic_id_encode(s.id, out->id);
		out->flushed_at = s.flushed_at;
		out->has_parent = s.has_parent;
		if (s.has_parent)
			tt_ic_id_encode(s.parent, out->parent);
		out->message = s.message;
		s.message = NULL;
		tt_ic_snapshot_release(&s);
		return 0;
	}
}

/* tether-vcs's _resolve: a branch, a live tag, or a snapshot id. */
static int resolve(view *v, const char *ref, char sid[IC_ID_CHARS + 1], tt_error *err)
{
	int rc = lookup_branch(v, ref, sid, err);
	snapinfo si;
	if (rc != TT_ENOTFOUND)
		return rc;
	if ((rc = lookup_tag(v, ref, sid, err)) != TT_ENOTFOUND)
		return rc;
	rc = snap_info(v, ref, &si, err);
	if (rc == 0) {
		memcpy(sid, si.id, sizeof si.id);
		free(si.message);
		return 0;
	}
	if (rc != TT_ENOTFOUND)
		return rc;
	return KERR(err, TT_EBACKEND, "'%s' is not a branch, tag, or snapshot id", ref);
}

/* Walk ancestry from sid (included), newest first; fn returns 1 to stop. */
typedef int (*ancestry_fn)(const snapinfo *s, void *ctx, tt_error *err);
static int ancestry(view *v, const char *sid, ancestry_fn fn, void *ctx, tt_error *err)
{
	char cur[IC_ID_CHARS + 1];
	size_t steps = 0;
	memcpy(cur, sid, sizeof cur);
	for (;;) {
		snapinfo s;
		int rc = snap_info(v, cur, &s, err);
		if (rc == TT_ENOTFOUND)
			return KERR(err, TT_EBACKEND,
				    "icechunk snapshot %s is missing from %s (expired or garbage-collected?)",
				    cur, v->store.root);
		if (rc)
			return rc;
		rc = fn(&s, ctx, err);
		free(s.message);
		if (rc)
			return rc < 0 ? rc : 0;
		if (!s.has_parent)
			return 0;
		if (++steps > (v->spec == 2 ? v->repo.nsnaps : MAX_ANCESTRY))
			return KERR(err, TT_EPARSE,
				    "icechunk repository %s has a cycle in its snapshot parents; it is "
				    "corrupt",
				    v->store.root);
		memcpy(cur, s.parent, sizeof cur);
	}
}

/* --- identity and fingerprint --------------------------------------------------- */

static int ic_identity(tt_backend *b, const json_t *loc, json_t **out, tt_error *err)
{
	char *uri = NULL;
	int rc;
	*out = NULL;
	if ((rc = get_uri(loc, &uri, err)) != 0)
		return rc;
	rc = tt_kit_uri_identity(b, uri, out, err);
	free(uri);
	return rc;
}

static json_t *sid_state(const char *sid)
{
	return json_pack("{s:s}", "snapshot_id", sid);
}

static int state_sid(const json_t *state, const char **sid, tt_error *err)
{
	const json_t *s = json_object_get(state, "snapshot_id");
	if (!json_is_string(s))
		return KERR(err, TT_EBACKEND, "icechunk state needs a 'snapshot_id'");
	*sid = json_string_value(s);
	return 0;
}

static int ic_fingerprint(tt_backend *b, const json_t *loc, const char *working_ref,
			  json_t **state, tt_error *err)
{
	view v;
	char sid[IC_ID_CHARS + 1], *branch = NULL;
	const json_t *at = json_object_get(loc, "at");
	int rc;

	(void)b;
	*state = NULL;
	if ((rc = view_open(b, loc, &v, err)) != 0)
		return rc;
	if (!working_ref && has_text(at)) {
		char *ref = tt_pyv_str_dup(at);
		rc = ref ? resolve(&v, ref, sid, err) : KOOM(err);
		free(ref);
	} else {
		if (working_ref)
			branch = tt_strdup(working_ref);
		else if ((rc = base_branch_of(loc, &branch, err)) != 0)
			goto done;
		if (!branch) {
			rc = KOOM(err);
			goto done;
		}
		rc = lookup_branch(&v, branch, sid, err);
		if (rc == TT_ENOTFOUND)
			rc = KERR(err, TT_EBACKEND, "icechunk branch %s not found in %s", branch,
				  v.store.root);
	}
	if (rc == 0 && !(*state = sid_state(sid)))
		rc = KOOM(err);
done:
	free(branch);
	view_release(&v);
	return rc;
}

/* --- pins ----------------------------------------------------------------------- */

/* The pin id a tether.* tag belongs to (generation dropped), or NULL. */
static char *pin_id_of(const char *tag)
{
	const char *rest;
	const char *d1, *d2;
	if (strncmp(tag, PIN_PREFIX, strlen(PIN_PREFIX)) != 0)
		return NULL;
	rest = tag + strlen(PIN_PREFIX);
	d1 = strchr(rest, '.');
	d2 = d1 ? strchr(d1 + 1, '.') : NULL;
	if (d2 && !strchr(d2 + 1, '.') && d2[1]) {
		bool digits = true;
		for (const char *p = d2 + 1; *p; p++)
			if (*p < '0' || *p > '9')
				digits = false;
		if (digits)
			return tt_strndup(rest, (size_t)(d2 - rest));
	}
	return tt_strdup(rest);
}

static long generation_number(const char *tag)
{
	const char *dot = strrchr(tag, '.');
	char *pid = pin_id_of(tag);
	long n = 1;
	if (pid && dot && strlen(tag) > strlen(PIN_PREFIX) + strlen(pid))
		n = strtol(dot + 1, NULL, 10);
	free(pid);
	return n;
}

/* A spec-1 ref pointing at sid, written as mode says (etag: IC_IF_MATCH's;
 * TT_EREFMOVED when someone moved the ref in between). */
static int v1_write_ref(view *v, const char *kind, const char *name, const char *sid, ic_mode mode,
			const char *etag, tt_error *err)
{
	char *key = ref_key(kind, name, "ref.json");
	char body[64];
	int rc;
	if (!key)
		return KOOM(err);
	snprintf(body, sizeof body, "{\"snapshot\":\"%s\"}", sid);
	rc = ic_write(&v->store, key, mode, etag, body, strlen(body), err);
	if (rc && rc != TT_EEXISTS)
		tt_error_object(err, NULL, KIND);
	free(key);
	return rc;
}

/* A branch head and the ETag of its ref.json (spec 1). */
static int v1_head_tagged(view *v, const char *name, char sid[IC_ID_CHARS + 1], char **etag,
			  tt_error *err)
{
	int rc = lookup_branch(v, name, sid, err);
	*etag = NULL;
	if (rc == 0 && !(*etag = tt_strdup(v->store.etag ? v->store.etag : "")))
		rc = KOOM(err);
	return rc;
}

/* TT_EREFMOVED for a conditional write another writer beat: where the
 * branch is now (read again), and the head that was expected. */
static int moved_meanwhile(view *v, const char *what, const char *branch, const char *want,
			   tt_error *err)
{
	char now[IC_ID_CHARS + 1];
	tt_error quiet = TT_ERROR_INIT;
	bool found = lookup_branch(v, branch, now, &quiet) == 0;
	tt_error_clear(&quiet);
	return KERR(err, TT_EREFMOVED, "%s: %s moved meanwhile: it is at %s, expected %s; review it again",
		    what, branch, found ? now : "something else", want);
}

typedef struct pin_ctx {
	const char *pin_id, *sid;
	char ref[96];
	bool created;
} pin_ctx;

/* The first generation whose name is free (or already holds the state). */
static int pin_plan(view *v, ic_change *ch, void *ctx, tt_error *err)
{
	pin_ctx *pc = ctx;
	long si = snap_index(v, pc->sid);
	if (v->repo.create_tag_off)
		return KERR(err, TT_EBACKEND,
			    "icechunk repository %s has tag creation disabled (feature flag create_tag); "
			    "enable it with icechunk to pin here",
			    v->store.root);
	if (si < 0)
		return KERR(err, TT_EBACKEND, "icechunk snapshot %s is not in %s", pc->sid,
			    v->store.root);
	for (int gen = 1; gen <= MAX_GENERATIONS; gen++) {
		long ti;
		bool burnt = false;
		if (gen == 1)
			snprintf(pc->ref, sizeof pc->ref, PIN_PREFIX "%s", pc->pin_id);
		else
			snprintf(pc->ref, sizeof pc->ref, PIN_PREFIX "%s.%d", pc->pin_id, gen);
		ti = tt_ic_repo_find_ref(v->repo.tags, v->repo.ntags, pc->ref);
		if (ti >= 0) {
			char have[IC_ID_CHARS + 1];
			tt_ic_id_encode(v->repo.snaps[v->repo.tags[ti].snap].id, have);
			if (strcmp(have, pc->sid) == 0) {
				pc->created = false;
				return 1;
			}
			return KERR(err, TT_EBACKEND, "tag %s already points at %s, not %s", pc->ref,
				    have, pc->sid);
		}
		for (size_t i = 0; i < v->repo.ndeleted && !burnt; i++)
			burnt = strcmp(v->repo.deleted_tags[i], pc->ref) == 0;
		if (burnt)
			continue;
		ch->kind = IC_CHANGE_TAG_CREATE;
		ch->name = pc->ref;
		ch->snap = (uint32_t)si;
		pc->created = true;
		return 0;
	}
	return KERR(err, TT_EBACKEND,
		    "pin %s: every tag name up to generation %d has been used and deleted",
		    pc->pin_id, MAX_GENERATIONS);
}

static int ic_pin(tt_backend *b, const json_t *loc, const json_t *state, const char *pin_id,
		  tt_pin *out, tt_error *err)
{
	view v;
	char sid[IC_ID_CHARS + 1], have[IC_ID_CHARS + 1];
	const char *want = NULL;
	int rc;

	(void)b;
	if (!pin_id || !*pin_id || strchr(pin_id, '/'))
		return KERR(err, TT_EUSAGE, "pin needs an id");
	if ((rc = state_sid(state, &want, err)) != 0 || (rc = view_open(b, loc, &v, err)) != 0)
		return rc;
	/* The snapshot must exist before any tag name is spent on it. */
	if ((rc = resolve(&v, want, sid, err)) != 0)
		goto done;
	if (v.spec == 2) {
		pin_ctx pc = { pin_id, sid, "", false };
		rc = v2_update(&v, pin_plan, &pc, err);
		if (rc >= 0)
			rc = tt_kit_fill_pin(out, KIND, pin_id, pc.ref, pc.created, err);
		goto done;
	}
	for (int gen = 1; gen <= MAX_GENERATIONS; gen++) {
		char ref[96];
		if (gen == 1)
			snprintf(ref, sizeof ref, PIN_PREFIX "%s", pin_id);
		else
			snprintf(ref, sizeof ref, PIN_PREFIX "%s.%d", pin_id, gen);
		rc = v1_write_ref(&v, "tag", ref, sid, IC_CREATE, NULL, err);
		if (rc == 0) {
			rc = tt_kit_fill_pin(out, KIND, pin_id, ref, true, err);
			goto done;
		}
		if (rc != TT_EEXISTS)
			goto done;
		tt_error_clear(err);
		rc = lookup_tag(&v, ref, have, err);
		if (rc == TT_ENOTFOUND)
			continue; /* a tombstone: the next generation */
		if (rc)
			goto done;
		if (strcmp(have, sid) == 0) {
			rc = tt_kit_fill_pin(out, KIND, pin_id, ref, false, err);
			goto done;
		}
		rc = KERR(err, TT_EBACKEND, "tag %s already points at %s, not %s", ref, have, sid);
		goto done;
	}
	rc = KERR(err, TT_EBACKEND,
		  "pin %s: every tag name up to generation %d has been used and deleted", pin_id,
		  MAX_GENERATIONS);
done:
	view_release(&v);
	return rc;
}

/* The live tag carrying pin (its ref, else the newest generation of its id). */
static int live_tag(view *v, const tt_pin *pin, char tag[96], char sid[IC_ID_CHARS + 1],
		    bool *found, tt_error *err)
{
	json_t *tags = NULL, *e;
	char *wanted = NULL;
	long best = -1;
	size_t i;
	int rc = lookup_tag(v, pin->ref, sid, err);

	*found = false;
	if (rc == 0) {
		snprintf(tag, 96, "%s", pin->ref);
		*found = true;
		return 0;
	}
	if (rc != TT_ENOTFOUND)
		return rc;
	rc = 0;
	wanted = pin_id_of(pin->ref);
	if (!wanted)
		wanted = tt_strdup(pin->id);
	if (!wanted || (rc = list_refs(v, "tag", &tags, err)) != 0) {
		rc = rc ? rc : KOOM(err);
		goto done;
	}
	json_array_foreach(tags, i, e) {
		const char *t = json_string_value(e);
		char *id = pin_id_of(t);
		long g = generation_number(t);
		if (id && strcmp(id, wanted) == 0 && strcmp(t, pin->ref) != 0 && g > best &&
		    lookup_tag(v, t, sid, err) == 0) {
			best = g;
			snprintf(tag, 96, "%s", t);
			*found = true;
		}
		free(id);
	}
	if (*found)
		rc = lookup_tag(v, tag, sid, err);
done:
	free(wanted);
	json_decref(tags);
	return rc;
}

typedef struct name_ctx {
	ic_change_kind kind;
	const char *name;
} name_ctx;

/* Delete a tag or a branch that still exists. */
static int name_plan(view *v, ic_change *ch, void *ctx, tt_error *err)
{
	name_ctx *nc = ctx;
	bool tag = nc->kind == IC_CHANGE_TAG_DELETE;
	if (tag && v->repo.delete_tag_off)
		return KERR(err, TT_EBACKEND,
			    "icechunk repository %s has tag deletion disabled (feature flag delete_tag); "
			    "enable it with icechunk to release pins here",
			    v->store.root);
	if (tt_ic_repo_find_ref(tag ? v->repo.tags : v->repo.branches,
			     tag ? v->repo.ntags : v->repo.nbranches, nc->name) < 0)
		return 1;
	ch->kind = nc->kind;
	ch->name = nc->name;
	return 0;
}

static int ic_unpin(tt_backend *b, const json_t *loc, const tt_pin *pin, tt_error *err)
{
	view v;
	json_t *tags = NULL, *e;
	char *wanted = NULL;
	size_t i;
	int rc;

	(void)b;
	if ((rc = view_open(b, loc, &v, err)) != 0)
		return rc;
	wanted = pin_id_of(pin->ref);
	if (!wanted)
		wanted = tt_strdup(pin->id);
	if (!wanted || (rc = list_refs(&v, "tag", &tags, err)) != 0) {
		rc = rc ? rc : KOOM(err);
		goto done;
	}
	json_array_foreach(tags, i, e) {
		const char *t = json_string_value(e);
		char *id = pin_id_of(t);
		bool mine = strcmp(t, pin->ref) == 0 || (id && strcmp(id, wanted) == 0);
		free(id);
		if (!mine)
			continue;
		if (v.spec == 2) {
			rc = v2_update(&v, name_plan, &(name_ctx){ IC_CHANGE_TAG_DELETE, t }, err);
			if (rc == 1 || rc == TT_ENOTFOUND) {
				tt_error_clear(err);
				rc = 0;
			}
			if (rc)
				goto done;
			continue;
		}
		char *dead = ref_key("tag", t, "ref.json.deleted");
		if (!dead) {
			rc = KOOM(err);
			goto done;
		}
		rc = ic_write(&v.store, dead, IC_CREATE, NULL, "", 0, err);
		free(dead);
		if (rc == TT_EEXISTS) {
			tt_error_clear(err);
			rc = 0;
		}
		if (rc) {
			tt_error_prefix(err, "pin %s was not released", pin->id);
			tt_error_object(err, NULL, KIND);
			goto done;
		}
	}
done:
	free(wanted);
	json_decref(tags);
	view_release(&v);
	return rc;
}

static int ic_list_pins(tt_backend *b, const json_t *loc, json_t **ids, tt_error *err)
{
	view v;
	json_t *tags = NULL, *e;
	size_t i;
	int rc;

	(void)b;
	*ids = NULL;
	if ((rc = view_open(b, loc, &v, err)) != 0)
		return rc;
	if ((rc = list_refs(&v, "tag", &tags, err)) != 0)
		goto done;
	if (!(*ids = json_array())) {
		rc = KOOM(err);
		goto done;
	}
	json_array_foreach(tags, i, e) {
		char *id = pin_id_of(json_string_value(e));
		bool seen = false;
		size_t k;
		json_t *x;
		if (!id)
			continue;
		json_array_foreach(*ids, k, x)
			if (strcmp(json_string_value(x), id) == 0)
				seen = true;
		if (!seen && json_array_append_new(*ids, json_string(id)) != 0)
			rc = KOOM(err);
		free(id);
		if (rc)
			break;
	}
done:
	if (rc) {
		json_decref(*ids);
		*ids = NULL;
	}
	json_decref(tags);
	view_release(&v);
	return rc;
}

static int ic_verify(tt_backend *b, const json_t *loc, const json_t *state, const tt_pin *pin,
		     bool deep, tt_verify_status *status, char **message, tt_error *err)
{
	view v;
	char tag[96], sid[IC_ID_CHARS + 1];
	const char *want = NULL;
	bool found;
	int rc;

	(void)b;
	*message = NULL;
	*status = TT_VERIFY_UNKNOWN;
	if ((rc = state_sid(state, &want, err)) != 0 || (rc = view_open(b, loc, &v, err)) != 0)
		return rc;
	if (pin) {
		if ((rc = live_tag(&v, pin, tag, sid, &found, err)) != 0)
			goto done;
		if (!found) {
			*status = TT_VERIFY_MISSING;
			*message = tt_asprintf("tag %s missing", pin->ref);
		} else if (strcmp(sid, want) != 0) {
			*status = TT_VERIFY_DRIFTED;
			*message = tt_asprintf("%s -> %s, expected %s", tag, sid, want);
		} else {
			*status = TT_VERIFY_OK;
			if (strcmp(tag, pin->ref) != 0)
				*message = tt_asprintf("pinned as %s", tag);
			else
				goto done;
		}
	} else if (!deep) {
		*message = tt_strdup("pass --deep to read snapshot");
	} else {
		snapinfo si;
		rc = snap_info(&v, want, &si, err);
		if (rc == 0) {
			free(si.message);
			*status = TT_VERIFY_OK;
			goto done;
		}
		if (rc != TT_ENOTFOUND)
			goto done;
		rc = 0;
		*status = TT_VERIFY_MISSING;
		*message = tt_asprintf("snapshot %s not found", want);
	}
	if (!*message)
		rc = KOOM(err);
done:
	view_release(&v);
	return rc;
}

/* --- forks and promote -------------------------------------------------------- */

/* The snapshot a source names: a pin's live tag, or a recorded state. */
static int source_sid(view *v, const tt_target *source, char sid[IC_ID_CHARS + 1], tt_error *err)
{
	if (source->kind == TT_TARGET_PIN && source->pin) {
		char tag[96];
		bool found;
		int rc = live_tag(v, source->pin, tag, sid, &found, err);
		if (rc == 0 && !found)
			rc = KERR(err, TT_EBACKEND, "icechunk tag %s not found", source->pin->ref);
		return rc;
	}
	if (source->kind == TT_TARGET_STATE && source->state) {
		const char *s = NULL;
		int rc = state_sid(source->state, &s, err);
		return rc ? rc : resolve(v, s, sid, err);
	}
	if (source->kind == TT_TARGET_REF && source->ref)
		return resolve(v, source->ref, sid, err);
	return KERR(err, TT_EUSAGE, "icechunk needs a pin, a state or a ref here");
}

typedef struct move_ctx {
	const char *branch, *sid;
	const tt_expect *expected;
	const char *what;   /* "fork" | "promote" */
} move_ctx;

/* Create or reset a branch onto sid, checking the head the plan reviewed
 * on the freshly read repo (under the write lock). */
static int move_plan(view *v, ic_change *ch, void *ctx, tt_error *err)
{
	move_ctx *mc = ctx;
	long bi = tt_ic_repo_find_ref(v->repo.branches, v->repo.nbranches, mc->branch);
	long si = snap_index(v, mc->sid);
	char head[IC_ID_CHARS + 1] = "";
	if (si < 0)
		return KERR(err, TT_EBACKEND, "icechunk snapshot %s is not in %s", mc->sid,
			    v->store.root);
	if (bi >= 0)
		tt_ic_id_encode(v->repo.snaps[v->repo.branches[bi].snap].id, head);
	if (mc->expected && mc->expected->kind == TT_EXPECT_ABSENT && bi >= 0)
		return KERR(err, TT_EREFMOVED, "%s: %s exists, expected absent (made meanwhile)",
			    mc->what, mc->branch);
	if (mc->expected && mc->expected->kind == TT_EXPECT_STATE) {
		const json_t *e = json_object_get(mc->expected->state, "snapshot_id");
		const char *want = json_is_string(e) ? json_string_value(e) : "";
		if (bi < 0 || strcmp(head, want) != 0)
			return KERR(err, TT_EREFMOVED,
				    "%s: %s moved meanwhile: it is at %s, expected %s; review it again",
				    mc->what, mc->branch, bi >= 0 ? head : "nothing", want);
	}
	if (bi >= 0 && strcmp(head, mc->sid) == 0)
		return 1; /* already there: left alone */
	ch->kind = bi >= 0 ? IC_CHANGE_BRANCH_RESET : IC_CHANGE_BRANCH_CREATE;
	ch->name = mc->branch;
	ch->snap = (uint32_t)si;
	return 0;
}

static int ic_fork(tt_backend *b, const json_t *loc, const tt_target *source, const char *name,
		   const tt_expect *expected, char **ref_out, tt_error *err)
{
	view v;
	char sid[IC_ID_CHARS + 1], head[IC_ID_CHARS + 1];
	int rc;

	*ref_out = NULL;
	if (!name || !*name || strchr(name, '/'))
		return KERR(err, TT_EUSAGE, "fork needs a branch name");
	if ((rc = view_open(b, loc, &v, err)) != 0)
		return rc;
	if ((rc = source_sid(&v, source, sid, err)) != 0)
		goto done;
	if (v.spec == 2) {
		move_ctx mc = { name, sid, expected, "fork" };
		rc = v2_update(&v, move_plan, &mc, err);
		if (rc == 1)
			rc = 0;
		goto done;
	}
	rc = lookup_branch(&v, name, head, err);
	if (rc && rc != TT_ENOTFOUND)
		goto done;
	if (expected && expected->kind == TT_EXPECT_ABSENT) {
		if (rc == 0) {
			rc = KERR(err, TT_EREFMOVED, "fork: %s exists, expected absent", name);
			goto done;
		}
		rc = v1_write_ref(&v, "branch", name, sid, IC_CREATE, NULL, err);
		if (rc == TT_EEXISTS)
			rc = KERR(err, TT_EREFMOVED, "fork: %s exists, expected absent", name);
		goto done;
	}
	if (expected && expected->kind == TT_EXPECT_STATE) {
		/* the ref moves from the reviewed head or not at all (If-Match) */
		const json_t *e = json_object_get(expected->state, "snapshot_id");
		const char *want = json_is_string(e) ? json_string_value(e) : "";
		char *etag = NULL;
		rc = v1_head_tagged(&v, name, head, &etag, err);
		if (rc && rc != TT_ENOTFOUND)
			goto done;
		if (rc == TT_ENOTFOUND || strcmp(head, want) != 0) {
			rc = KERR(err, TT_EREFMOVED,
				  "fork: %s moved meanwhile: it is at %s, expected %s; review it again", name,
				  rc == TT_ENOTFOUND ? "nothing" : head, want);
		} else if (strcmp(head, sid) != 0) {
			rc = v1_write_ref(&v, "branch", name, sid, IC_IF_MATCH, etag, err);
			if (rc == TT_EREFMOVED) {
				tt_error_clear(err);
				rc = moved_meanwhile(&v, "fork", name, want, err);
			}
		}
		free(etag);
		goto done;
	}
	if (rc == TT_ENOTFOUND) {
		rc = v1_write_ref(&v, "branch", name, sid, IC_CREATE, NULL, err);
		if (rc != TT_EEXISTS)
			goto done;
		tt_error_clear(err);
		if ((rc = lookup_branch(&v, name, head, err)) != 0)
			goto done;
	}
	rc = strcmp(head, sid) == 0 ? 0 : v1_write_ref(&v, "branch", name, sid, IC_REPLACE, NULL, err);
done:
	if (rc == 0 && !(*ref_out = tt_strdup(name)))
		rc = KOOM(err);
	view_release(&v);
	return rc;
}

static int ic_delete_working_ref(tt_backend *b, const json_t *loc, const char *ref, tt_error *err)
{
	view v;
	char *base = NULL, *key = NULL, sid[IC_ID_CHARS + 1];
	int rc;

	(void)b;
	if ((rc = base_branch_of(loc, &base, err)) != 0)
		return rc;
	if (strcmp(ref, base) == 0 || strcmp(ref, "main") == 0) {
		free(base);
		return 0;
	}
	free(base);
	if ((rc = view_open(b, loc, &v, err)) != 0)
		return rc;
	rc = lookup_branch(&v, ref, sid, err);
	if (rc == TT_ENOTFOUND) {
		rc = 0;
		goto done;
	}
	if (rc)
		goto done;
	if (v.spec == 2) {
		rc = v2_update(&v, name_plan, &(name_ctx){ IC_CHANGE_BRANCH_DELETE, ref }, err);
		if (rc == 1)
			rc = 0;
		goto done;
	}
	if (!(key = ref_key("branch", ref, "ref.json"))) {
		rc = KOOM(err);
		goto done;
	}
	rc = ic_remove(&v.store, key, err);
	if (rc == TT_ENOTFOUND) {
		tt_error_clear(err);
		rc = 0;
	}
	if (rc) {
		tt_error_prefix(err, "branch %s was not deleted", ref);
		tt_error_object(err, NULL, KIND);
	}
done:
	free(key);
	view_release(&v);
	return rc;
}

static int ic_list_working_refs(tt_backend *b, const json_t *loc, json_t **refs, tt_error *err)
{
	view v;
	json_t *all = NULL, *e;
	size_t i;
	int rc;

	(void)b;
	*refs = NULL;
	if ((rc = view_open(b, loc, &v, err)) != 0)
		return rc;
	if ((rc = list_refs(&v, "branch", &all, err)) == 0) {
		*refs = json_array();
		json_array_foreach(all, i, e)
			if (*refs && tt_kit_keep_ref(*refs, json_string_value(e), TT_WORKING_REF_PREFIX, NULL,
						     false) != 0) {
				json_decref(*refs);
				*refs = NULL;
			}
		if (!*refs)
			rc = KOOM(err);
	}
	json_decref(all);
	view_release(&v);
	return rc;
}

typedef struct find_ctx {
	const char *wanted;
	bool found;
} find_ctx;

static int find_step(const snapinfo *s, void *ctx, tt_error *err)
{
	find_ctx *f = ctx;
	(void)err;
	if (strcmp(s->id, f->wanted) == 0) {
		f->found = true;
		return 1;
	}
	return 0;
}

static int count_step(const snapinfo *s, void *ctx, tt_error *err)
{
	size_t *n = ctx;
	(void)s;
	(void)err;
	return ++*n > 1 ? 1 : 0;
}

static int ic_ancestor_of(tt_backend *b, const json_t *loc, const json_t *ancestor,
			  const tt_target *descendant, int *answer, tt_error *err)
{
	view v;
	char sid[IC_ID_CHARS + 1];
	find_ctx f = { NULL, false };
	int rc;

	(void)b;
	*answer = -1;
	if ((rc = state_sid(ancestor, &f.wanted, err)) != 0 || (rc = view_open(b, loc, &v, err)) != 0)
		return rc;
	if ((rc = source_sid(&v, descendant, sid, err)) == 0 &&
	    (rc = ancestry(&v, sid, find_step, &f, err)) == 0)
		*answer = f.found ? 1 : 0;
	view_release(&v);
	return rc;
}

static int ic_promote(tt_backend *b, const json_t *loc, const tt_target *source,
		      const tt_expect *expected, json_t **new_state, tt_error *err)
{
	view v;
	char *base = NULL, head[IC_ID_CHARS + 1], target[IC_ID_CHARS + 1];
	find_ctx f = { NULL, false };
	int rc;

	(void)b;
	*new_state = NULL;
	if ((rc = base_branch_of(loc, &base, err)) != 0)
		return rc;
	if ((rc = view_open(b, loc, &v, err)) != 0) {
		free(base);
		return rc;
	}
	rc = lookup_branch(&v, base, head, err);
	if (rc == TT_ENOTFOUND)
		rc = KERR(err, TT_EBACKEND, "icechunk branch %s not found in %s", base, v.store.root);
	if (rc)
		goto done;
	if (expected && expected->kind != TT_EXPECT_NONE) {
		const char *from = "";
		if (expected->kind == TT_EXPECT_STATE && expected->state) {
			const json_t *s = json_object_get(expected->state, "snapshot_id");
			from = json_is_string(s) ? json_string_value(s) : "";
		}
		if (strcmp(head, from) != 0) {
			rc = KERR(err, TT_EREFMOVED,
				  "promote: %s moved meanwhile: it is at %s, expected %s", base, head,
				  *from ? from : "absent");
			goto done;
		}
	}
	if ((rc = source_sid(&v, source, target, err)) != 0)
		goto done;
	if (strcmp(target, head) != 0) {
		f.wanted = head;
		if ((rc = ancestry(&v, target, find_step, &f, err)) != 0)
			goto done;
		if (!f.found) {
			rc = KERR(err, TT_EBACKEND,
				  "%s moved to %s, which is not an ancestor of %s; Icechunk has no merge; "
				  "re-apply the writes on a fresh fork of the base branch, or reset the "
				  "base with repo.reset_branch() if losing its newer snapshots is intended",
				  base, head, target);
			goto done;
		}
		if (v.spec == 2) {
			tt_expect head_now = { TT_EXPECT_STATE, NULL };
			json_t *hs = sid_state(head);
			/* reset from the head the ancestry was checked against */
			head_now.state = hs;
			move_ctx mc = { base, target, &head_now, "promote" };
			rc = hs ? v2_update(&v, move_plan, &mc, err) : KOOM(err);
			json_decref(hs);
			if (rc == 1)
				rc = 0;
			if (rc)
				goto done;
			goto moved;
		}
		{
			/* If-Match on the ref the ancestry was checked against */
			char was[IC_ID_CHARS + 1], *etag = NULL;
			memcpy(was, head, sizeof was);
			rc = v1_head_tagged(&v, base, head, &etag, err);
			if (rc == 0 && strcmp(head, was) != 0)
				rc = KERR(err, TT_EREFMOVED,
					  "promote: %s moved meanwhile: it is at %s, expected %s", base,
					  head, was);
			if (rc == 0 && (rc = v1_write_ref(&v, "branch", base, target, IC_IF_MATCH, etag, err)) ==
					       TT_EREFMOVED) {
				tt_error_clear(err);
				rc = moved_meanwhile(&v, "promote", base, was, err);
			}
			free(etag);
			if (rc)
				goto done;
		}
	}
moved:
	if (!(*new_state = sid_state(target)))
		rc = KOOM(err);
done:
	free(base);
	view_release(&v);
	return rc;
}

/* --- open and history ----------------------------------------------------------- */

static int ic_open(tt_backend *b, const json_t *loc, const tt_target *target, bool read_only,
		   json_t **handle, tt_error *err)
{
	view v;
	char sid[IC_ID_CHARS + 1], tag[96];
	char *branch = NULL, *address = NULL;
	const char *tagp = NULL;
	const json_t *at = json_object_get(loc, "at");
	int rc;

	(void)b;
	*handle = NULL;
	if ((rc = view_open(b, loc, &v, err)) != 0)
		return rc;
	if (target->kind == TT_TARGET_PIN) {
		bool found;
		read_only = true;
		if (!target->pin) {
			rc = KERR(err, TT_EUSAGE, "open needs a pin");
			goto done;
		}
		if ((rc = live_tag(&v, target->pin, tag, sid, &found, err)) != 0)
			goto done;
		if (!found) {
			rc = KERR(err, TT_EBACKEND, "icechunk tag %s not found", target->pin->ref);
			goto done;
		}
		tagp = tag;
	} else if (target->kind == TT_TARGET_STATE) {
		const char *s = NULL;
		snapinfo si;
		read_only = true;
		if ((rc = state_sid(target->state, &s, err)) != 0)
			goto done;
		rc = snap_info(&v, s, &si, err);
		if (rc == TT_ENOTFOUND)
			rc = KERR(err, TT_EBACKEND, "icechunk snapshot %s not found in %s", s,
				  v.store.root);
		if (rc)
			goto done;
		memcpy(sid, si.id, sizeof sid);
		free(si.message);
	} else if (target->kind == TT_TARGET_BASE && read_only && has_text(at)) {
		char *ref = tt_pyv_str_dup(at);
		rc = ref ? resolve(&v, ref, sid, err) : KOOM(err);
		free(ref);
		if (rc)
			goto done;
	} else {
		if (target->kind == TT_TARGET_REF && target->ref && *target->ref)
			branch = tt_strdup(target->ref);
		else if ((rc = base_branch_of(loc, &branch, err)) != 0)
			goto done;
		if (!branch) {
			rc = KOOM(err);
			goto done;
		}
		rc = lookup_branch(&v, branch, sid, err);
		if (rc == TT_ENOTFOUND)
			rc = KERR(err, TT_EBACKEND, "icechunk branch %s not found in %s", branch,
				  v.store.root);
		if (rc)
			goto done;
	}
	address = tt_asprintf("%s#%s", v.store.root, branch ? branch : tagp ? tagp : sid);
	if (!address) {
		rc = KOOM(err);
		goto done;
	}
	*handle = json_pack("{s:s, s:s, s:b, s:s, s:i, s:s?, s:s?, s:s}", "type", KIND, "address",
			    address, "read_only", read_only, "uri", v.store.root, "spec_version",
			    v.spec, "branch", branch, "tag", tagp, "snapshot_id", sid);
	if (!*handle)
		rc = KOOM(err);
done:
	free(branch);
	free(address);
	view_release(&v);
	return rc;
}

typedef struct hist_ctx {
	tt_history_entry *entries;
	size_t n, cap, limit;
	json_t *refs; /* sid -> [names] */
} hist_ctx;

static char *iso_utc(uint64_t us)
{
	time_t t = (time_t)(us / 1000000);
	struct tm tm;
	char buf[64];
	if (!gmtime_r(&t, &tm))
		return tt_strdup("");
	strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S+00:00", &tm);
	return tt_strdup(buf);
}

static int hist_step(const snapinfo *s, void *ctx, tt_error *err)
{
	hist_ctx *h = ctx;
	tt_history_entry *e;
	json_t *r = json_object_get(h->refs, s->id);
	if (h->n == h->cap) {
		size_t cap = h->cap ? h->cap * 2 : 64;
		tt_history_entry *m = tt_realloc(h->entries, cap * sizeof *m);
		if (!m)
			return KOOM(err);
		memset(m + h->cap, 0, (cap - h->cap) * sizeof *m);
		h->entries = m;
		h->cap = cap;
	}
	e = &h->entries[h->n];
	e->id = tt_strdup(s->id);
	e->when = iso_utc(s->flushed_at);
	e->message = tt_strdup(s->message ? s->message : "");
	e->refs = r ? json_deep_copy(r) : json_array();
	h->n++;
	if (!e->id || !e->when || !e->message || !e->refs)
		return KOOM(err);
	return h->n >= h->limit ? 1 : 0;
}

static int add_refs(view *v, const char *kind, json_t *by_sid, tt_error *err)
{
	json_t *names = NULL, *e;
	size_t i;
	int rc = list_refs(v, kind, &names, err);
	if (rc)
		return rc;
	json_array_foreach(names, i, e) {
		char sid[IC_ID_CHARS + 1];
		json_t *list;
		int lr = strcmp(kind, "tag") == 0 ? lookup_tag(v, json_string_value(e), sid, err)
						  : lookup_branch(v, json_string_value(e), sid, err);
		if (lr == TT_ENOTFOUND)
			continue;
		if (lr) {
			rc = lr;
			break;
		}
		list = json_object_get(by_sid, sid);
		if (!list) {
			list = json_array();
			if (!list || json_object_set_new(by_sid, sid, list) != 0) {
				rc = KOOM(err);
				break;
			}
		}
		if (json_array_append(list, e) != 0) {
			rc = KOOM(err);
			break;
		}
	}
	json_decref(names);
	return rc;
}

static int ic_history(tt_backend *b, const json_t *loc, const char *ref, size_t limit,
		      tt_history_entry **out, size_t *n, tt_error *err)
{
	view v;
	hist_ctx h = { NULL, 0, 0, limit, NULL };
	char sid[IC_ID_CHARS + 1], *start = NULL;
	const json_t *at = json_object_get(loc, "at");
	int rc;

	(void)b;
	*out = NULL;
	*n = 0;
	if (limit == 0)
		return 0;
	if ((rc = view_open(b, loc, &v, err)) != 0)
		return rc;
	if (ref && *ref)
		start = tt_strdup(ref);
	else if (has_text(at))
		start = tt_pyv_str_dup(at);
	else if ((rc = base_branch_of(loc, &start, err)) != 0)
		goto done;
	if (!start) {
		rc = KOOM(err);
		goto done;
	}
	if ((rc = resolve(&v, start, sid, err)) != 0)
		goto done;
	if (!(h.refs = json_object())) {
		rc = KOOM(err);
		goto done;
	}
	if ((rc = add_refs(&v, "branch", h.refs, err)) != 0 ||
	    (rc = add_refs(&v, "tag", h.refs, err)) != 0)
		goto done;
	rc = ancestry(&v, sid, hist_step, &h, err);
done:
	if (rc) {
		tt_history_release(h.entries, h.n);
	} else {
		*out = h.entries;
		*n = h.n;
	}
	json_decref(h.refs);
	free(start);
	view_release(&v);
	return rc;
}


/* --- diff ----------------------------------------------------------------------- */

static void hex8(const uint8_t id[IC_NODE_ID_LEN], char out[17])
{
	for (int i = 0; i < IC_NODE_ID_LEN; i++)
		snprintf(out + 2 * i, 3, "%02x", id[i]);
}

/* icechunk's Diff, as sets keyed by node id (hex) */
typedef struct icdiff {
	json_t *lists[IC_TX_NLISTS]; /* id -> true */
	json_t *chunks;              /* id -> {coords: true} */
	json_t *moves;               /* [[from, to]] */
} icdiff;

static void icdiff_release(icdiff *d)
{
	for (int i = 0; i < IC_TX_NLISTS; i++)
		json_decref(d->lists[i]);
	json_decref(d->chunks);
	json_decref(d->moves);
	memset(d, 0, sizeof *d);
}

static int icdiff_init(icdiff *d, tt_error *err)
{
	memset(d, 0, sizeof *d);
	for (int i = 0; i < IC_TX_NLISTS; i++)
		if (!(d->lists[i] = json_object()))
			return KOOM(err);
	d->chunks = json_object();
	d->moves = json_array();
	return d->chunks && d->moves ? 0 : KOOM(err);
}

/* Fold one transaction log in; a missing one is TT_ENOTFOUND. */
static int fold_txlog(view *v, const char *sid, icdiff *d, tt_error *err)
{
	tt_buf fb = TT_BUF_INIT;
	char *key = tt_asprintf("transactions/%s", sid), *what = NULL;
	ic_txlog t;
	int rc, spec;
	if (!key)
		return KOOM(err);
	if ((rc = read_object(v, key, IC_FILE_TXLOG, &fb, &spec, err)) != 0)
		goto done;
	what = tt_asprintf("%s/%s", v->store.root, key);
	if (!what) {
		rc = KOOM(err);
		goto done;
	}
	if ((rc = tt_ic_txlog_decode((const uint8_t *)fb.ptr, fb.len, what, &t, err)) != 0) {
		tt_error_object(err, NULL, KIND);
		goto done;
	}
	for (int l = 0; l < IC_TX_NLISTS && !rc; l++)
		for (size_t i = 0; i < t.lists[l].n && !rc; i++) {
			char h[17];
			hex8(t.lists[l].ids[i], h);
			if (json_object_set_new(d->lists[l], h, json_true()) != 0)
				rc = KOOM(err);
		}
	for (size_t i = 0; i < t.nchunks && !rc; i++) {
		char h[17];
		json_t *set;
		hex8(t.chunks[i].node, h);
		if (!(set = json_object_get(d->chunks, h))) {
			set = json_object();
			if (!set || json_object_set_new(d->chunks, h, set) != 0) {
				rc = KOOM(err);
				break;
			}
		}
		for (size_t k = 0; k < t.chunks[i].ncoords && !rc; k++)
			if (json_object_set_new(set, t.chunks[i].coords[k], json_true()) != 0)
				rc = KOOM(err);
	}
	for (size_t i = 0; i < t.nmoves && !rc; i++)
		if (json_array_append_new(d->moves, json_pack("[s,s]", t.moves[i].from ? t.moves[i].from : "",
								   t.moves[i].to ? t.moves[i].to : "")) != 0)
			rc = KOOM(err);
	tt_ic_txlog_release(&t);
done:
	tt_buf_release(&fb);
	free(key);
	free(what);
	return rc;
}

/* Node id (hex) -> path, from a snapshot's nodes; later calls win. */
static int map_nodes(view *v, const char *sid, json_t *map, tt_error *err)
{
	tt_buf fb = TT_BUF_INIT;
	char *key = tt_asprintf("snapshots/%s", sid), *what = NULL;
	ic_snapshot s;
	int rc, spec;
	if (!key)
		return KOOM(err);
	if ((rc = read_object(v, key, IC_FILE_SNAPSHOT, &fb, &spec, err)) != 0) {
		if (rc == TT_ENOTFOUND)
			rc = KERR(err, TT_EBACKEND, "icechunk snapshot file %s/%s is missing", v->store.root,
				  key);
		goto done;
	}
	what = tt_asprintf("%s/%s", v->store.root, key);
	if (!what) {
		rc = KOOM(err);
		goto done;
	}
	if ((rc = tt_ic_snapshot_decode((const uint8_t *)fb.ptr, fb.len, what, &s, err)) != 0) {
		tt_error_object(err, NULL, KIND);
		goto done;
	}
	for (size_t i = 0; i < s.nnodes && !rc; i++) {
		char h[17];
		hex8(s.nodes[i].id, h);
		if (json_object_set_new(map, h, json_string(s.nodes[i].path)) != 0)
			rc = KOOM(err);
	}
	tt_ic_snapshot_release(&s);
done:
	tt_buf_release(&fb);
	free(key);
	free(what);
	return rc;
}

typedef struct walk_ctx {
	const char *stop;
	json_t *ids;     /* walked snapshot ids, newest first */
	bool reached;
} walk_ctx;

static int walk_step(const snapinfo *s, void *ctx, tt_error *err)
{
	walk_ctx *w = ctx;
	if (strcmp(s->id, w->stop) == 0) {
		w->reached = true;
		return 1;
	}
	return json_array_append_new(w->ids, json_string(s->id)) == 0 ? 0 : KOOM(err);
}

/* Path -> [change, detail] for from..to (from a strict ancestor of to),
 * flattened as tether-vcs flattens icechunk's Diff.  *ok false when from is
 * not an ancestor. */
static int node_diff(view *v, const char *from, const char *to, json_t **entries, bool *ok,
		     tt_error *err)
{
	walk_ctx w = { from, json_array(), false };
	icdiff d;
	json_t *map = json_object(), *e;
	size_t i;
	int rc;
	static const char *const change[IC_TX_NLISTS] = { "added", "added", "removed", "removed",
							  NULL, "modified" };
	static const char *const detail[IC_TX_NLISTS] = { "group", "array", "group", "array", NULL,
							  "group metadata" };

	*entries = NULL;
	*ok = false;
	if ((rc = icdiff_init(&d, err)) != 0 || !w.ids || !map) {
		rc = rc ? rc : KOOM(err);
		goto done;
	}
	if ((rc = ancestry(v, to, walk_step, &w, err)) != 0 || !w.reached || strcmp(from, to) == 0)
		goto done;
	*ok = true;
	/* oldest first: pruned logs, then each snapshot's own */
	for (i = json_array_size(w.ids); i-- > 0 && !rc;) {
		const char *sid = json_string_value(json_array_get(w.ids, i));
		snapinfo si;
		if (v->spec == 2) {
			uint8_t id[IC_ID_LEN];
			long k = tt_ic_id_decode(sid, id) == 0 ? tt_ic_repo_find_snap(&v->repo, id) : -1;
			for (size_t p = 0; k >= 0 && p < v->repo.snaps[k].npruned && !rc; p++) {
				char ps[IC_ID_CHARS + 1];
				tt_ic_id_encode(v->repo.snaps[k].pruned[p], ps);
				rc = fold_txlog(v, ps, &d, err);
				if (rc == TT_ENOTFOUND) { /* icechunk only warns */
					tt_error_clear(err);
					rc = 0;
				}
			}
		}
		if (rc)
			break;
		rc = fold_txlog(v, sid, &d, err);
		if (rc == TT_ENOTFOUND) {
			tt_error_clear(err);
			/* a spec-1 root has no log; any other missing log is damage */
			rc = snap_info(v, sid, &si, err);
			if (rc == 0) {
				bool root = !si.has_parent;
				free(si.message);
				if (!root)
					rc = KERR(err, TT_EBACKEND,
						  "icechunk transaction log %s/transactions/%s is missing",
						  v->store.root, sid);
			}
		}
	}
	if (rc || (rc = map_nodes(v, from, map, err)) != 0 || (rc = map_nodes(v, to, map, err)) != 0)
		goto done;
	if (!(*entries = json_object())) {
		rc = KOOM(err);
		goto done;
	}
	/* tether-vcs's order: new, deleted, updated groups, then arrays whose
	 * metadata or chunks changed (unless already listed), then moves */
	for (int l = 0; l < IC_TX_NLISTS && !rc; l++) {
		const char *id;
		json_t *x;
		if (!change[l])
			continue;
		json_object_foreach(d.lists[l], id, x) {
			json_t *path = json_object_get(map, id);
			if (path && json_object_set_new(*entries, json_string_value(path),
							json_pack("[s,s]", change[l], detail[l])) != 0)
				rc = KOOM(err);
		}
	}
	{
		json_t *arrays = json_object(), *x;
		const char *id;
		if (!arrays) {
			rc = KOOM(err);
			goto done;
		}
		json_object_foreach(d.lists[IC_TX_UPDATED_ARRAYS], id, x)
			json_object_set_new(arrays, id, json_true());
		json_object_foreach(d.chunks, id, x)
			json_object_set_new(arrays, id, json_true());
		json_object_foreach(arrays, id, x) {
			json_t *path = json_object_get(map, id), *cs = json_object_get(d.chunks, id);
			tt_buf det = TT_BUF_INIT;
			if (!path || json_object_get(*entries, json_string_value(path)))
				continue;
			if (json_object_get(d.lists[IC_TX_UPDATED_ARRAYS], id))
				tt_buf_puts(&det, "array metadata");
			if (cs)
				tt_buf_printf(&det, "%s%zu chunks", det.len ? ", " : "",
					      json_object_size(cs));
			if (det.failed || json_object_set_new(*entries, json_string_value(path),
							      json_pack("[s,s]", "modified", det.ptr)) != 0)
				rc = KOOM(err);
			tt_buf_release(&det);
		}
		json_decref(arrays);
	}
	json_array_foreach(d.moves, i, e) {
		char *k = tt_asprintf("%s -> %s", json_string_value(json_array_get(e, 0)),
				      json_string_value(json_array_get(e, 1)));
		if (!k || json_object_set_new(*entries, k, json_pack("[s,s]", "renamed", "")) != 0)
			rc = KOOM(err);
		free(k);
	}
done:
	if (rc) {
		json_decref(*entries);
		*entries = NULL;
	}
	icdiff_release(&d);
	json_decref(w.ids);
	json_decref(map);
	return rc;
}

/* "N chunks" summed across both sides, other wording kept once. */
static char *join_details(const char *a, const char *b)
{
	tt_buf out = TT_BUF_INIT;
	long long total = 0;
	json_t *words = json_array();
	const char *sides[2] = { a, b };
	size_t i;
	json_t *w;
	for (int s = 0; s < 2 && words; s++) {
		char *copy = tt_strdup(sides[s]), *save = NULL, *part;
		for (part = copy ? strtok_r(copy, ",", &save) : NULL; part;
		     part = strtok_r(NULL, ",", &save)) {
			char *end;
			long long n;
			bool seen = false;
			while (*part == ' ')
				part++;
			end = part + strlen(part);
			while (end > part && end[-1] == ' ')
				*--end = '\0';
			if (!*part)
				continue;
			n = strtoll(part, &end, 10);
			if (end != part && strcmp(end, " chunks") == 0 && part[0] >= '0' && part[0] <= '9') {
				total += n;
				continue;
			}
			json_array_foreach(words, i, w)
				if (strcmp(json_string_value(w), part) == 0)
					seen = true;
			if (!seen)
				json_array_append_new(words, json_string(part));
		}
		free(copy);
	}
	json_array_foreach(words, i, w)
		tt_buf_printf(&out, "%s%s", out.len ? ", " : "", json_string_value(w));
	if (total)
		tt_buf_printf(&out, "%s%lld chunks", out.len ? ", " : "", total);
	json_decref(words);
	if (out.failed) {
		tt_buf_release(&out);
		return NULL;
	}
	return out.len ? tt_buf_detach(&out) : tt_strdup("");
}

typedef struct sortent {
	const char *path;
	const char *change, *detail;
	int order;
} sortent;

static int sortent_cmp(const void *x, const void *y)
{
	const sortent *a = x, *b = y;
	if (a->order != b->order)
		return a->order - b->order;
	return strcmp(a->path, b->path);
}

static int collect(json_t *entries, tt_object_diff *out, tt_error *err)
{
	size_t n = json_object_size(entries), k = 0;
	sortent *list = tt_calloc(n ? n : 1, sizeof *list);
	const char *path;
	json_t *e;
	int rc = 0;
	if (!list)
		return KOOM(err);
	json_object_foreach(entries, path, e) {
		const char *c = json_string_value(json_array_get(e, 0));
		list[k].path = path;
		list[k].change = c;
		list[k].detail = json_string_value(json_array_get(e, 1));
		list[k].order = strcmp(c, "added") == 0     ? 0
				: strcmp(c, "removed") == 0  ? 1
				: strcmp(c, "modified") == 0 ? 2
				: strcmp(c, "renamed") == 0  ? 3
							     : 9;
		k++;
	}
	qsort(list, n, sizeof *list, sortent_cmp);
	for (k = 0; k < n && !rc; k++)
		rc = tt_object_diff_add(out, list[k].path, list[k].change, list[k].detail, err);
	free(list);
	return rc;
}

typedef struct set_ctx {
	json_t *ids;
} set_ctx;

static int set_step(const snapinfo *s, void *ctx, tt_error *err)
{
	set_ctx *c = ctx;
	return json_object_set_new(c->ids, s->id, json_true()) == 0 ? 0 : KOOM(err);
}

typedef struct common_ctx {
	json_t *in_b;
	char found[IC_ID_CHARS + 1];
} common_ctx;

static int common_step(const snapinfo *s, void *ctx, tt_error *err)
{
	common_ctx *c = ctx;
	(void)err;
	if (json_object_get(c->in_b, s->id)) {
		memcpy(c->found, s->id, sizeof c->found);
		return 1;
	}
	return 0;
}

static int ic_diff(tt_backend *b, const json_t *loc, const json_t *a, const json_t *bstate,
		   const char *la, const char *lb, tt_object_diff *out, tt_error *err)
{
	view v;
	const char *sa = NULL, *sb = NULL;
	json_t *entries = NULL, *ea = NULL, *eb = NULL, *merged = NULL;
	set_ctx sc = { NULL };
	common_ctx cc = { NULL, "" };
	bool ok = false;
	int rc;

	(void)b;
	(void)la;
	(void)lb;
	tt_object_diff_init(out, "nodes");
	if ((rc = state_sid(a, &sa, err)) != 0 || (rc = state_sid(bstate, &sb, err)) != 0)
		return rc;
	if (strcmp(sa, sb) == 0)
		return 0;
	if ((rc = view_open(b, loc, &v, err)) != 0)
		return rc;
	if ((rc = node_diff(&v, sa, sb, &entries, &ok, err)) != 0)
		goto done;
	if (ok) {
		rc = collect(entries, out, err);
		goto done;
	}
	/* Two lines of history: each side against their newest common snapshot. */
	sc.ids = json_object();
	cc.in_b = sc.ids;
	if (!sc.ids) {
		rc = KOOM(err);
		goto done;
	}
	if ((rc = ancestry(&v, sb, set_step, &sc, err)) != 0 ||
	    (rc = ancestry(&v, sa, common_step, &cc, err)) != 0)
		goto done;
	if (!cc.found[0]) {
		rc = KERR(err, TT_EBACKEND, "icechunk diff failed: snapshots %s and %s share no history",
			  sa, sb);
		goto done;
	}
	if (strcmp(cc.found, sa) == 0) {
		ea = json_object();
	} else if ((rc = node_diff(&v, cc.found, sa, &ea, &ok, err)) != 0) {
		goto done;
	}
	if (strcmp(cc.found, sb) == 0) {
		eb = json_object();
	} else if ((rc = node_diff(&v, cc.found, sb, &eb, &ok, err)) != 0) {
		goto done;
	}
	if (!ea || !eb || !(merged = json_object())) {
		rc = KOOM(err);
		goto done;
	}
	{
		const char *path;
		json_t *x;
		json_object_foreach(eb, path, x) {
			json_t *ya = json_object_get(ea, path);
			const char *cb = json_string_value(json_array_get(x, 0));
			const char *db = json_string_value(json_array_get(x, 1));
			if (!ya) {
				json_object_set(merged, path, x);
			} else {
				const char *ca = json_string_value(json_array_get(ya, 0));
				const char *da = json_string_value(json_array_get(ya, 1));
				if (strcmp(ca, "removed") == 0 && strcmp(cb, "removed") == 0)
					continue;
				if (strcmp(cb, "removed") == 0) {
					json_object_set_new(merged, path, json_pack("[s,s]", "removed", db));
				} else if (strcmp(ca, "removed") == 0) {
					json_object_set_new(merged, path, json_pack("[s,s]", "added", db));
				} else {
					char *j = join_details(da, db);
					json_object_set_new(merged, path,
							    json_pack("[s,s]", "modified", j ? j : ""));
					free(j);
				}
			}
		}
		json_object_foreach(ea, path, x) {
			const char *ca = json_string_value(json_array_get(x, 0));
			const char *inv = strcmp(ca, "added") == 0     ? "removed"
					  : strcmp(ca, "removed") == 0 ? "added"
								       : ca;
			if (json_object_get(eb, path))
				continue;
			json_object_set_new(merged, path,
					    json_pack("[s,s]", inv, json_string_value(json_array_get(x, 1))));
		}
	}
	if ((rc = collect(merged, out, err)) == 0 &&
	    !(out->note = tt_asprintf("diverged at snapshot %s; changes on either side", cc.found)))
		rc = KOOM(err);
done:
	json_decref(entries);
	json_decref(ea);
	json_decref(eb);
	json_decref(merged);
	json_decref(sc.ids);
	view_release(&v);
	return rc;
}


/* --- CREATE ----------------------------------------------------------------------- */

#define OWNER_KEY "tether.owner"
#define ROOT_SNAPSHOT "1CECHNKREP0F1RSTCMT0"

/* Top-level names an icechunk repository writes (spec 1 and 2), and one a
 * file browser leaves behind; delete_store removes nothing else. */
static const char *const layout[] = { "config.yaml", "refs",  "repo",   "overwritten", "snapshots",
				      "transactions", "manifests", "chunks", ".DS_Store", NULL };

static bool in_layout(const char *name)
{
	for (size_t i = 0; layout[i]; i++)
		if (strcmp(layout[i], name) == 0)
			return true;
	return false;
}

static int put_object(view *v, const char *key, const tt_buf *fb, int type, tt_error *err)
{
	tt_buf file = TT_BUF_INIT;
	int rc = tt_ic_container_write((const uint8_t *)fb->ptr, fb->len, type, 2, &file, err);
	if (rc == 0)
		rc = ic_write(&v->store, key, IC_CREATE, NULL, file.ptr, file.len, err);
	tt_buf_release(&file);
	return rc;
}

/* A new spec-2 repository, the owner marker in its metadata (icechunk 1.x
 * repositories have no metadata, so tether creates spec 2 only). */
static int ic_create(tt_backend *b, const json_t *loc, const char *owner, json_t **state,
		     tt_error *err)
{
	view v;
	tt_buf snap = TT_BUF_INIT, tx = TT_BUF_INIT, repo = TT_BUF_INIT, flex = TT_BUF_INIT;
	uint64_t now = now_us();
	struct stat st;
	int rc;

	*state = NULL;
	memset(&v, 0, sizeof v);
	if ((rc = store_open(b, loc, &v.store, err)) != 0)
		return rc;
	if (v.store.remote) {
		/* anything under the prefix is someone's data, and delete_store
		 * would later take the whole prefix */
		json_t *names = NULL;
		if ((rc = ic_list(&v.store, "", &names, err)) != 0) {
			tt_error_object(err, NULL, KIND);
			goto done;
		}
		size_t n = json_array_size(names);
		json_decref(names);
		if (n) {
			rc = KERR(err, TT_EBACKEND,
				  "objects already exist under %s; `create` never adopts them",
				  v.store.root);
			goto done;
		}
	} else if (lstat(v.store.root, &st) == 0) {
		rc = KERR(err, TT_EBACKEND, "%s already exists; `create` never adopts it", v.store.root);
		goto done;
	}
	if (!owner || tt_ic_flex_string(owner, &flex) != 0) {
		rc = KERR(err, TT_EUSAGE, "icechunk create needs an owner (at most 250 bytes)");
		goto done;
	}
	/* the first write makes a local root */
	if ((rc = tt_ic_initial_snapshot(now, &snap, err)) != 0 || (rc = tt_ic_initial_txlog(&tx, err)) != 0 ||
	    (rc = tt_ic_initial_repo(now, OWNER_KEY, (const uint8_t *)flex.ptr, flex.len, &repo, err)) != 0)
		goto fail;
	/* the repo file last: a repository never exists half made */
	if ((rc = put_object(&v, "snapshots/" ROOT_SNAPSHOT, &snap, IC_FILE_SNAPSHOT, err)) != 0 ||
	    (rc = put_object(&v, "transactions/" ROOT_SNAPSHOT, &tx, IC_FILE_TXLOG, err)) != 0 ||
	    (rc = put_object(&v, "repo", &repo, IC_FILE_REPO, err)) != 0)
		goto fail;
	if (!(*state = sid_state(ROOT_SNAPSHOT)))
		rc = KOOM(err);
	goto done;
fail:
	tt_error_object(err, NULL, KIND);
done:
	tt_buf_release(&snap);
	tt_buf_release(&tx);
	tt_buf_release(&repo);
	tt_buf_release(&flex);
	view_release(&v);
	return rc;
}

/* Is there a repository at all (without reading it)?  *yes; an error
 * only where a remote store cannot say. */
static int repo_exists(tt_backend *b, const json_t *loc, bool *yes, tt_error *err)
{
	tt_error quiet = TT_ERROR_INIT;
	ic_store s;
	int spec = 0, rc;
	*yes = false;
	if (store_open(b, loc, &s, &quiet) != 0) {
		/* a locator that names no store has no repository */
		tt_error_clear(&quiet);
		return 0;
	}
	rc = store_probe(&s, &spec, err);
	*yes = spec != 0;
	ic_store_release(&s);
	return rc;
}

static int ic_owner(tt_backend *b, const json_t *loc, char **owner, tt_error *err)
{
	view v;
	int rc;
	bool there;
	*owner = NULL;
	if ((rc = repo_exists(b, loc, &there, err)) != 0 || !there)
		return rc;
	if ((rc = view_open(b, loc, &v, err)) != 0)
		return rc;
	for (size_t i = 0; v.spec == 2 && i < v.repo.nmetadata; i++) {
		const char *s;
		size_t n;
		if (strcmp(v.repo.metadata[i].name, OWNER_KEY) != 0)
			continue;
		if (tt_ic_flex_read_string(v.repo.metadata[i].value, v.repo.metadata[i].len, &s, &n) == 0 &&
		    n > 0 && !memchr(s, '\0', n) && !(*owner = tt_strndup(s, n)))
			rc = KOOM(err);
	}
	view_release(&v);
	return rc;
}

static int ic_is_ref_empty(tt_backend *b, const json_t *loc, const json_t *ignoring, int *answer,
			   tt_error *err)
{
	view v;
	json_t *branches = NULL, *tags = NULL, *e;
	char *base = NULL, sid[IC_ID_CHARS + 1];
	size_t i, count = 0;
	int rc;

	bool there;
	*answer = -1;
	if ((rc = repo_exists(b, loc, &there, err)) != 0 || !there)
		return rc;
	if ((rc = base_branch_of(loc, &base, err)) != 0)
		return rc;
	if ((rc = view_open(b, loc, &v, err)) != 0) {
		free(base);
		return rc;
	}
	if ((rc = list_refs(&v, "branch", &branches, err)) != 0 ||
	    (rc = list_refs(&v, "tag", &tags, err)) != 0)
		goto done;
	*answer = 1;
	json_array_foreach(branches, i, e) {
		const char *n = json_string_value(e);
		bool ignored = false;
		size_t k;
		json_t *x;
		json_array_foreach(ignoring, k, x)
			if (json_is_string(x) && strcmp(json_string_value(x), n) == 0)
				ignored = true;
		if (!ignored && strcmp(n, base) != 0)
			*answer = 0;
	}
	json_array_foreach(tags, i, e) {
		const char *n = json_string_value(e);
		char *pid = pin_id_of(n);
		bool ignored = false;
		size_t k;
		json_t *x;
		json_array_foreach(ignoring, k, x) {
			char *ip;
			if (!json_is_string(x))
				continue;
			if (strcmp(json_string_value(x), n) == 0)
				ignored = true;
			ip = pin_id_of(json_string_value(x));
			if (ip && pid && strcmp(ip, pid) == 0)
				ignored = true;
			free(ip);
		}
		free(pid);
		if (!ignored)
			*answer = 0;
	}
	if (*answer == 1) {
		/* the base still at the first snapshot: nothing committed to it */
		rc = lookup_branch(&v, base, sid, err);
		if (rc == TT_ENOTFOUND) {
			rc = 0;
			*answer = -1;
			goto done;
		}
		if (rc == 0)
			rc = ancestry(&v, sid, count_step, &count, err);
		if (rc == 0 && count != 1)
			*answer = 0;
	}
done:
	json_decref(branches);
	json_decref(tags);
	free(base);
	view_release(&v);
	return rc;
}

static int ic_delete_store(tt_backend *b, const json_t *loc, tt_error *err)
{
	char *owner = NULL, *root = NULL;
	json_t *names = NULL, *e;
	ic_store s;
	tt_buf foreign = TT_BUF_INIT;
	int rc, empty = -1;
	size_t i;

	if ((rc = store_open(b, loc, &s, err)) != 0)
		return rc;
	root = s.root;
	/* the caller checked; check again here, where the delete is */
	if ((rc = ic_owner(b, loc, &owner, err)) != 0 || (rc = ic_is_ref_empty(b, loc, NULL, &empty, err)) != 0)
		goto done;
	if (!owner || empty != 1) {
		rc = KERR(err, TT_EBACKEND, "%s is not an empty repository tether created; not removing it",
			  root);
		goto done;
	}
	if ((rc = ic_list(&s, "", &names, err)) != 0)
		goto done;
	json_array_foreach(names, i, e)
		if (!in_layout(json_string_value(e)))
			tt_buf_printf(&foreign, "%s%s", foreign.len ? ", " : "", json_string_value(e));
	if (foreign.len) {
		rc = KERR(err, TT_EBACKEND, "%s holds more than an icechunk repository (%s); not removing it",
			  root, foreign.ptr);
		goto done;
	}
	/* icechunk has no "delete repository": every key under the prefix,
	 * which holds the repository's layout alone (checked above), or the
	 * whole store - locally the root directory with it */
	size_t pl = strlen(s.prefix);
	char *dir = pl ? tt_strndup(s.prefix, pl - 1) : NULL;
	if (pl && !dir)
		rc = KOOM(err);
	else
		rc = dir ? tt_store_delete_tree(s.st, dir, err) : tt_store_delete_all(s.st, err);
	free(dir);
	if (rc) {
		tt_error_prefix(err, "%s was removed only in part", root);
		tt_error_object(err, NULL, KIND);
	}
done:
	tt_buf_release(&foreign);
	json_decref(names);
	free(owner);
	ic_store_release(&s);
	return rc;
}

/* --- refinements --------------------------------------------------------------- */

static int ic_base_branch(tt_backend *b, const json_t *loc, char **out, tt_error *err)
{
	(void)b;
	return base_branch_of(loc, out, err);
}

static unsigned ic_effective_caps(tt_backend *b, const json_t *loc, const char *file_policy)
{
	unsigned caps = TT_CAP_FINGERPRINT | TT_CAP_ADDRESSABLE | TT_CAP_PIN | TT_CAP_FORK |
			TT_CAP_ATOMIC_REF | TT_CAP_DIFF | TT_CAP_HISTORY | TT_CAP_PROMOTE |
			TT_CAP_CREATE;
	char *uri = NULL, *path = NULL;
	tt_error quiet = TT_ERROR_INIT;
	(void)b;
	(void)file_policy;
	/* On local storage icechunk itself replaces refs without compare-and-
	 * swap; on an object store every ref move is a conditional write from
	 * the head the plan reviewed (If-Match / If-None-Match). */
	if (get_uri(loc, &uri, &quiet) == 0 && tt_store_local_path(uri, &path) == 0 &&
	    (!strncasecmp(uri, "s3://", 5) || !strncasecmp(uri, "s3a://", 6) ||
	     !strncasecmp(uri, "az://", 5) || !strncasecmp(uri, "azure://", 8) ||
	     !strncasecmp(uri, "abfs://", 7) || !strncasecmp(uri, "abfss://", 8)))
		caps |= TT_CAP_CONDITIONAL_REF;
	tt_error_clear(&quiet);
	free(uri);
	free(path);
	return caps;
}

static void ic_free(tt_backend *b)
{
	(void)b;
}

static const tt_backend_ops ic_ops = {
	.abi = TT_BACKEND_ABI,
	.identity = ic_identity,
	.fingerprint = ic_fingerprint,
	.pin = ic_pin,
	.unpin = ic_unpin,
	.list_pins = ic_list_pins,
	.verify = ic_verify,
	.fork = ic_fork,
	.delete_working_ref = ic_delete_working_ref,
	.list_working_refs = ic_list_working_refs,
	.working_ref_blockers = tt_kit_no_blockers,
	.open = ic_open,
	.promote = ic_promote,
	.merge = tt_kit_no_merge,
	.no_merge = "icechunk cannot merge diverged branches (it has no branch rebase or "
		    "cherry-pick; Session.rebase only replays uncommitted writes); re-apply the "
		    "writes on a fresh fork of the base and promote it, or reset the base",
	.ancestor_of = ic_ancestor_of,
	.diff = ic_diff,
	.history = ic_history,
	.create = ic_create,
	.owner = ic_owner,
	.is_ref_empty = ic_is_ref_empty,
	.delete_store = ic_delete_store,
	.effective_capabilities = ic_effective_caps,
	.base_branch = ic_base_branch,
	.storage_options = ic_storage_options,
	.promote_hint = "Icechunk has no merge; re-apply the writes on a fresh fork of the base "
			"branch, or reset the base with repo.reset_branch() if losing its newer "
			"snapshots is intended",
	.free = ic_free,
};

int tt_icechunk_backend_new(tt_backend *b, tt_error *err)
{
	(void)err;
	b->ops = &ic_ops;
	b->impl = NULL;
	return 0;
}
