/*
 * storage/azure.c - the store interface on Azure Blob Storage (see
 * azure.h): how Azure spells a request (Shared Key or a SAS), lists (List
 * Blobs) and words its errors; the rest is the object-store skeleton
 * (objstore.h).
 *
 * Every call is one request through the shared HTTP client (whose retries
 * cover 429/5xx/resets), signed with Shared Key over the canonical string
 * the service recomputes (the fixed headers, the x-ms-* headers, the
 * account and path, the sorted query), or carrying the SAS.  The store
 * holds no mutable state after open.  As for S3, a conditional write the
 * client had to retry that then fails its precondition is checked against
 * the blob's content: our own first attempt may have landed.
 */
#define _GNU_SOURCE
#include "storage/azure.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "storage/objstore.h"
#include "util/crypto_api.h"
#include "util/mem.h"

#define AZ_VERSION "2021-08-06"

typedef struct az_impl {
	tt_objstore os;  /* first: the skeleton's part */
	char *account, *container;
	char *base;      /* scheme://host[:port][/path], no trailing '/' */
	char *basepath;  /* the path part of base ("" or "/devstoreaccount1") */
	unsigned char *key;
	size_t keylen;
	char *sas;
} az_impl;

#define IM(s) ((az_impl *)(s)->impl)

/* ---- requests -------------------------------------------------------------------- */

typedef struct az_param {
	const char *name, *value;
} az_param;

typedef struct call {
	const char *method;
	const char *key;          /* full blob name; NULL: the container */
	const az_param *query;    /* sorted by name */
	size_t nquery;
	const char *range;        /* "bytes=a-b" or NULL */
	const char *if_match;     /* quoted etag, or NULL */
	const char *if_none_match;
	bool blob_put;            /* x-ms-blob-type: BlockBlob, a body */
	const void *body;
	size_t len;
} call;

static int b64_decode(const char *in, unsigned char **out, size_t *outlen)
{
	size_t n = strlen(in);
	unsigned char *buf = malloc(n / 4 * 3 + 3);
	int got;
	*out = NULL;
	if (!buf)
		return -1;
	got = n ? EVP_DecodeBlock(buf, (const unsigned char *)in, (int)n) : 0;
	if (got < 0 || n % 4) {
		free(buf);
		return -1;
	}
	while (n && in[n - 1] == '=') {
		got--;
		n--;
	}
	*out = buf;
	*outlen = (size_t)got;
	return 0;
}

static int az_do(tt_store *s, const call *c, tt_http_response *resp, tt_error *err)
{
	az_impl *im = IM(s);
	tt_buf path = TT_BUF_INIT, url = TT_BUF_INIT, sts = TT_BUF_INIT;
	char date[64], clen[32] = "", hdate[80], hver[40], auth[256], hrange[128], hif[300],
		hnone[300];
	const char *headers[12];
	size_t nh = 0;
	struct tm tm;
	time_t now = time(NULL);
	int rc;

	gmtime_r(&now, &tm);
	strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S GMT", &tm);
	/* the path: /<container>[/<blob>], blob bytes encoded but its '/' kept */
	tt_buf_puts(&path, im->basepath);
	tt_buf_putc(&path, '/');
	tt_http_uri_encode(&path, im->container, strlen(im->container), false);
	if (c->key) {
		tt_buf_putc(&path, '/');
		tt_http_uri_encode(&path, c->key, strlen(c->key), true);
	}
	tt_buf_puts(&url, im->base);
	tt_buf_put(&url, path.ptr + strlen(im->basepath), path.len - strlen(im->basepath));
	for (size_t i = 0; i < c->nquery; i++) {
		tt_buf_putc(&url, i ? '&' : '?');
		tt_buf_puts(&url, c->query[i].name);
		tt_buf_putc(&url, '=');
		tt_http_uri_encode(&url, c->query[i].value, strlen(c->query[i].value), false);
	}
	if (im->sas) {
		tt_buf_putc(&url, c->nquery ? '&' : '?');
		tt_buf_puts(&url, im->sas);
	}
	tt_buf_puts(&url, "");
	if (c->blob_put && c->len)
		snprintf(clen, sizeof clen, "%zu", c->len);
	snprintf(hdate, sizeof hdate, "x-ms-date: %s", date);
	snprintf(hver, sizeof hver, "x-ms-version: %s", AZ_VERSION);
	headers[nh++] = hdate;
	headers[nh++] = hver;
	if (c->blob_put) {
		headers[nh++] = "x-ms-blob-type: BlockBlob";
		headers[nh++] = "Content-Type: application/octet-stream";
	}
	if (c->range) {
		snprintf(hrange, sizeof hrange, "Range: %s", c->range);
		headers[nh++] = hrange;
	}
	if (c->if_match) {
		snprintf(hif, sizeof hif, "If-Match: %s", c->if_match);
		headers[nh++] = hif;
	}
	if (c->if_none_match) {
		snprintf(hnone, sizeof hnone, "If-None-Match: %s", c->if_none_match);
		headers[nh++] = hnone;
	}
	if (im->key) {
		unsigned char mac[32];
		unsigned int maclen = sizeof mac;
		unsigned char b64[64];
		/* VERB, Content-Encoding, -Language, -Length, -MD5, -Type, Date,
		 * If-Modified-Since, If-Match, If-None-Match, If-Unmodified-Since,
		 * Range; then x-ms-* (sorted) and the resource. */
		tt_buf_printf(&sts, "%s\n\n\n%s\n\n%s\n\n\n%s\n%s\n\n%s\n", c->method, clen,
			      c->blob_put ? "application/octet-stream" : "",
			      c->if_match ? c->if_match : "", c->if_none_match ? c->if_none_match : "",
			      c->range ? c->range : "");
		if (c->blob_put)
			tt_buf_puts(&sts, "x-ms-blob-type:BlockBlob\n");
		tt_buf_printf(&sts, "x-ms-date:%s\nx-ms-version:%s\n", date, AZ_VERSION);
		tt_buf_printf(&sts, "/%s%s", im->account, path.ptr ? path.ptr : "");
		for (size_t i = 0; i < c->nquery; i++)
			tt_buf_printf(&sts, "\n%s:%s", c->query[i].name, c->query[i].value);
		if (sts.failed || !HMAC(EVP_sha256(), im->key, (int)im->keylen,
					(const unsigned char *)sts.ptr, sts.len, mac, &maclen)) {
			rc = tt_error_oom(err);
			goto done;
		}
		EVP_EncodeBlock(b64, mac, (int)maclen);
		snprintf(auth, sizeof auth, "Authorization: SharedKey %s:%s", im->account, b64);
		headers[nh++] = auth;
	}
	headers[nh] = NULL;
	if (path.failed || url.failed) {
		rc = tt_error_oom(err);
		goto done;
	}
	{
		tt_http_request req = { .method = c->method, .url = url.ptr, .headers = headers,
					.body = c->body, .body_len = c->len };
		rc = tt_http_do(im->os.http, &req, resp, err);
	}
	if (rc)
		tt_error_prefix(err, "%s", s->display);
done:
	if (sts.ptr)
		memset(sts.ptr, 0, sts.len);
	tt_buf_release(&sts);
	tt_buf_release(&path);
	tt_buf_release(&url);
	return rc;
}

static const char *az_fix(long status, const char *code)
{
	(void)code;
	if (status == 403)
		return "; check the account key or SAS for this store in .tether/secrets.toml";
	return "";
}

/* One blob request, as Azure spells it. */
static int az_send(tt_store *s, const tt_objstore_req *q, tt_http_response *r, tt_error *err)
{
	az_param query[] = { { "versionid", q->version } };
	char quoted[256];
	bool put = strcmp(q->method, "PUT") == 0;
	if (q->cond == TT_STORE_PUT_IF_MATCH)
		snprintf(quoted, sizeof quoted, "\"%s\"", q->etag);
	call c = { .method = q->method, .key = q->key, .query = query, .nquery = q->version ? 1 : 0,
		   .range = q->range, .blob_put = put, .body = q->body, .len = q->len,
		   .if_match = q->cond == TT_STORE_PUT_IF_MATCH ? quoted : NULL,
		   .if_none_match = q->cond == TT_STORE_PUT_IF_ABSENT ? "*" : NULL };
	return az_do(s, &c, r, err);
}

static bool az_lost(long status, tt_store_cond cond)
{
	return (cond == TT_STORE_PUT_IF_ABSENT && (status == 409 || status == 412)) ||
	       (cond == TT_STORE_PUT_IF_MATCH && status == 412);
}

/* ---- listings -------------------------------------------------------------------- */

static const tt_objstore_listing az_listing = {
	.entry = "Blob", .key = "Name", .etag = "Etag", .size = "Content-Length",
	.mtime = "Last-Modified", .version = "VersionId", .next = "NextMarker",
};

static int az_list(tt_store *s, const char *prefix, const char *token, size_t max_keys,
		   tt_store_page *out, tt_error *err)
{
	tt_http_response r;
	char maxk[24], *fp = tt_objstore_full_key(s, prefix);
	/* sorted by name, as the canonical resource wants them */
	az_param q[5];
	size_t nq = 0;
	int rc;

	if (!fp)
		return tt_error_oom(err);
	snprintf(maxk, sizeof maxk, "%zu", max_keys > 5000 ? (size_t)5000 : max_keys);
	q[nq++] = (az_param){ "comp", "list" };
	if (token)
		q[nq++] = (az_param){ "marker", token };
	q[nq++] = (az_param){ "maxresults", maxk };
	if (*fp)
		q[nq++] = (az_param){ "prefix", fp };
	q[nq++] = (az_param){ "restype", "container" };
	call c = { .method = "GET", .query = q, .nquery = nq };
	tt_http_response_init(&r);
	rc = az_do(s, &c, &r, err);
	if (rc == 0 && r.status != 200)
		rc = tt_objstore_fail(s, "list", prefix[0] ? prefix : NULL, &r, err);
	if (rc == 0)
		rc = tt_objstore_parse_listing(s, &az_listing, &r, NULL, 0, NULL, out, NULL, err);
	tt_http_response_release(&r);
	free(fp);
	return rc;
}

/* ---- open ------------------------------------------------------------------------ */

static void az_impl_free(void *p)
{
	az_impl *im = p;
	free(im->account);
	free(im->container);
	free(im->base);
	free(im->basepath);
	if (im->key) {
		memset(im->key, 0, im->keylen);
		free(im->key);
	}
	if (im->sas) {
		memset(im->sas, 0, strlen(im->sas));
		free(im->sas);
	}
	free(im);
}

static const tt_objstore_driver az_driver = {
	.noun = "blob",
	.version_word = "version",
	.version_header = "x-ms-version-id",
	.code_header = "x-ms-error-code",
	.clip_ranges = true,
	.send = az_send,
	.lost = az_lost,
	.fix = az_fix,
	.free = az_impl_free,
};

static const tt_store_ops az_ops = TT_OBJSTORE_OPS(az_list, NULL);

static int az_build(const tt_azure_config *cfg, tt_store **out, tt_error *err)
{
	tt_store *s = NULL;
	az_impl *im = NULL;
	int rc;

	*out = NULL;
	if ((rc = tt_crypto_load(err)) != 0)
		return rc;
	if (!cfg->container || !*cfg->container || strchr(cfg->container, '/'))
		return tt_error_set(err, TT_ECONFIG,
				    "azure: a store needs a container name (az://<container>/...)");
	if (!cfg->account || !*cfg->account || strchr(cfg->account, '/'))
		return tt_error_set(err, TT_ECONFIG,
				    "az://%s: no storage account: set account_name for this store in "
				    ".tether/secrets.toml (or AZURE_STORAGE_ACCOUNT_NAME)", cfg->container);
	if (!(s = tt_calloc(1, sizeof *s)) || !(im = tt_calloc(1, sizeof *im))) {
		free(s);
		return tt_error_oom(err);
	}
	s->impl = im;
	im->os.drv = &az_driver;
	s->ops = &az_ops;
	s->kind = TT_STORE_AZURE;
	im->account = tt_strdup(cfg->account);
	im->container = tt_strdup(cfg->container);
	im->os.prefix = tt_objstore_prefix(cfg->prefix);
	s->display = tt_asprintf("az://%s/%s", cfg->container, im->os.prefix ? im->os.prefix : "");
	if (cfg->endpoint && *cfg->endpoint) {
		const char *e = cfg->endpoint, *h = strstr(e, "://");
		size_t n;
		if (!h || (strncasecmp(e, "http://", 7) != 0 && strncasecmp(e, "https://", 8) != 0)) {
			tt_objstore_close(s);
			return tt_error_set(err, TT_ECONFIG,
					    "azure: endpoint must be http(s)://host[:port][/path], not "
					    "'%s'", e);
		}
		im->base = tt_strdup(e);
		if (im->base) {
			n = strlen(im->base);
			while (n && im->base[n - 1] == '/')
				im->base[--n] = '\0';
			h = strstr(im->base, "://") + 3;
			im->basepath = tt_strdup(h + strcspn(h, "/"));
		}
	} else {
		im->base = tt_asprintf("https://%s.blob.core.windows.net", cfg->account);
		im->basepath = tt_strdup("");
	}
	if (cfg->account_key && *cfg->account_key &&
	    b64_decode(cfg->account_key, &im->key, &im->keylen) != 0) {
		tt_objstore_close(s);
		return tt_error_set(err, TT_ECONFIG,
				    "az://%s: the account key is not base64; copy it again from the "
				    "storage account's access keys", cfg->container);
	}
	if (cfg->sas_token && *cfg->sas_token)
		im->sas = tt_strdup(cfg->sas_token[0] == '?' ? cfg->sas_token + 1 : cfg->sas_token);
	if (!im->account || !im->container || !im->os.prefix || !s->display || !im->base ||
	    !im->basepath || (cfg->sas_token && *cfg->sas_token && !im->sas)) {
		tt_objstore_close(s);
		return tt_error_oom(err);
	}
	if ((rc = tt_http_client_new(&cfg->http, &im->os.http, err)) != 0) {
		tt_objstore_close(s);
		return rc;
	}
	*out = s;
	return 0;
}

int tt_store_azure_open(const tt_azure_config *cfg, tt_store **out, tt_error *err)
{
	/* Version ids appear on writes and reads where the account keeps them;
	 * a store starts unversioned and a read at a version is refused
	 * (Azurite keeps none). */
	return az_build(cfg, out, err);
}

int tt_azure_create_container(const tt_azure_config *cfg, tt_error *err)
{
	tt_store *s;
	tt_http_response r;
	az_param q[] = { { "restype", "container" } };
	int rc = az_build(cfg, &s, err);
	if (rc)
		return rc;
	call c = { .method = "PUT", .query = q, .nquery = 1 };
	tt_http_response_init(&r);
	rc = az_do(s, &c, &r, err);
	if (rc == 0 && r.status != 201 && r.status != 409)
		rc = tt_objstore_fail(s, "create container", NULL, &r, err);
	tt_http_response_release(&r);
	tt_objstore_close(s);
	return rc;
}
