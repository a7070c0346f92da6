/*
 * storage/store.c - what every store shares: URI parsing, key checks, the
 * vtable calls (key validation and out-parameter resets in one place),
 * what is derived from a store's primitives (the three kinds of write,
 * paging, names, deleting a tree), and the release functions.
 */
#include "storage/store.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "util/fs.h"
#include "util/mem.h"

/* ---- URIs ---------------------------------------------------------------------- */

/*
 * The scheme urllib.parse.urlsplit finds in s (lower-cased into out), or
 * false: leading C0 controls and spaces are stripped and tabs/newlines
 * dropped as urlsplit does, then the text before the first ':' is a scheme
 * when it starts with an ASCII letter and holds only letters, digits, '+',
 * '-' and '.'.
 */
bool tt_store_url_scheme(const char *s, char *out, size_t outsz)
{
	size_t n = 0;
	while (*s && (unsigned char)*s <= 0x20)
		s++;
	if (!isascii((unsigned char)*s) || !isalpha((unsigned char)*s))
		return false;
	for (const char *p = s; *p; p++) {
		unsigned char c = (unsigned char)*p;
		if (c == '\t' || c == '\n' || c == '\r')
			continue;
		if (c == ':') {
			if (outsz)
				out[n < outsz ? n : outsz - 1] = '\0';
			return n > 0;
		}
		if (!isascii(c) || (!isalnum(c) && c != '+' && c != '-' && c != '.'))
			return false;
		if (n + 1 < outsz)
			out[n] = (char)tolower(c);
		n++;
	}
	return false;
}

int tt_store_local_path(const char *uri, char **out)
{
	char scheme[32];
	const char *p = uri;

	*out = NULL;
	if (strncmp(uri, "file:", 5) == 0) {
		const char *rest = uri + 5;
		if (strncmp(rest, "//", 2) == 0) {
			/* file://HOST/path: only an empty host or localhost is here. */
			const char *host = rest + 2, *slash = strchr(host, '/');
			size_t hl = slash ? (size_t)(slash - host) : 0;
			if (!slash || !(hl == 0 || (hl == 9 && strncmp(host, "localhost", 9) == 0)))
				return 0;
			rest = slash;
		}
		if (!*rest)
			return 0;
		p = rest;
	} else if (uri[0] != '/' && tt_store_url_scheme(uri, scheme, sizeof scheme)) {
		return 0;
	}
	if (p[0] != '/') {
		/* Relative (only a hand-written manifest has one): lexical only. */
		*out = *p ? tt_path_normalize(p) : tt_strdup(p);
	} else {
		*out = tt_realpath(p);
	}
	return *out ? 1 : TT_ENOMEM;
}


static const struct {
	const char *name;
	tt_store_scheme kind;
} schemes[] = {
	{ "s3", TT_STORE_S3 },       { "s3a", TT_STORE_S3 },      { "gs", TT_STORE_GCS },
	{ "gcs", TT_STORE_GCS },     { "az", TT_STORE_AZURE },    { "azure", TT_STORE_AZURE },
	{ "abfs", TT_STORE_AZURE },  { "abfss", TT_STORE_AZURE }, { "adl", TT_STORE_AZURE },
	{ "http", TT_STORE_HTTP },   { "https", TT_STORE_HTTP },
};

const char *tt_store_scheme_name(tt_store_scheme k)
{
	switch (k) {
	case TT_STORE_LOCAL: return "local";
	case TT_STORE_S3: return "s3";
	case TT_STORE_GCS: return "gcs";
	case TT_STORE_AZURE: return "azure";
	case TT_STORE_HTTP: return "http";
	}
	return "?";
}

void tt_store_uri_release(tt_store_uri *u)
{
	if (!u)
		return;
	free(u->path);
	free(u->bucket);
	free(u->account);
	free(u->key);
	memset(u, 0, sizeof *u);
}

/* The path after the authority without query, fragment or ;params (of the
 * last segment, as urlparse splits them), leading slashes stripped. */
static char *uri_key(const char *p)
{
	const char *end = p + strcspn(p, "?#"), *last = p, *semi;
	for (const char *q = p; q < end; q++)
		if (*q == '/')
			last = q;
	semi = memchr(last, ';', (size_t)(end - last));
	if (semi)
		end = semi;
	while (p < end && *p == '/')
		p++;
	return tt_strndup(p, (size_t)(end - p));
}

int tt_store_uri_parse(const char *uri, tt_store_uri *out, tt_error *err)
{
	char scheme[16];
	size_t n = 0;
	const char *p, *auth, *auth_end, *at;
	int local;

	memset(out, 0, sizeof *out);
	if (!uri || !*uri)
		return tt_error_set(err, TT_ECONFIG, "empty store URI; give a path or s3://bucket/...");
	local = tt_store_local_path(uri, &out->path);
	if (local < 0)
		return tt_error_oom(err);
	if (local) {
		out->kind = TT_STORE_LOCAL;
		strcpy(out->scheme, "file");
		return 0;
	}
	for (p = uri; *p && *p != ':' && n + 1 < sizeof scheme; p++)
		scheme[n++] = (char)tolower((unsigned char)*p);
	scheme[n] = '\0';
	for (size_t i = 0; i < sizeof schemes / sizeof schemes[0]; i++) {
		if (*p != ':' || strcmp(scheme, schemes[i].name) != 0)
			continue;
		out->kind = schemes[i].kind;
		memcpy(out->scheme, scheme, n + 1);
	}
	if (!out->kind)
		return tt_error_set(err, TT_ECONFIG,
				    "unsupported store URI scheme '%.*s': use a local path, file://, "
				    "s3://, gs://, az:// or abfs://", (int)n, scheme);
	if (strncmp(p, "://", 3) != 0)
		return tt_error_set(err, TT_ECONFIG, "%s: URI needs '//' and a bucket (%s://bucket/key)",
				    out->scheme, out->scheme);
	auth = p + 3;
	auth_end = auth + strcspn(auth, "/?#");
	at = memchr(auth, '@', (size_t)(auth_end - auth));
	if (at && (out->kind != TT_STORE_AZURE || memchr(auth, ':', (size_t)(at - auth)))) {
		tt_store_uri_release(out);
		return tt_error_set(err, TT_ECONFIG,
				    "%s:// URI carries credentials in its authority; remove them and put "
				    "them in .tether/secrets.toml", scheme);
	}
	if (at) {
		/* abfs://container@account.dfs.core.windows.net/path */
		const char *dot = memchr(at + 1, '.', (size_t)(auth_end - at - 1));
		const char *acc_end = dot ? dot : auth_end;
		out->bucket = tt_strndup(auth, (size_t)(at - auth));
		out->account = tt_strndup(at + 1, (size_t)(acc_end - at - 1));
		if (out->account && !*out->account) {
			tt_store_uri_release(out);
			return tt_error_set(err, TT_ECONFIG, "%s:// URI names an empty account", scheme);
		}
	} else {
		out->bucket = tt_strndup(auth, (size_t)(auth_end - auth));
	}
	out->key = uri_key(auth_end);
	if (!out->bucket || !out->key || (at && !out->account)) {
		tt_store_uri_release(out);
		return tt_error_oom(err);
	}
	if (!*out->bucket) {
		tt_store_uri_release(out);
		return tt_error_set(err, TT_ECONFIG, "%s:// URI names no %s; write %s://<%s>/<key>",
				    scheme, strcmp(scheme, "http") && strcmp(scheme, "https") ? "bucket" : "host",
				    scheme, out->kind == TT_STORE_AZURE ? "container" : "bucket");
	}
	return 0;
}

/* ---- keys ---------------------------------------------------------------------- */

int tt_store_key_check(const char *key, tt_error *err)
{
	const char *seg;
	if (!key || !*key)
		return tt_error_set(err, TT_EUSAGE, "empty store key");
	if (key[0] == '/' || key[strlen(key) - 1] == '/')
		return tt_error_set(err, TT_EUSAGE, "store key '%s' starts or ends with '/'", key);
	for (seg = key;;) {
		size_t len = strcspn(seg, "/");
		if (len == 0)
			return tt_error_set(err, TT_EUSAGE, "store key '%s' has an empty segment", key);
		if ((len == 1 && seg[0] == '.') || (len == 2 && seg[0] == '.' && seg[1] == '.'))
			return tt_error_set(err, TT_EUSAGE, "store key '%s' has a '.' or '..' segment", key);
		if (!seg[len])
			break;
		seg += len + 1;
	}
	return 0;
}

/* ---- releases ------------------------------------------------------------------ */

void tt_store_meta_release(tt_store_meta *m)
{
	if (!m)
		return;
	free(m->etag);
	free(m->version);
	memset(m, 0, sizeof *m);
}

void tt_store_page_release(tt_store_page *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n; i++) {
		if (!p->keys)
			free(p->items[i].key);
		tt_store_meta_release(&p->items[i].meta);
	}
	free(p->items);
	free(p->next);
	free(p->keys);
	memset(p, 0, sizeof *p);
}

/* ---- calls --------------------------------------------------------------------- */

static int pre(tt_store *s, const char *key, const char *version, tt_error *err)
{
	int rc = tt_store_key_check(key, err);
	if (rc)
		return tt_error_prefix(err, "%s", s->display);
	if (version && !s->versioned)
		return tt_error_set(err, TT_ECAPABILITY,
				    "%s: this store keeps no versions, so '%s' cannot be read at a version",
				    s->display, key);
	return 0;
}

int tt_store_get(tt_store *s, const char *key, const char *version, tt_buf *out,
		 tt_store_meta *meta, tt_error *err)
{
	int rc;
	if (meta)
		memset(meta, 0, sizeof *meta);
	if ((rc = pre(s, key, version, err)))
		return rc;
	return s->ops->get(s, key, version, out, meta, err);
}

int tt_store_get_range(tt_store *s, const char *key, const char *version, uint64_t off,
		       uint64_t len, tt_buf *out, tt_error *err)
{
	int rc;
	if ((rc = pre(s, key, version, err)))
		return rc;
	return s->ops->get_range(s, key, version, off, len, out, err);
}

int tt_store_head(tt_store *s, const char *key, const char *version, tt_store_meta *out,
		  tt_error *err)
{
	int rc;
	memset(out, 0, sizeof *out);
	if ((rc = pre(s, key, version, err)))
		return rc;
	return s->ops->head(s, key, version, out, err);
}

int tt_store_list(tt_store *s, const char *prefix, const char *token, size_t max_keys,
		  tt_store_page *out, tt_error *err)
{
	memset(out, 0, sizeof *out);
	return s->ops->list(s, prefix ? prefix : "", token, max_keys ? max_keys : 1000, out, err);
}

int tt_store_list_keys(tt_store *s, const char *prefix, const char *token, size_t max_keys,
		       tt_store_page *out, tt_error *err)
{
	memset(out, 0, sizeof *out);
	return (s->ops->list_keys ? s->ops->list_keys : s->ops->list)(s, prefix ? prefix : "", token,
								     max_keys ? max_keys : 1000, out, err);
}

int tt_store_list_after(tt_store *s, const char *prefix, const char *after, size_t max_keys,
			tt_store_page *out, tt_error *err)
{
	memset(out, 0, sizeof *out);
	if (!s->ops->list_after)
		return tt_error_set(err, TT_ECAPABILITY, "%s: this store cannot list after a key",
				    s->display);
	return s->ops->list_after(s, prefix ? prefix : "", after, max_keys ? max_keys : 1000, out, err);
}

bool tt_store_lists_after(const tt_store *s)
{
	return s->ops->list_after != NULL;
}

int tt_store_each_key(tt_store *s, const char *prefix, tt_store_key_fn fn, void *ctx, tt_error *err)
{
	char *token = NULL;
	int rc;
	do {
		tt_store_page page;
		rc = tt_store_list_keys(s, prefix, token, 0, &page, err);
		free(token);
		token = NULL;
		for (size_t i = 0; rc == 0 && i < page.n; i++)
			rc = fn(page.items[i].key, ctx, err);
		if (rc == 0 && page.next && !(token = tt_strdup(page.next)))
			rc = tt_error_oom(err);
		tt_store_page_release(&page);
	} while (rc == 0 && token);
	free(token);
	return rc;
}

typedef struct names_cut {
	tt_store_page *out;
	size_t alloc, plen;
} names_cut;

static int cut_name(const char *key, void *ctx, tt_error *err)
{
	names_cut *c = ctx;
	tt_store_page *out = c->out;
	const char *name = key + c->plen, *slash = strchr(name, '/');
	size_t n = slash ? (size_t)(slash - name) : strlen(name);
	const char *prev = out->n ? out->items[out->n - 1].key : NULL;
	/* the keys under one name are adjacent in a sorted listing */
	if (!n || (prev && strlen(prev) == n && memcmp(prev, name, n) == 0))
		return 0;
	if (TT_ARRAY_GROW(out->items, c->alloc, out->n + 1) != 0)
		return tt_error_oom(err);
	memset(&out->items[out->n], 0, sizeof out->items[out->n]);
	if (!(out->items[out->n].key = tt_strndup(name, n)))
		return tt_error_oom(err);
	out->n++;
	return 0;
}

/* The names under dir cut from a listing of every key below it. */
static int names_by_listing(tt_store *s, const char *dir, tt_store_page *out, tt_error *err)
{
	char *prefix = *dir ? tt_asprintf("%s/", dir) : tt_strdup("");
	names_cut c = { out, 0, prefix ? strlen(prefix) : 0 };
	int rc;
	if (!prefix)
		return tt_error_oom(err);
	rc = tt_store_each_key(s, prefix, cut_name, &c, err);
	free(prefix);
	if (rc)
		tt_store_page_release(out);
	return rc;
}

int tt_store_list_names(tt_store *s, const char *dir, tt_store_page *out, tt_error *err)
{
	int rc;
	memset(out, 0, sizeof *out);
	if (!dir)
		dir = "";
	if (*dir && (rc = tt_store_key_check(dir, err)) != 0)
		return rc;
	return s->ops->list_names ? s->ops->list_names(s, dir, out, err)
				  : names_by_listing(s, dir, out, err);
}

bool tt_store_has_dir(tt_store *s, const char *dir)
{
	tt_error quiet = TT_ERROR_INIT;
	tt_store_page page = { 0 };
	char *prefix;
	bool yes;
	if (tt_store_key_check(dir, &quiet) != 0) {
		tt_error_clear(&quiet);
		return false;
	}
	if (s->ops->has_dir)
		return s->ops->has_dir(s, dir);
	if (!(prefix = tt_asprintf("%s/", dir)))
		return false;
	yes = tt_store_list_keys(s, prefix, NULL, 1, &page, &quiet) == 0 && page.n > 0;
	tt_store_page_release(&page);
	tt_error_clear(&quiet);
	free(prefix);
	return yes;
}

/* The three writes: the put op with its condition. */
static int put(tt_store *s, const char *key, tt_store_cond cond, const char *etag, const void *data,
	       size_t len, tt_store_meta *meta, tt_error *err)
{
	int rc;
	if (meta)
		memset(meta, 0, sizeof *meta);
	if ((rc = pre(s, key, NULL, err)))
		return rc;
	if (cond == TT_STORE_PUT_IF_MATCH && (!etag || !*etag))
		return tt_error_set(err, TT_EUSAGE, "%s: conditional write of '%s' needs an etag",
				    s->display, key);
	return s->ops->put(s, key, cond, etag, data, len, meta, err);
}

int tt_store_put(tt_store *s, const char *key, const void *data, size_t len,
		 tt_store_meta *meta, tt_error *err)
{
	return put(s, key, TT_STORE_PUT_ANY, NULL, data, len, meta, err);
}

int tt_store_put_if_absent(tt_store *s, const char *key, const void *data, size_t len,
			   tt_store_meta *meta, tt_error *err)
{
	return put(s, key, TT_STORE_PUT_IF_ABSENT, NULL, data, len, meta, err);
}

int tt_store_put_if_match(tt_store *s, const char *key, const char *etag, const void *data,
			  size_t len, tt_store_meta *meta, tt_error *err)
{
	return put(s, key, TT_STORE_PUT_IF_MATCH, etag, data, len, meta, err);
}

int tt_store_delete(tt_store *s, const char *key, tt_error *err)
{
	int rc;
	if ((rc = pre(s, key, NULL, err)))
		return rc;
	return s->ops->del(s, key, err);
}

typedef struct key_set {
	char **v;
	size_t n, alloc;
} key_set;

static int collect_key(const char *key, void *ctx, tt_error *err)
{
	key_set *ks = ctx;
	if (TT_ARRAY_GROW(ks->v, ks->alloc, ks->n + 1) != 0 || !(ks->v[ks->n] = tt_strdup(key)))
		return tt_error_oom(err);
	ks->n++;
	return 0;
}

int tt_store_delete_tree(tt_store *s, const char *dir, tt_error *err)
{
	key_set ks = { 0 };
	char *prefix;
	int rc;
	if ((rc = tt_store_key_check(dir, err)) != 0)
		return rc;
	if (s->ops->delete_tree)
		return s->ops->delete_tree(s, dir, err);
	if (!(prefix = tt_asprintf("%s/", dir)))
		return tt_error_oom(err);
	/* listed whole first: a listing's token need not survive deletes */
	rc = tt_store_each_key(s, prefix, collect_key, &ks, err);
	for (size_t i = 0; rc == 0 && i < ks.n; i++)
		rc = s->ops->del(s, ks.v[i], err);
	for (size_t i = 0; i < ks.n; i++)
		free(ks.v[i]);
	free(ks.v);
	free(prefix);
	return rc;
}

int tt_store_delete_all(tt_store *s, tt_error *err)
{
	key_set ks = { 0 };
	int rc;
	if (s->ops->delete_all)
		return s->ops->delete_all(s, err);
	/* listed whole first: a listing's token need not survive deletes */
	rc = tt_store_each_key(s, "", collect_key, &ks, err);
	for (size_t i = 0; rc == 0 && i < ks.n; i++)
		rc = s->ops->del(s, ks.v[i], err);
	for (size_t i = 0; i < ks.n; i++)
		free(ks.v[i]);
	free(ks.v);
	return rc;
}

void tt_store_close(tt_store *s)
{
	if (s)
		s->ops->close(s);
}
