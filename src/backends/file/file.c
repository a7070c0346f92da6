/*
 * backends/file/file.c - the `file` backend: plain files and directories on
 * local disk (tether-vcs's FileBackend, local half).
 *
 * Observed tier: a local path is fingerprinted and drift is detected, but
 * a recorded state cannot be read back.  States:
 *     file:      {"type": "file", "size": N, "sha256": hex}
 *     directory: {"type": "dir", "count": N, "size": N, "digest": blake2b-16 hex}
 * where the directory digest runs over the sorted (path, token) pairs of
 * every file (token: its sha256) and every symlink not read through (token
 * "symlink:" + sha256 of its target).  A directory state is only a digest,
 * so commit stores a per-file listing (JSON lines, sorted by path) and
 * `diff` compares two listings file by file.  The walk, the hashing engine
 * and the hash cache are in file_hash.c.
 *
 * Locators name the store in `uri` (or `path`).  A local path is resolved
 * as tether-vcs's local_path does; an object-store URL (s3://, gs://,
 * az://, ...) goes through the store layer (storage/), where its scheme is
 * built in: a single object is one HEAD ({"type": "object", "size",
 * "etag"[, "version_id"]}), a prefix (a key ending in '/', or the whole
 * bucket) one paged LIST ({"type": "prefix", "count", "size", "digest"},
 * rows keyed by full object key with the ETag as token, remembered like a
 * directory's for listings and diff).  A paged listing that raced a
 * writer is read again until two readings agree.
 */
#define _GNU_SOURCE
#include "backends/file/file.h"
#include "backends/file/prefix.h"
#include "backends/file/watch.h"
#include "backends/kit.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include <dirent.h>

#include "storage/open.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/mem.h"
#include "util/pool.h"

#define KIND "file"
/* Recent directory listings kept, by digest (tether-vcs keeps 16). */
#define LISTING_CACHE 16

typedef struct listing_slot {
	char digest[33];
	tt_file_tree tree;
	uint64_t used;  /* LRU stamp; 0: empty slot */
} listing_slot;

typedef struct file_impl {
	tt_fhash *hash;
	tt_fwatch *watch;       /* the file watcher, when opted in; NULL otherwise */
	pthread_mutex_t lock;  /* the listing slots */
	listing_slot slots[LISTING_CACHE];
	uint64_t tick;
} file_impl;

/* --- errors ------------------------------------------------------------------------ */


/* --- URIs -------------------------------------------------------------------------- */

/* Schemes an object-store client would take (tether-vcs's _REMOTE_SCHEMES). */
static const char *const remote_schemes[] = {
	"s3", "s3a", "gs", "gcs", "az", "azure", "abfs", "abfss", "adl", "http", "https", NULL,
};

typedef enum uri_class { URI_LOCAL, URI_REMOTE } uri_class;

/* A locator's store, parsed (tether-vcs's _parse). */
typedef struct parsed_uri {
	uri_class cls;
	char *path;        /* URI_LOCAL: the local path */
	char scheme[32];   /* URI_REMOTE: lower-cased */
	char *key;         /* URI_REMOTE: the object key or prefix ("" or "/"-ended: a prefix) */
} parsed_uri;

static void parsed_release(parsed_uri *p)
{
	free(p->path);
	free(p->key);
	p->path = p->key = NULL;
}

/* The locator's `uri`, else its `path` (whichever is truthy first), as
 * text; NULL when neither.  Caller frees. */
static char *loc_uri(const json_t *loc, bool *oom)
{
	static const char *const keys[] = { "uri", "path" };
	*oom = false;
	for (size_t i = 0; i < 2; i++) {
		json_t *v = json_object_get(loc, keys[i]);
		tt_buf b = TT_BUF_INIT;
		bool truthy = v && !json_is_null(v) && !json_is_false(v) &&
			      !(json_is_string(v) && json_string_length(v) == 0) &&
			      !(json_is_integer(v) && json_integer_value(v) == 0) &&
			      !(json_is_real(v) && json_real_value(v) == 0.0) &&
			      !(json_is_object(v) && json_object_size(v) == 0) &&
			      !(json_is_array(v) && json_array_size(v) == 0);
		if (!truthy)
			continue;
		if (tt_pyv_str(&b, v) != 0 || memchr(b.ptr, '\0', b.len)) {
			*oom = b.failed == TT_ENOMEM;
			tt_buf_release(&b);
			return NULL;
		}
		return tt_buf_detach(&b);
	}
	return NULL;
}

static int get_uri(const json_t *loc, char **uri, tt_error *err)
{
	bool oom;
	*uri = loc_uri(loc, &oom);
	if (*uri)
		return 0;
	return oom ? KOOM(err) : KERR(err, TT_EBACKEND, "file locator needs 'uri'");
}

/* The key part of a remote URL: the path after the authority, without
 * query, fragment or ;params, leading slashes stripped. */
static char *remote_key(const char *uri)
{
	const char *p = strchr(uri, ':') + 1, *end;
	if (strncmp(p, "//", 2) == 0) {
		p += 2;
		p += strcspn(p, "/?#");
	}
	end = p + strcspn(p, "?#");
	{
		/* urlparse splits ;params off the last segment. */
		const char *last = p;
		for (const char *q = p; q < end; q++)
			if (*q == '/')
				last = q;
		const char *semi = memchr(last, ';', (size_t)(end - last));
		if (semi)
			end = semi;
	}
	while (p < end && *p == '/')
		p++;
	return tt_strndup(p, (size_t)(end - p));
}

static int parse_uri(const char *uri, parsed_uri *out, tt_error *err)
{
	int local;

	memset(out, 0, sizeof *out);
	local = tt_store_local_path(uri, &out->path);
	if (local < 0)
		return KOOM(err);
	if (local) {
		out->cls = URI_LOCAL;
		return 0;
	}
	if (!tt_store_url_scheme(uri, out->scheme, sizeof out->scheme))
		out->scheme[0] = '\0';
	for (const char *const *s = remote_schemes; *s; s++) {
		if (strcmp(*s, out->scheme) == 0) {
			out->cls = URI_REMOTE;
			if (!(out->key = remote_key(uri)))
				return KOOM(err);
			return 0;
		}
	}
	return KERR(err, TT_EBACKEND, "unsupported file URI scheme: '%s'", out->scheme);
}

/* The seam for object stores: every operation that would talk to one. */
static int remote_unbuilt(const parsed_uri *p, tt_error *err)
{
	return KERR(err, TT_ECAPABILITY,
			"object-store URIs (%s://...) are not built into this tether yet", p->scheme);
}

/* The schemes whose store the store layer builds in. */
static bool remote_built(const char *scheme)
{
	static const char *const built[] = { "s3", "s3a", "gs", "gcs", "az", "azure", "abfs",
					     "abfss", "adl", NULL };
	for (const char *const *b = built; *b; b++)
		if (strcmp(*b, scheme) == 0)
			return true;
	return false;
}

/* --- small JSON helpers ------------------------------------------------------------ */

/* state.get(key) == text */
static bool field_is(const json_t *state, const char *key, const char *text)
{
	json_t *v = json_object_get(state, key);
	return json_is_string(v) && strcmp(json_string_value(v), text) == 0;
}

static bool is_tree_state(const json_t *state)
{
	return field_is(state, "type", "dir") || field_is(state, "type", "prefix");
}

/* Two values equal as Python compares them here (None and absent alike). */
static bool py_equal(const json_t *a, const json_t *b)
{
	if (a && json_is_null(a))
		a = NULL;
	if (b && json_is_null(b))
		b = NULL;
	if (!a || !b)
		return a == b;
	if (json_is_number(a) && json_is_number(b))
		return json_number_value(a) == json_number_value(b) &&
		       (!json_is_integer(a) || !json_is_integer(b) ||
			json_integer_value(a) == json_integer_value(b));
	return json_equal(a, b);
}

/* int(v) for a count or size; false when Python's int() would refuse it. */
static bool py_int(const json_t *v, long long dflt, long long *out)
{
	if (!v) {
		*out = dflt;
		return true;
	}
	if (json_is_integer(v)) {
		*out = json_integer_value(v);
		return true;
	}
	if (json_is_true(v) || json_is_false(v)) {
		*out = json_is_true(v);
		return true;
	}
	if (json_is_real(v)) {
		double d = json_real_value(v);
		if (!(d > -9.2e18 && d < 9.2e18))
			return false;
		*out = (long long)d;
		return true;
	}
	if (json_is_string(v)) {
		const char *s = json_string_value(v);
		char *end;
		while (isspace((unsigned char)*s))
			s++;
		errno = 0;
		*out = strtoll(s, &end, 10);
		if (end == s || errno)
			return false;
		while (isspace((unsigned char)*end))
			end++;
		return *end == '\0';
	}
	return false;
}

/* tether-vcs's _human(n): "+4.0 KiB", "-12 B". */
static void human(char *out, size_t outsz, long long n)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	char sign = n < 0 ? '-' : '+';
	unsigned long long mag = n < 0 ? 0ull - (unsigned long long)n : (unsigned long long)n;
	double value = (double)mag;
	for (size_t u = 0; u < 5; u++) {
		if (value < 1024 || u == 4) {
			if (u == 0)
				snprintf(out, outsz, "%c%.0f %s", sign, value, units[u]);
			else
				snprintf(out, outsz, "%c%.1f %s", sign, value, units[u]);
			return;
		}
		value /= 1024;
	}
}

/* --- listings: the recent ones, by digest ------------------------------------------ */

/* Keep tree (taken over) as the rows of its digest. */
static void remember(file_impl *fi, tt_file_tree *tree)
{
	listing_slot *slot = NULL;
	pthread_mutex_lock(&fi->lock);
	for (size_t i = 0; i < LISTING_CACHE && !slot; i++)
		if (fi->slots[i].used && strcmp(fi->slots[i].digest, tree->digest) == 0)
			slot = &fi->slots[i];
	for (size_t i = 0; i < LISTING_CACHE && !slot; i++)
		if (!fi->slots[i].used)
			slot = &fi->slots[i];
	if (!slot) { /* evict the least recently used */
		slot = &fi->slots[0];
		for (size_t i = 1; i < LISTING_CACHE; i++)
			if (fi->slots[i].used < slot->used)
				slot = &fi->slots[i];
	}
	tt_file_tree_release(&slot->tree);
	slot->tree = *tree;
	memset(tree, 0, sizeof *tree);
	memcpy(slot->digest, slot->tree.digest, sizeof slot->digest);
	slot->used = ++fi->tick;
	pthread_mutex_unlock(&fi->lock);
}

/* The rows of digest as listing text (*text NULL: not remembered). */
static int recall_listing(file_impl *fi, const char *digest, char **text, tt_error *err)
{
	int rc = 0;
	tt_buf b = TT_BUF_INIT;
	*text = NULL;
	pthread_mutex_lock(&fi->lock);
	for (size_t i = 0; i < LISTING_CACHE; i++) {
		listing_slot *s = &fi->slots[i];
		if (!s->used || strcmp(s->digest, digest) != 0)
			continue;
		s->used = ++fi->tick;
		/* json.dumps({"p": path, "k": token, "s": size}, separators=(",", ":")),
		 * ASCII escapes, one line per row in path order. */
		for (size_t r = 0; r < s->tree.n && !b.failed; r++) {
			const tt_file_row *row = &s->tree.rows[r];
			tt_buf_puts(&b, "{\"p\":");
			tt_json_dump_string(&b, row->path, strlen(row->path), true);
			tt_buf_puts(&b, ",\"k\":");
			tt_json_dump_string(&b, row->token, strlen(row->token), true);
			tt_buf_printf(&b, ",\"s\":%llu}\n", (unsigned long long)row->size);
		}
		if (b.failed)
			rc = KOOM(err);
		else
			*text = tt_buf_detach(&b);
		/* an empty directory has an empty listing, not none */
		if (rc == 0 && !*text && !(*text = tt_strdup("")))
			rc = KOOM(err);
		break;
	}
	pthread_mutex_unlock(&fi->lock);
	tt_buf_release(&b);
	return rc;
}

/* --- fingerprints ------------------------------------------------------------------ */

static bool absent_errno(int e)
{
	/* pathlib's "does not exist" errors (Path.exists() answers False). */
	return e == ENOENT || e == ENOTDIR || e == ELOOP || e == EBADF;
}

/* A directory's state from the file watcher: 1 answered, 0 walk (then
 * tt_fwatch_after_walk with *pend), <0 error. */
static int watched_state(file_impl *fi, const char *path, json_t **state, tt_fwatch_pending **pend,
			 tt_error *err)
{
	tt_fwatch_state ws;
	int rc = tt_fwatch_state_of(fi->watch, fi->hash, path, &ws, pend, err);
	if (rc != 1)
		return rc;
	*state = json_pack("{s:s, s:I, s:I, s:s}", "type", "dir", "count", (json_int_t)ws.count,
			   "size", (json_int_t)ws.size, "digest", ws.digest);
	return *state ? 1 : KOOM(err);
}

/* need_rows: the rows themselves are wanted (a listing), not only the
 * state, so the file watcher's answer (a state without rows) will not do. */
static int fingerprint_local(file_impl *fi, const char *path, bool need_rows, json_t **state,
			     tt_error *err)
{
	int rc;
	struct stat st;

	if (stat(path, &st) != 0) {
		if (absent_errno(errno))
			return KERR(err, TT_EBACKEND, "path does not exist: %s", path);
		return tt_file_os_error(err, errno, path);
	}
	if (S_ISDIR(st.st_mode)) {
		tt_file_tree tree;
		tt_fwatch_pending *pend = NULL;
		/* need_rows: the watcher's answer has none; the stored clock and
		 * rows stay as they are */
		if (fi->watch && !need_rows && (rc = watched_state(fi, path, state, &pend, err)) != 0)
			return rc < 0 ? rc : 0;
		if ((rc = tt_fhash_dir(fi->hash, path, &tree, err)) != 0) {
			tt_fwatch_pending_free(pend);
			return rc;
		}
		tt_fwatch_after_walk(fi->watch, pend, &tree);
		*state = json_pack("{s:s, s:I, s:I, s:s}", "type", "dir", "count", (json_int_t)tree.n,
				   "size", (json_int_t)tree.size, "digest", tree.digest);
		remember(fi, &tree);
		tt_file_tree_release(&tree);
	} else {
		char hex[65];
		if ((rc = tt_fhash_file(fi->hash, path, &st, hex, err)) != 0)
			return rc;
		*state = json_pack("{s:s, s:I, s:s}", "type", "file", "size", (json_int_t)st.st_size,
				   "sha256", hex);
	}
	return *state ? 0 : KOOM(err);
}

/*
 * The options a remote object's store is opened with, layered as
 * tether-vcs does: [backends.file] storage_options (committed, under
 * secrets.toml's), then from the object's secrets (its rule over the kind's
 * entry, through tt_backend_secrets_for) only the credentials and
 * endpoint_url; the region once: the secrets', else the locator's, else
 * the committed one.
 */
/* --- prefixes in object stores ------------------------------------------------------ */

/* The rows of a prefix's listing kept in memory for commit's listing and
 * diff when only its state was asked for: past this many, a fingerprint
 * holds no rows (its memory stays bounded at any length) and a listing
 * asked of that state lists the prefix again, keeping them all. */
#define PREFIX_KEEP_MAX ((size_t)1 << 20)

/*
 * A prefix (a key ending in '/', or the whole bucket): {"type": "prefix",
 * "count", "size", "digest"} from one paged LIST, as tether-vcs computes
 * it: rows are the full keys (a "dir/" marker object is "dir"), the token
 * of each its ETag, the digest tether-vcs's over the sorted pairs; the
 * listing is remembered for commit's listing and diff (past
 * PREFIX_KEEP_MAX rows only where need_rows asks for it).
 */
static int fingerprint_prefix(file_impl *fi, tt_store *s, const char *uri, const char *key,
			      bool need_rows, json_t **state, tt_error *err)
{
	tt_buf prefix = TT_BUF_INIT;
	tt_file_tree tree;
	int rc;

	/* the prefix as the libraries take it: whole segments, empty ones dropped */
	for (const char *q = key; *q;) {
		size_t n = strcspn(q, "/");
		if (n) {
			tt_buf_put(&prefix, q, n);
			tt_buf_putc(&prefix, '/');
		}
		q += n;
		while (*q == '/')
			q++;
	}
	tt_buf_puts(&prefix, "");
	if (prefix.failed) {
		tt_buf_release(&prefix);
		return KOOM(err);
	}
	rc = tt_file_prefix_list(s, uri, prefix.ptr, need_rows ? SIZE_MAX : PREFIX_KEEP_MAX, &tree,
				 err);
	tt_buf_release(&prefix);
	if (rc)
		return rc;
	*state = json_pack("{s:s, s:I, s:I, s:s}", "type", "prefix", "count", (json_int_t)tree.n,
			   "size", (json_int_t)tree.size, "digest", tree.digest);
	if (tree.rows) /* else more rows than are kept for a state alone */
		remember(fi, &tree);
	tt_file_tree_release(&tree);
	return *state ? 0 : KOOM(err);
}

/*
 * A single object in S3: {"type": "object", "size", "etag"[, "version_id"]}
 * from one HEAD, as tether-vcs records it (the etag without quotes; a
 * version only where the bucket versions).  The object's credentials and
 * client options come from its secret rules, its `region` from the
 * locator when the rules name none.  A prefix goes to fingerprint_prefix;
 * the schemes the store layer lacks stay behind the seam.
 */
static int fingerprint_remote(tt_backend *b, const json_t *loc, const char *uri,
			      const parsed_uri *p, bool need_rows, json_t **state, tt_error *err)
{
	json_t *opts = NULL;
	tt_store *s = NULL;
	tt_store_meta m = { 0 };
	char *key = NULL;
	size_t kl = strlen(p->key);
	int rc;

	if (!remote_built(p->scheme))
		return remote_unbuilt(p, err);
	if ((rc = tt_kit_storage_options(b, loc, &opts, err)) != 0)
		return rc;
	rc = tt_store_open_uri(uri, opts, &s, &key, err);
	json_decref(opts);
	if (rc == 0 && (kl == 0 || p->key[kl - 1] == '/')) {
		rc = fingerprint_prefix(b->impl, s, uri, key, need_rows, state, err);
		goto done;
	}
	if (rc == 0)
		rc = tt_store_head(s, key, NULL, &m, err);
	if (rc == TT_ENOTFOUND)
		rc = KERR(err, TT_EBACKEND, "object does not exist: %s", key);
	else if (rc != 0)
		tt_error_object(err, NULL, KIND);
	if (rc == 0) {
		*state = json_pack("{s:s, s:I, s:s}", "type", "object", "size", (json_int_t)m.size, "etag",
				   m.etag ? m.etag : "");
		if (*state && m.version &&
		    json_object_set_new(*state, "version_id", json_string(m.version)) < 0) {
			json_decref(*state);
			*state = NULL;
		}
		if (!*state)
			rc = KOOM(err);
	}
done:
	tt_store_meta_release(&m);
	tt_store_close(s);
	free(key);
	return rc;
}

/* need_rows: as fingerprint_local's. */
static int fingerprint_with(tt_backend *b, const json_t *loc, bool need_rows, json_t **state,
			    tt_error *err)
{
	int rc;
	char *uri = NULL;
	parsed_uri p;
	json_t *at = json_object_get(loc, "at");

	memset(&p, 0, sizeof p);
	*state = NULL;
	if (at && !json_is_null(at) && !(json_is_string(at) && json_string_length(at) == 0))
		return KERR(err, TT_EBACKEND,
				"file objects have no history to detach from (`at`); use "
				"`--file versioned` on a versioned bucket instead");
	if ((rc = get_uri(loc, &uri, err)) != 0 || (rc = parse_uri(uri, &p, err)) != 0)
		goto done;
	if (p.cls == URI_LOCAL)
		rc = fingerprint_local(b->impl, p.path, need_rows, state, err);
	else
		rc = fingerprint_remote(b, loc, uri, &p, need_rows, state, err);
done:
	parsed_release(&p);
	free(uri);
	return rc;
}

static int file_fingerprint(tt_backend *b, const json_t *loc, const char *working_ref,
			    json_t **state, tt_error *err)
{
	(void)working_ref; /* no branches: every read is of the store as it is */
	return fingerprint_with(b, loc, false, state, err);
}

static int file_identity(tt_backend *b, const json_t *loc, json_t **out, tt_error *err)
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

/* --- capabilities ------------------------------------------------------------------ */

static unsigned file_effective_caps(tt_backend *b, const json_t *loc, const char *file_policy)
{
	unsigned caps = TT_CAP_FINGERPRINT | TT_CAP_CHEAP_FINGERPRINT | TT_CAP_DIFF;
	tt_error ignored = TT_ERROR_INIT;
	char *uri = NULL;
	parsed_uri p;
	size_t kl;

	(void)b;
	memset(&p, 0, sizeof p);
	if (get_uri(loc, &uri, &ignored) != 0 || parse_uri(uri, &p, &ignored) != 0)
		goto done;
	/* tether makes (and removes) a local directory; not a remote prefix. */
	if (p.cls == URI_LOCAL)
		caps |= TT_CAP_CREATE;
	/* `file = "versioned"` makes a single remote object re-openable through
	 * its version id; a local path or a prefix stays Observed. */
	if (!file_policy || strcmp(file_policy, "versioned") != 0 || p.cls == URI_LOCAL)
		goto done;
	kl = strlen(p.key);
	if (kl > 0 && p.key[kl - 1] != '/')
		caps |= TT_CAP_ADDRESSABLE;
done:
	parsed_release(&p);
	free(uri);
	tt_error_clear(&ignored);
	return caps;
}

static bool file_state_addressable(tt_backend *b, const json_t *loc, const json_t *state)
{
	(void)b;
	(void)loc;
	/* A remote object is re-openable only through its version id. */
	return !(field_is(state, "type", "object") && !tt_pyv_truthy(json_object_get(state, "version_id")));
}

/* --- verify / open ----------------------------------------------------------------- */

static int set_message(char **message, const char *text, tt_error *err)
{
	*message = tt_strdup(text ? text : "");
	return *message ? 0 : KOOM(err);
}

/*
 * verify --deep of a recorded version: a HEAD at that version id /
 * generation.  Gone: missing; answered with another etag than recorded:
 * drifted; the store not answering: unknown, with what it said.
 */
static int verify_version(tt_backend *b, const json_t *loc, const char *uri, const json_t *state,
			  const json_t *version, tt_verify_status *status, char **message,
			  tt_error *err)
{
	json_t *opts = NULL, *want = json_object_get(state, "etag");
	tt_store *s = NULL;
	tt_store_meta m = { 0 };
	tt_error inner = TT_ERROR_INIT;
	tt_buf v = TT_BUF_INIT;
	char *key = NULL;
	int rc;

	if ((rc = tt_kit_storage_options(b, loc, &opts, err)) != 0)
		return rc;
	if (tt_pyv_str(&v, version) != 0) {
		json_decref(opts);
		return KOOM(err);
	}
	rc = tt_store_open_uri(uri, opts, &s, &key, &inner);
	json_decref(opts);
	if (rc == 0) {
		/* a store that keeps no versions cannot be asked for one */
		rc = s->versioned ? tt_store_head(s, key, v.ptr, &m, &inner) : TT_ECAPABILITY;
		if (rc == TT_ECAPABILITY && !tt_error_text(&inner)[0])
			tt_error_set(&inner, rc, "%s keeps no versions", s->display);
	}
	if (rc == TT_ENOTFOUND) {
		*status = TT_VERIFY_MISSING;
		rc = set_message(message, tt_error_text(&inner), err);
	} else if (rc == TT_ENOMEM) {
		tt_error_move(err, &inner);
	} else if (rc) {
		*status = TT_VERIFY_UNKNOWN;
		rc = set_message(message, tt_error_text(&inner), err);
	} else if (json_is_string(want) && json_string_length(want) && m.etag && *m.etag &&
		   strcmp(m.etag, json_string_value(want)) != 0) {
		char *text = tt_asprintf("version %s has etag %s", v.ptr, m.etag);
		*status = TT_VERIFY_DRIFTED;
		rc = text ? 0 : KOOM(err);
		*message = text;
	} else {
		*status = TT_VERIFY_OK;
		rc = set_message(message, "", err);
	}
	tt_store_meta_release(&m);
	tt_store_close(s);
	tt_error_clear(&inner);
	tt_buf_release(&v);
	free(key);
	return rc;
}

static int file_verify(tt_backend *b, const json_t *loc, const json_t *state, const tt_pin *pin,
		       bool deep, tt_verify_status *status, char **message, tt_error *err)
{
	int rc;
	json_t *current = NULL, *version = json_object_get(state, "version_id");
	tt_error inner = TT_ERROR_INIT;

	*status = TT_VERIFY_UNKNOWN;
	*message = NULL;
	if (field_is(state, "type", "object") && !tt_pyv_truthy(version) && !pin) {
		/* Recorded as re-openable but the store gave no version id: the
		 * bucket is not versioned, so only the object as it is now can be
		 * compared. */
		rc = file_fingerprint(b, loc, NULL, &current, &inner);
		if (rc == TT_EBACKEND) {
			*status = TT_VERIFY_MISSING;
			rc = set_message(message, tt_error_text(&inner), err);
		} else if (rc) {
			tt_error_move(err, &inner);
		} else if (json_equal(current, state)) {
			*status = TT_VERIFY_OK;
			rc = set_message(message, "no version id: the bucket is not versioned", err);
		} else {
			*status = TT_VERIFY_MISSING;
			rc = set_message(message,
					 "object changed and no version id was recorded (bucket not "
					 "versioned); the state cannot be read back", err);
		}
		goto done;
	}
	if (tt_pyv_truthy(version)) {
		char *uri = NULL;
		parsed_uri p;
		memset(&p, 0, sizeof p);
		if (!deep) {
			rc = set_message(message, "pass --deep to confirm the version", err);
			goto done;
		}
		if ((rc = get_uri(loc, &uri, err)) == 0 && (rc = parse_uri(uri, &p, err)) == 0) {
			if (p.cls == URI_LOCAL)
				rc = set_message(message, "", err);
			else if (!remote_built(p.scheme))
				rc = remote_unbuilt(&p, err);
			else
				rc = verify_version(b, loc, uri, state, version, status, message, err);
		}
		parsed_release(&p);
		free(uri);
		goto done;
	}
	/* Observed: compare the current fingerprint with the recorded one. */
	rc = file_fingerprint(b, loc, NULL, &current, &inner);
	if (rc == TT_EBACKEND) {
		*status = TT_VERIFY_MISSING;
		rc = set_message(message, tt_error_text(&inner), err);
	} else if (rc) {
		tt_error_move(err, &inner);
	} else if (json_equal(current, state)) {
		*status = TT_VERIFY_OK;
		rc = set_message(message, "", err);
	} else {
		*status = TT_VERIFY_DRIFTED;
		rc = set_message(message, "content changed since commit", err);
	}
done:
	if (rc) {
		free(*message);
		*message = NULL;
	}
	tt_error_clear(&inner);
	json_decref(current);
	return rc;
}

static int file_open(tt_backend *b, const json_t *loc, const tt_target *target, bool read_only,
		     json_t **handle, tt_error *err)
{
	int rc;
	char *uri = NULL, *address = NULL;
	tt_buf version = TT_BUF_INIT;
	bool has_version = false;

	(void)b;
	(void)read_only; /* tether never writes through a file handle */
	*handle = NULL;
	if ((rc = get_uri(loc, &uri, err)) != 0)
		return rc;
	if (target && target->kind == TT_TARGET_STATE && json_is_object(target->state)) {
		json_t *v = json_object_get(target->state, "version_id");
		if (tt_pyv_truthy(v)) {
			has_version = true;
			if (tt_pyv_str(&version, v) != 0) {
				rc = KOOM(err);
				goto done;
			}
		} else if (field_is(target->state, "type", "object")) {
			/* A recorded state with no historical coordinate: refuse
			 * rather than hand back what the object holds now. */
			rc = KERR(err, TT_EBACKEND,
				      "%s: the recorded state has no version id (the bucket is not "
				      "versioned), so it cannot be opened at that state", uri);
			goto done;
		}
	}
	address = has_version ? tt_asprintf("%s#%s", uri, version.ptr) : tt_strdup(uri);
	if (address)
		*handle = json_pack("{s:s, s:s, s:b, s:s, s:o}", "type", KIND, "address", address,
				    "read_only", 1, "uri", uri, "version_id",
				    has_version ? json_string(version.ptr) : json_null());
	rc = *handle ? 0 : KOOM(err);
done:
	tt_buf_release(&version);
	free(address);
	free(uri);
	return rc;
}

/* --- listings and diffs ------------------------------------------------------------ */

static int file_listing(tt_backend *b, const json_t *loc, const json_t *state, char **text,
			tt_error *err)
{
	int rc;
	file_impl *fi = b->impl;
	json_t *current = NULL;
	tt_buf digest = TT_BUF_INIT;

	*text = NULL;
	if (!is_tree_state(state))
		return 0; /* a single file's state already says everything */
	if (json_object_get(state, "digest") && tt_pyv_str(&digest, json_object_get(state, "digest")))
		return KOOM(err);
	if ((rc = recall_listing(fi, digest.ptr, text, err)) != 0 || *text)
		goto done;
	/* Not remembered (another process, evicted, or a state the file
	 * watcher gave without rows): read the store again and use it only if
	 * it still holds exactly the recorded state. */
	if ((rc = fingerprint_with(b, loc, true, &current, err)) != 0)
		goto done;
	if (!field_is(current, "digest", digest.ptr))
		goto done;
	rc = recall_listing(fi, digest.ptr, text, err);
done:
	json_decref(current);
	tt_buf_release(&digest);
	return rc;
}

/* One parsed listing: rows sorted by path, one per path (the last wins, as
 * a dict built line by line keeps it).  Rows read by the fast reader point
 * into the listing's own text (not NUL-terminated: lengths say where they
 * end); the others own their strings. */
typedef struct lrow {
	const char *path, *token;
	size_t plen, klen;
	long long size;
	size_t line;
	bool owned; /* path and token allocated */
} lrow;

typedef struct lrows {
	lrow *rows;
	size_t n, alloc;
} lrows;

static void lrows_release(lrows *l)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->rows[i].owned) {
			free((char *)l->rows[i].path);
			free((char *)l->rows[i].token);
		}
	free(l->rows);
	memset(l, 0, sizeof *l);
}

/* strcmp order of two byte strings (UTF-8 code point order). */
static int bytes_cmp(const char *a, size_t an, const char *b, size_t bn)
{
	int c = memcmp(a, b, an < bn ? an : bn);
	return c ? c : (an > bn) - (an < bn);
}

static int by_path_then_line(const void *pa, const void *pb)
{
	const lrow *a = pa, *b = pb;
	int c = bytes_cmp(a->path, a->plen, b->path, b->plen);
	return c ? c : (a->line < b->line ? -1 : a->line > b->line);
}

/* The first byte in [q, end) that is '"', '\\', a control byte or not
 * ASCII; end when there is none.  Eight bytes at a time while they fit. */
static const char *plain_span(const char *q, const char *end)
{
	const uint64_t ones = 0x0101010101010101u, highs = 0x8080808080808080u;
#ifdef __SSE2__
	/* Sixteen bytes at a time: a byte stops the span when it is '"', '\\',
	 * below 0x20 or from 0x80 up (signed compare: those are negative). */
	const __m128i vquote = _mm_set1_epi8('"'), vslash = _mm_set1_epi8('\\'),
		      vspace = _mm_set1_epi8(0x20);
	while (end - q >= 16) {
		__m128i v = _mm_loadu_si128((const __m128i *)(const void *)q);
		__m128i stop = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, vquote), _mm_cmpeq_epi8(v, vslash)),
					    _mm_cmplt_epi8(v, vspace));
		int mask = _mm_movemask_epi8(stop);
		if (mask)
			return q + __builtin_ctz((unsigned)mask);
		q += 16;
	}
#endif
	while (end - q >= 8) {
		uint64_t w, quote, slash;
		memcpy(&w, q, 8);
		quote = w ^ (ones * '"');
		slash = w ^ (ones * '\\');
		if (((w | ((w - ones * 0x20) & ~w) | ((quote - ones) & ~quote) | ((slash - ones) & ~slash)) &
		     highs) != 0)
			break;
		q += 8;
	}
	while (q < end && *q != '"' && *q != '\\' && (unsigned char)*q >= 0x20 && (unsigned char)*q < 0x80)
		q++;
	return q;
}

/*
 * The shape both implementations write, {"p":"…","k":"…","s":N} with no
 * escapes or non-ASCII bytes in p or k, read at p without building a JSON
 * value (a listing of a large tree has hundreds of thousands of lines).
 * Returns where the next line starts, or NULL for anything else: that line
 * then goes through the full JSON reader.
 */
static const char *fast_row(const char *p, const char *end, lrow *r)
{
	const char *q = p, *ps, *ks, *pe, *ke;
	long long size = 0;
	bool neg = false;

	/* a literal, compared as a whole (the compiler turns a constant-length
	 * memcmp into a few word compares) */
#define TAKE(lit) \
	do { \
		if ((size_t)(end - q) < sizeof lit - 1 || memcmp(q, lit, sizeof lit - 1) != 0) \
			return NULL; \
		q += sizeof lit - 1; \
	} while (0)
	TAKE("{\"p\":\"");
	ps = q;
	pe = q = plain_span(q, end);
	TAKE("\",\"k\":\"");
	ks = q;
	ke = q = plain_span(q, end);
	TAKE("\",\"s\":");
	if (q < end && *q == '-') {
		neg = true;
		q++;
	}
	if (q >= end || *q < '0' || *q > '9' || (*q == '0' && q + 1 < end && q[1] >= '0' && q[1] <= '9'))
		return NULL;
	for (; q < end && *q >= '0' && *q <= '9'; q++) {
		if (size > (LLONG_MAX - (*q - '0')) / 10)
			return NULL;
		size = size * 10 + (*q - '0');
	}
	TAKE("}");
#undef TAKE
	/* the line break: "\r\n" is one, anything else one each */
	if (q < end && *q == '\r')
		q += q + 1 < end && q[1] == '\n' ? 2 : 1;
	else if (q < end && *q == '\n')
		q++;
	else if (q < end)
		return NULL;
	r->path = ps;
	r->plen = (size_t)(pe - ps);
	r->token = ks;
	r->klen = (size_t)(ke - ks);
	r->owned = false;
	r->size = neg ? -size : size;
	return q;
}

/*
 * tether-vcs's _load_listing: every non-blank line is a JSON object with
 * "p", and optionally "k" (default "") and "s" (default 0).  Lines are
 * split at \n and \r (what splitlines() finds in any listing either
 * implementation writes: they are ASCII-escaped JSON).  The text must
 * outlive the rows.
 */
static int load_listing(const char *text, const char *side, lrows *out, tt_error *err)
{
	int rc = 0;
	size_t line = 0;
	const char *p = text, *end = text + strlen(text);
	bool sorted = true;

	memset(out, 0, sizeof *out);
	/* about 100 bytes a row: one allocation for the usual listing */
	if (TT_ARRAY_GROW(out->rows, out->alloc, (size_t)(end - p) / 96 + 1) != 0)
		return KOOM(err);
	while (p < end) {
		const char *after;
		lrow *r;
		if (TT_ARRAY_GROW(out->rows, out->alloc, out->n + 1) != 0) {
			rc = KOOM(err);
			break;
		}
		r = &out->rows[out->n];
		if ((after = fast_row(p, end, r)) != NULL) {
			r->line = ++line;
			if (sorted && out->n &&
			    bytes_cmp(r[-1].path, r[-1].plen, r->path, r->plen) >= 0)
				sorted = false;
			out->n++;
			p = after;
			continue;
		}
		size_t len = strcspn(p, "\r\n");
		const char *next = p + len;
		bool blank = true;
		json_t *row = NULL;
		long long size;

		line++;
		if (*next == '\r' || *next == '\n') {
			/* "\r\n" is one break; anything else is one break each */
			if (next[0] == '\r' && next[1] == '\n')
				next++;
			next++;
		}
		for (size_t i = 0; i < len && blank; i++)
			if (!isspace((unsigned char)p[i]))
				blank = false;
		if (blank) {
			p = next;
			continue;
		}
		row = json_loadb(p, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
		if (!json_is_object(row) || !json_object_get(row, "p") ||
		    !py_int(json_object_get(row, "s"), 0, &size)) {
			json_decref(row);
			rc = KERR(err, TT_EBACKEND, "the stored listing of side %s is malformed at "
				      "line %zu", side, line);
			break;
		}
		{
			json_t *k = json_object_get(row, "k");
			char *path = tt_pyv_str_dup(json_object_get(row, "p"));
			char *token = k ? tt_pyv_str_dup(k) : tt_strdup("");
			json_decref(row);
			if (!path || !token) {
				free(path);
				free(token);
				rc = KOOM(err);
				break;
			}
			r->path = path;
			r->plen = strlen(path);
			r->token = token;
			r->klen = strlen(token);
			r->size = size;
			r->line = line;
			r->owned = true;
			if (sorted && out->n &&
			    bytes_cmp(r[-1].path, r[-1].plen, r->path, r->plen) >= 0)
				sorted = false;
			out->n++;
		}
		p = next;
	}
	if (rc) {
		lrows_release(out);
		return rc;
	}
	/* Sort, then keep the last line of each path (a listing written in
	 * strictly increasing path order, as both implementations write it,
	 * needs neither). */
	if (sorted)
		return 0;
	if (out->n > 1)
		qsort(out->rows, out->n, sizeof *out->rows, by_path_then_line);
	{
		size_t w = 0;
		for (size_t i = 0; i < out->n; i++) {
			if (i + 1 < out->n && bytes_cmp(out->rows[i].path, out->rows[i].plen,
							out->rows[i + 1].path, out->rows[i + 1].plen) == 0) {
				if (out->rows[i].owned) {
					free((char *)out->rows[i].path);
					free((char *)out->rows[i].token);
				}
				continue;
			}
			out->rows[w++] = out->rows[i];
		}
		out->n = w;
	}
	return 0;
}

/* Side b's listing is read on a thread of its own while this one reads
 * side a: each is a pass over megabytes of text. */
typedef struct side_load {
	const char *text;
	lrows rows;
	int rc;
	tt_error err;
} side_load;

static void *load_side(void *arg)
{
	side_load *s = arg;
	s->rc = load_listing(s->text, "b", &s->rows, &s->err);
	return NULL;
}

/* Big listings only: below this a thread costs more than it saves. */
#define PARALLEL_LISTING_BYTES ((size_t)1 << 20)

static int load_both(const char *la, const char *lb, lrows *ra, lrows *rb, tt_error *err)
{
	side_load b = { lb, { 0 }, 0, TT_ERROR_INIT };
	pthread_t t;
	bool threaded = !memchr(lb, '\0', PARALLEL_LISTING_BYTES) &&
			pthread_create(&t, NULL, load_side, &b) == 0;
	int rc;

	if (!threaded)
		load_side(&b);
	rc = load_listing(la, "a", ra, err);
	if (threaded)
		pthread_join(t, NULL);
	if (rc == 0 && b.rc != 0) {
		tt_error_move(err, &b.err);
		rc = b.rc;
	}
	if (rc == 0)
		*rb = b.rows;
	else
		lrows_release(&b.rows);
	tt_error_clear(&b.err);
	return rc;
}

/* One changed path into the diff (the row's path is not NUL-terminated). */
static int diff_row(tt_object_diff *out, tt_buf *scratch, const lrow *r, const char *change,
		    long long delta, tt_error *err)
{
	char detail[64];
	human(detail, sizeof detail, delta);
	tt_buf_reset(scratch);
	if (tt_buf_put(scratch, r->path, r->plen) != 0)
		return KOOM(err);
	return tt_object_diff_add(out, scratch->ptr, change, detail, err);
}

static int diff_listings(const json_t *a, const json_t *bs, const char *la, const char *lb,
			 tt_object_diff *out, tt_error *err)
{
	int rc = 0;
	lrows ra, rb;
	char detail[64];
	tt_buf scratch = TT_BUF_INIT;

	memset(&ra, 0, sizeof ra);
	memset(&rb, 0, sizeof rb);
	if (py_equal(json_object_get(a, "digest"), json_object_get(bs, "digest")))
		return 0;
	if (!la || !lb) {
		long long ca, cb, sa, sb;
		char *summary;
		out->note = tt_asprintf("no stored listing for side %s",
					!la && !lb ? "a and b" : !la ? "a" : "b");
		if (!out->note)
			return KOOM(err);
		if (!py_int(json_object_get(a, "count"), 0, &ca) ||
		    !py_int(json_object_get(bs, "count"), 0, &cb) ||
		    !py_int(json_object_get(a, "size"), 0, &sa) ||
		    !py_int(json_object_get(bs, "size"), 0, &sb))
			return KERR(err, TT_EBACKEND, "a recorded state has a count or size that "
					"is not a number");
		human(detail, sizeof detail, sb - sa);
		if (!(summary = tt_asprintf("%lld -> %lld files, %s", ca, cb, detail)))
			return KOOM(err);
		rc = tt_object_diff_add(out, "(summary)", "modified", summary, err);
		free(summary);
		return rc;
	}
	if ((rc = load_both(la, lb, &ra, &rb, err)) != 0)
		goto done;
	/* Both sorted by path: one merge walk. */
	for (size_t i = 0, j = 0; rc == 0 && (i < ra.n || j < rb.n);) {
		if (i >= ra.n || (j < rb.n && bytes_cmp(ra.rows[i].path, ra.rows[i].plen, rb.rows[j].path,
							 rb.rows[j].plen) > 0)) {
			rc = diff_row(out, &scratch, &rb.rows[j], "added", rb.rows[j].size, err);
			j++;
		} else if (j >= rb.n || bytes_cmp(ra.rows[i].path, ra.rows[i].plen, rb.rows[j].path,
						  rb.rows[j].plen) < 0) {
			rc = diff_row(out, &scratch, &ra.rows[i], "removed", -ra.rows[i].size, err);
			i++;
		} else {
			const lrow *x = &ra.rows[i], *y = &rb.rows[j];
			if (x->size != y->size || x->klen != y->klen ||
			    memcmp(x->token, y->token, x->klen) != 0)
				rc = diff_row(out, &scratch, x, "modified", y->size - x->size, err);
			i++;
			j++;
		}
	}
done:
	tt_buf_release(&scratch);
	lrows_release(&ra);
	lrows_release(&rb);
	return rc;
}

/* Two single-object states: what changed among size, etag, sha256 and version. */
static int diff_objects(const json_t *loc, const json_t *a, const json_t *bs, tt_object_diff *out,
			tt_error *err)
{
	static const struct {
		const char *field, *label;
	} fields[] = { { "size", "size" }, { "etag", "etag" }, { "sha256", "sha256" },
		       { "version_id", "version" } };
	int rc;
	char *uri = NULL;
	tt_buf details = TT_BUF_INIT;

	if (json_equal(a, bs))
		return 0;
	if ((rc = get_uri(loc, &uri, err)) != 0)
		return rc;
	for (size_t f = 0; f < sizeof fields / sizeof fields[0]; f++) {
		json_t *va = json_object_get(a, fields[f].field), *vb = json_object_get(bs, fields[f].field);
		if (va && json_is_null(va))
			va = NULL;
		if (vb && json_is_null(vb))
			vb = NULL;
		if (py_equal(va, vb))
			continue;
		if (details.len)
			tt_buf_puts(&details, ", ");
		tt_buf_printf(&details, "%s ", fields[f].label);
		long long ia, ib;
		if (strcmp(fields[f].field, "size") == 0 && va && vb && py_int(va, 0, &ia) &&
		    py_int(vb, 0, &ib)) {
			char h[64];
			human(h, sizeof h, ib - ia);
			tt_buf_puts(&details, h);
		} else if (strcmp(fields[f].field, "sha256") == 0) {
			/* str(v)[:12] each side, cut at 12 code points */
			for (int side = 0; side < 2; side++) {
				tt_buf s = TT_BUF_INIT;
				size_t cut = 0, chars = 0;
				tt_pyv_str(&s, side ? vb : va);
				while (cut < s.len && chars < 12) {
					cut++;
					while (cut < s.len && ((unsigned char)s.ptr[cut] & 0xC0) == 0x80)
						cut++;
					chars++;
				}
				if (s.failed)
					details.failed = s.failed;
				tt_buf_put(&details, s.ptr, cut);
				if (!side)
					tt_buf_puts(&details, " -> ");
				tt_buf_release(&s);
			}
		} else {
			tt_pyv_str(&details, va);
			tt_buf_puts(&details, " -> ");
			tt_pyv_str(&details, vb);
		}
	}
	rc = details.failed ? KOOM(err) : tt_object_diff_add(out, uri, "modified", details.ptr, err);
	tt_buf_release(&details);
	free(uri);
	return rc;
}

static int file_diff(tt_backend *b, const json_t *loc, const json_t *a, const json_t *bstate,
		     const char *la, const char *lb, tt_object_diff *out, tt_error *err)
{
	int rc;
	(void)b;
	if (is_tree_state(a) || is_tree_state(bstate)) {
		tt_object_diff_init(out, "files");
		rc = diff_listings(a, bstate, la, lb, out, err);
	} else {
		tt_object_diff_init(out, "objects");
		rc = diff_objects(loc, a, bstate, out, err);
	}
	if (rc)
		tt_object_diff_release(out);
	return rc;
}

/* Pins and forks: none (the kit's stubs, see the ops table). */

/* --- store lifecycle (CREATE, local directories) ----------------------------------- */

/* The local directory a lifecycle operation acts on; a remote prefix is
 * managed by its bucket, never by tether. */
static int local_dir(const json_t *loc, const char *what, char **path, tt_error *err)
{
	int rc;
	char *uri = NULL;
	parsed_uri p;

	*path = NULL;
	memset(&p, 0, sizeof p);
	if ((rc = get_uri(loc, &uri, err)) != 0 || (rc = parse_uri(uri, &p, err)) != 0)
		goto done;
	if (p.cls != URI_LOCAL) {
		rc = KERR(err, TT_EBACKEND,
			      "file %s: only a local directory can be created or removed by tether; "
			      "a remote prefix is managed by its bucket", what);
		goto done;
	}
	*path = p.path;
	p.path = NULL;
done:
	parsed_release(&p);
	free(uri);
	return rc;
}

static char *marker_path(const char *dir)
{
	return tt_path_join(dir, TT_FILE_OWNER_MARKER);
}

static int file_create(tt_backend *b, const json_t *loc, const char *owner, json_t **state,
		       tt_error *err)
{
	int rc;
	char *path = NULL, *parent = NULL, *marker = NULL, *text = NULL;
	struct stat st;

	*state = NULL;
	if ((rc = local_dir(loc, "create", &path, err)) != 0)
		goto done;
	/* Never adopt: anything there (a dangling symlink aside, which mkdir
	 * refuses below) is someone else's. */
	if (stat(path, &st) == 0) {
		rc = KERR(err, TT_EBACKEND, "%s already exists; `create` never adopts it", path);
		goto done;
	}
	if (!(parent = tt_dirname(path)) || !(marker = marker_path(path)) ||
	    !(text = tt_asprintf("%s\n", owner ? owner : ""))) {
		rc = KOOM(err);
		goto done;
	}
	if ((rc = tt_mkdirs(parent, 0777, err)) != 0) {
		tt_error_object(err, NULL, KIND);
		goto done;
	}
	/* The directory itself exclusively: of two racing creators one wins. */
	if (mkdir(path, 0777) != 0) {
		if (errno == EEXIST)
			rc = KERR(err, TT_EBACKEND, "%s already exists; `create` never adopts it",
				      path);
		else
			rc = tt_file_os_error(err, errno, path);
		goto done;
	}
	if ((rc = tt_write_file_exclusive(marker, text, strlen(text), 0666, err)) != 0) {
		tt_error_object(err, NULL, KIND);
		(void)rmdir(path);
		goto done;
	}
	/* The state this create made is the empty directory's: a fingerprint of
	 * anything more is another writer's, not this create's. */
	if ((rc = file_fingerprint(b, loc, NULL, state, err)) == 0 &&
	    json_integer_value(json_object_get(*state, "count")) != 0) {
		json_decref(*state);
		*state = NULL;
		rc = KERR(err, TT_EBACKEND, "%s gained files while it was being created; another writer uses it",
			      path);
	}
done:
	free(path);
	free(parent);
	free(marker);
	free(text);
	return rc;
}

/* The marker's text (*text NULL: no marker file).  Python's read_text:
 * UTF-8 or an error. */
static int read_marker(const char *dir, char **text, tt_error *err)
{
	int rc = 0;
	char *marker = marker_path(dir);
	struct stat st;
	tt_buf b = TT_BUF_INIT;

	*text = NULL;
	if (!marker)
		return KOOM(err);
	if (stat(marker, &st) != 0) {
		if (!absent_errno(errno))
			rc = tt_file_os_error(err, errno, marker);
		goto done;
	}
	if (!S_ISREG(st.st_mode))
		goto done;
	if ((rc = tt_read_file(marker, &b, 1 << 20, err)) != 0) {
		tt_error_object(err, NULL, KIND);
		goto done;
	}
	if (memchr(b.ptr, '\0', b.len) || !tt_utf8_valid(b.ptr, b.len)) {
		rc = KERR(err, TT_EBACKEND, "%s is not UTF-8 text", marker);
		goto done;
	}
	*text = tt_buf_detach(&b);
	if (!*text && !(*text = tt_strdup("")))
		rc = KOOM(err);
done:
	tt_buf_release(&b);
	free(marker);
	return rc;
}

static int file_owner(tt_backend *b, const json_t *loc, char **owner, tt_error *err)
{
	int rc;
	char *path = NULL, *text = NULL;
	size_t start = 0, end;

	(void)b;
	*owner = NULL;
	if ((rc = local_dir(loc, "owner", &path, err)) != 0 || (rc = read_marker(path, &text, err)) != 0)
		goto done;
	if (!text)
		goto done;
	/* .strip(): ASCII whitespace and the C0 separators Python also strips. */
	end = strlen(text);
	while (start < end && (isspace((unsigned char)text[start]) ||
			       ((unsigned char)text[start] >= 0x1c && (unsigned char)text[start] <= 0x1f)))
		start++;
	while (end > start && (isspace((unsigned char)text[end - 1]) ||
			       ((unsigned char)text[end - 1] >= 0x1c && (unsigned char)text[end - 1] <= 0x1f)))
		end--;
	if (end > start && !(*owner = tt_strndup(text + start, end - start)))
		rc = KOOM(err);
done:
	free(path);
	free(text);
	return rc;
}

/* 1: only the marker (or nothing) in dir; 0: something else; -1: no directory. */
static int dir_only_marker(const char *dir, int *answer, tt_error *err)
{
	struct stat st;
	DIR *d;
	struct dirent *de;

	*answer = -1;
	/* Path.is_dir(): False when absent, an error when it cannot tell. */
	if (stat(dir, &st) != 0)
		return absent_errno(errno) ? 0 : tt_file_os_error(err, errno, dir);
	if (!S_ISDIR(st.st_mode))
		return 0;
	if (!(d = opendir(dir)))
		return tt_file_os_error(err, errno, dir);
	*answer = 1;
	for (;;) {
		errno = 0;
		if (!(de = readdir(d))) {
			if (errno) {
				int e = errno;
				closedir(d);
				*answer = -1;
				return tt_file_os_error(err, e, dir);
			}
			break;
		}
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (strcmp(de->d_name, TT_FILE_OWNER_MARKER) != 0) {
			*answer = 0;
			break;
		}
	}
	closedir(d);
	return 0;
}

static int file_is_ref_empty(tt_backend *b, const json_t *loc, const json_t *ignoring, int *answer,
			     tt_error *err)
{
	int rc;
	char *path = NULL;

	(void)b;
	(void)ignoring; /* no refs to ignore: a directory is empty when only the marker is left */
	*answer = -1;
	if ((rc = local_dir(loc, "is_ref_empty", &path, err)) == 0)
		rc = dir_only_marker(path, answer, err);
	free(path);
	return rc;
}

static int file_delete_store(tt_backend *b, const json_t *loc, tt_error *err)
{
	int rc, empty;
	char *path = NULL, *owner = NULL, *marker = NULL;

	(void)b;
	if ((rc = local_dir(loc, "delete_store", &path, err)) != 0)
		goto done;
	/* Re-checked here whatever the caller saw: nothing but the marker... */
	if ((rc = dir_only_marker(path, &empty, err)) != 0)
		goto done;
	if (empty != 1) {
		rc = KERR(err, TT_EBACKEND, "%s is not empty; not removing it", path);
		goto done;
	}
	/* ...and the marker itself: a directory tether did not make is never
	 * removed, empty or not. */
	if ((rc = read_marker(path, &owner, err)) != 0)
		goto done;
	if (!owner) {
		rc = KERR(err, TT_EBACKEND,
			      "%s has no " TT_FILE_OWNER_MARKER " marker: tether did not create it; "
			      "not removing it", path);
		goto done;
	}
	if (!(marker = marker_path(path))) {
		rc = KOOM(err);
		goto done;
	}
	if (unlink(marker) != 0 && errno != ENOENT) {
		rc = tt_file_os_error(err, errno, marker);
		goto done;
	}
	if (rmdir(path) != 0) {
		int e = errno;
		/* Something appeared in between: put the marker back, so the store
		 * stays ours to reclaim later rather than an unowned leftover. */
		tt_error ignored = TT_ERROR_INIT;
		(void)tt_write_file_atomic(marker, owner, strlen(owner), 0666, &ignored);
		tt_error_clear(&ignored);
		rc = tt_file_os_error(err, e, path);
	}
done:
	free(path);
	free(owner);
	free(marker);
	return rc;
}

/* --- the backend ------------------------------------------------------------------- */

static void file_free(tt_backend *b)
{
	file_impl *fi = b->impl;
	if (!fi)
		return;
	for (size_t i = 0; i < LISTING_CACHE; i++)
		tt_file_tree_release(&fi->slots[i].tree);
	tt_fhash_free(fi->hash);
	tt_fwatch_free(fi->watch);
	pthread_mutex_destroy(&fi->lock);
	free(fi);
	b->impl = NULL;
}

/* The hashing engine's progress (the progress op). */
static void file_progress(tt_backend *b, tt_backend_work_fn fn, void *ctx)
{
	file_impl *fi = b->impl;
	if (fi)
		tt_fhash_set_progress(fi->hash, fn, ctx);
}

static const tt_backend_ops file_ops = {
	.abi = TT_BACKEND_ABI,
	.no_pin = "file backend cannot pin",
	.no_fork = "file backend cannot fork",
	.identity = file_identity,
	.fingerprint = file_fingerprint,
	.pin = tt_kit_no_pin,
	.unpin = tt_kit_no_unpin,
	.list_pins = tt_kit_no_pins,
	.verify = file_verify,
	.fork = tt_kit_no_fork,
	.delete_working_ref = tt_kit_no_working_ref,
	.open = file_open,
	.listing = file_listing,
	.diff = file_diff,
	.create = file_create,
	.owner = file_owner,
	.is_ref_empty = file_is_ref_empty,
	.delete_store = file_delete_store,
	.effective_capabilities = file_effective_caps,
	.state_addressable = file_state_addressable,
	.storage_options = tt_kit_storage_options,
	.progress = file_progress,
	.free = file_free,
};

/*
 * The file watcher is opted into per checkout, never by a committed file:
 * TETHER_FSMONITOR, else `[file] fsmonitor` of .tether/secrets.toml (which
 * the engine hands over as the config's "fsmonitor").  "watchman" turns it
 * on; "" / "none" / "off" leave it off.  *on: the answer.
 */
static int fsmonitor_wanted(const tt_backend *b, bool *on, tt_error *err)
{
	const char *env = getenv("TETHER_FSMONITOR");
	const char *v = env;
	const char *where = "the environment variable TETHER_FSMONITOR";
	json_t *cfg = b->config ? json_object_get(b->config, "fsmonitor") : NULL;
	*on = false;
	if (!v && cfg) {
		where = "`[file] fsmonitor` in .tether/secrets.toml";
		if (!json_is_string(cfg))
			return KERR(err, TT_ECONFIG, "%s must be \"watchman\" or \"none\"", where);
		v = json_string_value(cfg);
	}
	if (!v || !*v || strcmp(v, "none") == 0 || strcmp(v, "off") == 0)
		return 0;
	if (strcmp(v, "watchman") != 0)
		return KERR(err, TT_ECONFIG,
				"%s is \"%s\": the only file watcher tether asks is \"watchman\" "
				"(or \"none\" to walk every directory)", where, v);
	*on = true;
	return 0;
}

int tt_file_backend_new(tt_backend *b, tt_error *err)
{
	int rc;
	char *cache = NULL;
	bool watch = false;
	file_impl *fi;

	if ((rc = fsmonitor_wanted(b, &watch, err)) != 0)
		return rc;
	if (!(fi = tt_calloc(1, sizeof *fi)))
		return KOOM(err);
	if (pthread_mutex_init(&fi->lock, NULL) != 0) {
		free(fi);
		return KERR(err, TT_ERROR, "cannot create a mutex");
	}

	/* Without a checkout's cache directory the cache lives in memory only. */
	if (b->cache_dir && !(cache = tt_path_join(b->cache_dir, TT_FILE_HASH_CACHE))) {
		rc = KOOM(err);
		goto fail;
	}
	if ((rc = tt_fhash_new(&fi->hash, cache, err)) != 0)
		goto fail;
	if (watch && (rc = tt_fwatch_new(&fi->watch, b->cache_dir, err)) != 0)
		goto fail;
	free(cache);
	b->ops = &file_ops;
	b->impl = fi;
	return 0;
fail:
	free(cache);
	tt_fhash_free(fi->hash);
	pthread_mutex_destroy(&fi->lock);
	free(fi);
	return rc;
}

/* --- hooks ------------------------------------------------------------------------- */

static file_impl *impl_of(tt_backend *b)
{
	return b && b->ops == &file_ops ? b->impl : NULL;
}

void tt_file_backend_set_threads(tt_backend *b, unsigned threads)
{
	file_impl *fi = impl_of(b);
	if (fi)
		tt_fhash_set_threads(fi->hash, threads);
}

void tt_file_backend_set_clock(tt_backend *b, int64_t (*now_ns)(void))
{
	file_impl *fi = impl_of(b);
	if (fi)
		tt_fhash_set_clock(fi->hash, now_ns);
}

void tt_file_backend_stats(tt_backend *b, tt_file_stats *out)
{
	file_impl *fi = impl_of(b);
	memset(out, 0, sizeof *out);
	if (fi)
		tt_fhash_stats(fi->hash, out);
}
