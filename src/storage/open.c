/*
 * storage/open.c - stores from URIs and options; AWS credentials from
 * options, profiles and the environment (see open.h).
 */
#define _GNU_SOURCE
#include "storage/open.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "storage/aws_creds.h"
#include "storage/azure.h"
#include "storage/gcs.h"
#include "storage/s3.h"
#include "util/fs.h"
#include "util/mem.h"

/* ---- options --------------------------------------------------------------------- */

static json_t *opt(const json_t *o, const char *name)
{
	const char *k;
	json_t *v;
	if (!json_is_object(o))
		return NULL;
	json_object_foreach((json_t *)o, k, v) {
		const char *bare = strncasecmp(k, "aws_", 4) == 0 ? k + 4 : k;
		if (strcasecmp(bare, name) == 0)
			return v;
	}
	return NULL;
}

static const char *opt_str(const json_t *o, const char *name)
{
	json_t *v = opt(o, name);
	return json_is_string(v) && json_string_length(v) ? json_string_value(v) : NULL;
}

/* A boolean option: 1 true, 0 false, -1 absent, -2 unusable. */
static int opt_bool(const json_t *o, const char *name)
{
	json_t *v = opt(o, name);
	if (!v)
		return -1;
	if (json_is_boolean(v))
		return json_is_true(v);
	if (json_is_integer(v))
		return json_integer_value(v) != 0;
	if (json_is_string(v)) {
		const char *s = json_string_value(v);
		if (!strcasecmp(s, "true") || !strcmp(s, "1") || !strcasecmp(s, "yes") || !strcasecmp(s, "on"))
			return 1;
		if (!strcasecmp(s, "false") || !strcmp(s, "0") || !strcasecmp(s, "no") || !strcasecmp(s, "off"))
			return 0;
	}
	return -2;
}

/* Seconds (a number or a numeric string) as ms: 0 absent, -1 unusable. */
static long opt_ms(const json_t *o, const char *name)
{
	json_t *v = opt(o, name);
	double d;
	char *end;
	if (!v)
		return 0;
	if (json_is_number(v) && !json_is_boolean(v))
		d = json_number_value(v);
	else if (json_is_string(v) && (d = strtod(json_string_value(v), &end), end != json_string_value(v)) &&
		 *end == '\0')
		;
	else
		return -1;
	return d > 0 && d < 1e6 ? (long)(d * 1000 + 0.5) : -1;
}

static const char *env(const char *name)
{
	const char *v = getenv(name);
	return v && *v ? v : NULL;
}

/* ---- shared files ---------------------------------------------------------------- */

/* key = value of section in an INI file; *found set when the section exists. */
static char *ini_get(const char *text, const char *section, const char *key, bool *found)
{
	const char *p = text;
	bool in = false;
	while (*p) {
		const char *eol = p + strcspn(p, "\n"), *s = p, *e = eol;
		while (s < e && isspace((unsigned char)*s))
			s++;
		while (e > s && isspace((unsigned char)e[-1]))
			e--;
		if (s < e && *s == '[') {
			const char *close = memchr(s, ']', (size_t)(e - s));
			const char *a = s + 1, *b = close ? close : e;
			while (a < b && isspace((unsigned char)*a))
				a++;
			while (b > a && isspace((unsigned char)b[-1]))
				b--;
			in = (size_t)(b - a) == strlen(section) && strncmp(a, section, (size_t)(b - a)) == 0;
			*found |= in;
		} else if (in && s < e && *s != '#' && *s != ';') {
			const char *eq = memchr(s, '=', (size_t)(e - s)), *ke;
			if (eq) {
				ke = eq;
				while (ke > s && isspace((unsigned char)ke[-1]))
					ke--;
				if ((size_t)(ke - s) == strlen(key) && strncasecmp(s, key, (size_t)(ke - s)) == 0) {
					const char *v = eq + 1;
					while (v < e && isspace((unsigned char)*v))
						v++;
					return tt_strndup(v, (size_t)(e - v));
				}
			}
		}
		p = *eol ? eol + 1 : eol;
	}
	return NULL;
}

static char *home_file(const char *env_name, const char *rel)
{
	const char *e = env(env_name), *home = env("HOME");
	if (e)
		return tt_strdup(e);
	return home ? tt_asprintf("%s/%s", home, rel) : NULL;
}

/* What a profile says, from the credentials file, else the config file. */
typedef struct profile_info {
	char *ak, *sk, *tk, *region;
	char *role_arn, *source_profile, *credential_source, *web_identity_token_file;
	char *role_session_name, *external_id, *duration_seconds;
} profile_info;

static void profile_info_release(profile_info *p)
{
	char **all[] = { &p->ak, &p->sk, &p->tk, &p->region, &p->role_arn, &p->source_profile,
			 &p->credential_source, &p->web_identity_token_file, &p->role_session_name,
			 &p->external_id, &p->duration_seconds };
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
		if (*all[i]) {
			memset(*all[i], 0, strlen(*all[i]));
			free(*all[i]);
		}
	}
	memset(p, 0, sizeof *p);
}

/* TT_ENOTFOUND when neither file has the profile (explicit: the caller decides). */
static int read_profile_info(const char *profile, profile_info *pi, tt_error *err)
{
	char *files[2] = { home_file("AWS_SHARED_CREDENTIALS_FILE", ".aws/credentials"),
			   home_file("AWS_CONFIG_FILE", ".aws/config") };
	static const char *const keys[] = { "aws_access_key_id", "aws_secret_access_key", "aws_session_token",
					    "region", "role_arn", "source_profile", "credential_source",
					    "web_identity_token_file", "role_session_name", "external_id",
					    "duration_seconds" };
	char **slots[] = { &pi->ak, &pi->sk, &pi->tk, &pi->region, &pi->role_arn, &pi->source_profile,
			   &pi->credential_source, &pi->web_identity_token_file, &pi->role_session_name,
			   &pi->external_id, &pi->duration_seconds };
	bool any = false;
	int rc = 0;
	memset(pi, 0, sizeof *pi);
	for (int i = 0; i < 2 && rc == 0; i++) {
		tt_buf text = TT_BUF_INIT;
		char *section = i == 0 || strcmp(profile, "default") == 0 ? tt_strdup(profile)
									: tt_asprintf("profile %s", profile);
		bool found = false;
		if (!section) {
			rc = tt_error_oom(err);
		} else if (files[i] && tt_read_file(files[i], &text, 1u << 20, NULL) == 0) {
			/* Keys come as a pair from one file: the credentials file wins. */
			bool keyed = pi->ak != NULL;
			for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
				if (k < 3 && keyed)
					continue;
				if (!*slots[k])
					*slots[k] = ini_get(text.ptr, section, keys[k], &found);
			}
			if (!keyed && !(pi->ak && pi->sk)) {
				free(pi->ak);
				free(pi->sk);
				free(pi->tk);
				pi->ak = pi->sk = pi->tk = NULL;
			}
			any |= found;
		}
		if (text.ptr)
			memset(text.ptr, 0, text.len);
		tt_buf_release(&text);
		free(section);
	}
	if (rc == 0 && !any)
		rc = tt_error_set(err, TT_ENOTFOUND, "AWS profile '%s' is in neither %s nor %s", profile,
				  files[0] ? files[0] : "~/.aws/credentials",
				  files[1] ? files[1] : "~/.aws/config");
	free(files[0]);
	free(files[1]);
	if (rc)
		profile_info_release(pi);
	return rc;
}

/* Drop the keys (wiped), keep the region. */
static void drop_keys(tt_aws_resolved *r)
{
	free(r->access_key_id);
	if (r->secret_access_key) {
		memset(r->secret_access_key, 0, strlen(r->secret_access_key));
		free(r->secret_access_key);
	}
	if (r->session_token) {
		memset(r->session_token, 0, strlen(r->session_token));
		free(r->session_token);
	}
	r->access_key_id = r->secret_access_key = r->session_token = NULL;
}

void tt_aws_resolved_release(tt_aws_resolved *r)
{
	if (!r)
		return;
	drop_keys(r);
	free(r->region);
	memset(r, 0, sizeof *r);
}

static void take_temp(tt_aws_resolved *r, tt_aws_temp *t, const char *source)
{
	r->access_key_id = t->access_key_id;
	r->secret_access_key = t->secret_access_key;
	r->session_token = t->session_token;
	r->expires = t->expires;
	r->source = source;
	memset(t, 0, sizeof *t);
}

static int set_static(tt_aws_resolved *r, const char *ak, const char *sk, const char *tk, const char *source,
		      tt_error *err)
{
	r->access_key_id = tt_strdup(ak);
	r->secret_access_key = tt_strdup(sk);
	r->session_token = tk && *tk ? tt_strdup(tk) : NULL;
	r->source = source;
	return r->access_key_id && r->secret_access_key && (!tk || !*tk || r->session_token) ? 0 : tt_error_oom(err);
}

static int assume(tt_aws_resolved *r, const tt_aws_role *role, const char *source, tt_error *err)
{
	tt_aws_creds src = { r->access_key_id, r->secret_access_key, r->session_token };
	tt_aws_temp t;
	int rc = tt_aws_assume_role(&src, role, &t, err);
	drop_keys(r);
	if (rc == 0)
		take_temp(r, &t, source);
	return rc;
}

static int resolve_profile(const char *profile, const json_t *o, tt_aws_resolved *r, int depth, tt_error *err);

/* The chain after explicit options: the environment's keys, web identity
 * from the environment, the default (or AWS_PROFILE) profile, the
 * container endpoint, the instance metadata service. */
static int resolve_chain(const json_t *o, tt_aws_resolved *r, bool allow_http, tt_error *err)
{
	int rc;
	if (env("AWS_ACCESS_KEY_ID") && env("AWS_SECRET_ACCESS_KEY"))
		return set_static(r, env("AWS_ACCESS_KEY_ID"), env("AWS_SECRET_ACCESS_KEY"), env("AWS_SESSION_TOKEN"),
				  "environment", err);
	if (env("AWS_ROLE_ARN") && env("AWS_WEB_IDENTITY_TOKEN_FILE")) {
		tt_aws_role role = { .arn = env("AWS_ROLE_ARN"), .session_name = env("AWS_ROLE_SESSION_NAME"),
				     .region = r->region, .endpoint = opt_str(o, "sts_endpoint"),
				     .allow_http = allow_http };
		tt_aws_temp t;
		if ((rc = tt_aws_web_identity(&role, env("AWS_WEB_IDENTITY_TOKEN_FILE"), &t, err)) != 0)
			return rc;
		take_temp(r, &t, "web-identity");
		return 0;
	}
	const char *p = env("AWS_PROFILE") ? env("AWS_PROFILE") : "default";
	tt_error quiet = TT_ERROR_INIT;
	rc = resolve_profile(p, o, r, 0, env("AWS_PROFILE") ? err : &quiet);
	if (rc == TT_ENOTFOUND && !env("AWS_PROFILE"))
		rc = 0;
	else if (rc != 0 && !env("AWS_PROFILE"))
		tt_error_move(err, &quiet);
	tt_error_clear(&quiet);
	if (rc != 0 || r->access_key_id)
		return rc;
	tt_aws_temp t;
	if ((rc = tt_aws_container_creds(&t, err)) == 0) {
		take_temp(r, &t, "container");
		return 0;
	}
	if (rc != TT_ENOTFOUND)
		return rc;
	if ((rc = tt_aws_imds_creds(&t, err)) == 0) {
		take_temp(r, &t, "instance-metadata");
		return 0;
	}
	return rc == TT_ENOTFOUND ? 0 : rc;  /* nothing anywhere: unsigned requests */
}

static bool allow_http_of(const json_t *o)
{
	json_t *v = opt(o, "allow_http");
	if (json_is_true(v))
		return true;
	if (json_is_string(v))
		return !strcasecmp(json_string_value(v), "true") || !strcmp(json_string_value(v), "1");
	return env("AWS_ALLOW_HTTP") &&
	       (!strcasecmp(env("AWS_ALLOW_HTTP"), "true") || !strcmp(env("AWS_ALLOW_HTTP"), "1"));
}

/* A named profile: its keys, or the role it assumes from its source. */
static int resolve_profile(const char *profile, const json_t *o, tt_aws_resolved *r, int depth, tt_error *err)
{
	profile_info pi;
	int rc = read_profile_info(profile, &pi, err);
	if (rc)
		return rc;
	if (!r->region && pi.region)
		r->region = tt_strdup(pi.region);
	bool http = allow_http_of(o);
	if (!pi.role_arn) {
		if (pi.ak && pi.sk)
			rc = set_static(r, pi.ak, pi.sk, pi.tk, depth ? "profile" : "shared-file", err);
		else if (depth)
			rc = tt_error_set(err, TT_ECONFIG, "AWS profile '%s' has no aws_access_key_id and "
					  "aws_secret_access_key", profile);
		profile_info_release(&pi);
		return rc;
	}
	tt_aws_role role = { .arn = pi.role_arn, .session_name = pi.role_session_name,
			     .external_id = pi.external_id, .region = r->region,
			     .endpoint = opt_str(o, "sts_endpoint"), .allow_http = http,
			     .duration_s = pi.duration_seconds ? strtol(pi.duration_seconds, NULL, 10) : 0 };
	if (pi.web_identity_token_file) {
		tt_aws_temp t;
		if ((rc = tt_aws_web_identity(&role, pi.web_identity_token_file, &t, err)) == 0)
			take_temp(r, &t, "web-identity");
	} else if (pi.source_profile) {
		if (depth >= 4)
			rc = tt_error_set(err, TT_ECONFIG, "AWS profile '%s': source_profile chain is too long "
					  "(a loop?)", profile);
		else if (strcmp(pi.source_profile, profile) == 0 && pi.ak && pi.sk)
			rc = set_static(r, pi.ak, pi.sk, pi.tk, "profile", err);
		else
			rc = resolve_profile(pi.source_profile, o, r, depth + 1, err);
		if (rc == 0)
			rc = assume(r, &role, "assume-role", err);
	} else if (pi.credential_source) {
		tt_aws_temp t = { 0 };
		const char *cs = pi.credential_source;
		if (!strcmp(cs, "Environment")) {
			if (env("AWS_ACCESS_KEY_ID") && env("AWS_SECRET_ACCESS_KEY"))
				rc = set_static(r, env("AWS_ACCESS_KEY_ID"), env("AWS_SECRET_ACCESS_KEY"),
						env("AWS_SESSION_TOKEN"), "environment", err);
			else
				rc = tt_error_set(err, TT_ECONFIG, "AWS profile '%s': credential_source = Environment "
						  "but AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY are not set", profile);
		} else if (!strcmp(cs, "EcsContainer") || !strcmp(cs, "Ec2InstanceMetadata")) {
			rc = !strcmp(cs, "EcsContainer") ? tt_aws_container_creds(&t, err) : tt_aws_imds_creds(&t, err);
			if (rc == TT_ENOTFOUND)
				rc = tt_error_set(err, TT_ECONFIG, "AWS profile '%s': credential_source = %s is not "
						  "available here", profile, cs);
			else if (rc == 0)
				take_temp(r, &t, "profile");
		} else {
			rc = tt_error_set(err, TT_ECONFIG, "AWS profile '%s': unknown credential_source '%s' "
					  "(Environment, EcsContainer or Ec2InstanceMetadata)", profile, cs);
		}
		if (rc == 0)
			rc = assume(r, &role, "assume-role", err);
	} else {
		rc = tt_error_set(err, TT_ECONFIG, "AWS profile '%s' has role_arn but no source_profile, "
				  "credential_source or web_identity_token_file", profile);
	}
	if (rc)
		tt_error_prefix(err, "AWS profile '%s'", profile);
	profile_info_release(&pi);
	return rc;
}

int tt_aws_resolve(const json_t *options, tt_aws_resolved *r, tt_error *err)
{
	const char *ak = opt_str(options, "access_key_id"), *sk = opt_str(options, "secret_access_key");
	const char *profile = opt_str(options, "profile"), *role_arn = opt_str(options, "role_arn");
	int rc;

	memset(r, 0, sizeof *r);
	if (opt_str(options, "region"))
		r->region = tt_strdup(opt_str(options, "region"));
	if (ak || sk) {
		if (!ak || !sk) {
			tt_aws_resolved_release(r);
			return tt_error_set(err, TT_ECONFIG, "%s set without %s",
					    ak ? "access_key_id" : "secret_access_key",
					    ak ? "secret_access_key" : "access_key_id");
		}
		rc = set_static(r, ak, sk, opt_str(options, "session_token"), "options", err);
	} else if (profile) {
		rc = resolve_profile(profile, options, r, 1, err);
		if (rc == 0 && r->source && !strcmp(r->source, "shared-file"))
			r->source = "profile";
	} else {
		rc = resolve_chain(options, r, allow_http_of(options), err);
	}
	if (rc == 0 && role_arn) {
		tt_aws_role role = { .arn = role_arn, .session_name = opt_str(options, "role_session_name"),
				     .external_id = opt_str(options, "external_id"), .region = r->region,
				     .endpoint = opt_str(options, "sts_endpoint"),
				     .allow_http = allow_http_of(options) };
		json_t *d = opt(options, "duration_seconds");
		role.duration_s = json_is_integer(d) ? (long)json_integer_value(d)
				  : json_is_string(d) ? strtol(json_string_value(d), NULL, 10) : 0;
		rc = assume(r, &role, "assume-role", err);
	}
	if (rc)
		tt_aws_resolved_release(r);
	return rc;
}

/* ---- stores from URIs ------------------------------------------------------------- */

static int refresh_aws(void *ctx, char **ak, char **sk, char **tok, long long *expires, tt_error *err)
{
	tt_aws_resolved r;
	int rc = tt_aws_resolve(ctx, &r, err);
	if (rc)
		return rc;
	if (!r.access_key_id) {
		tt_aws_resolved_release(&r);
		return tt_error_set(err, TT_ECONFIG, "the credentials it was opened with are gone");
	}
	*ak = r.access_key_id;
	*sk = r.secret_access_key;
	*tok = r.session_token;
	*expires = r.expires;
	free(r.region);
	return 0;
}

static void refresh_free(void *ctx)
{
	json_decref(ctx);
}

static int open_s3(const tt_store_uri *u, const json_t *o, tt_store **out, tt_error *err)
{
	tt_aws_resolved cr;
	tt_s3_config c = { .bucket = u->bucket, .prefix = "" };
	int allow = opt_bool(o, "allow_http"), vh = opt_bool(o, "virtual_hosted_style_request");
	long ct = opt_ms(o, "connect_timeout"), rt = opt_ms(o, "timeout"),
	     tt = opt_ms(o, "request_timeout");
	int rc;

	if (allow == -2 || vh == -2)
		return tt_error_set(err, TT_ECONFIG, "s3://%s: %s must be true or false", u->bucket,
				    allow == -2 ? "allow_http" : "virtual_hosted_style_request");
	if (ct < 0 || rt < 0 || tt < 0)
		return tt_error_set(err, TT_ECONFIG, "s3://%s: %s must be a number of seconds",
				    u->bucket, ct < 0 ? "connect_timeout" : rt < 0 ? "timeout" : "request_timeout");
	if (allow == -1 && env("AWS_ALLOW_HTTP"))
		allow = !strcasecmp(env("AWS_ALLOW_HTTP"), "true") || !strcmp(env("AWS_ALLOW_HTTP"), "1");
	if ((rc = tt_aws_resolve(o, &cr, err)) != 0)
		return tt_error_prefix(err, "s3://%s", u->bucket);
	c.region = opt_str(o, "region");
	if (!c.region)
		c.region = env("AWS_REGION") ? env("AWS_REGION") : env("AWS_DEFAULT_REGION");
	if (!c.region)
		c.region = cr.region;
	c.endpoint = opt_str(o, "endpoint") ? opt_str(o, "endpoint") : opt_str(o, "endpoint_url");
	if (!c.endpoint)
		c.endpoint = env("AWS_ENDPOINT_URL") ? env("AWS_ENDPOINT_URL") : env("AWS_ENDPOINT");
	/* AWS itself: virtual-hosted; a custom endpoint: path-style, unless told */
	c.virtual_hosted = vh >= 0 ? vh == 1 : !c.endpoint;
	c.creds = (tt_aws_creds){ cr.access_key_id, cr.secret_access_key, cr.session_token };
	if (cr.expires) {
		/* Temporary keys: the store asks the same chain again before they run out. */
		c.expires = cr.expires;
		c.refresh = refresh_aws;
		c.refresh_ctx = o ? json_deep_copy(o) : json_object();
		c.refresh_free = refresh_free;
		if (!c.refresh_ctx) {
			tt_aws_resolved_release(&cr);
			return tt_error_oom(err);
		}
	}
	c.http.allow_http = allow == 1;
	c.http.connect_timeout_ms = ct;
	c.http.read_timeout_ms = rt;
	c.http.total_timeout_ms = tt;
	rc = tt_store_s3_open(&c, out, err);
	tt_aws_resolved_release(&cr);
	return rc;
}

/* An Azure option by any of its spellings: "account_key",
 * "azure_storage_account_key", "AZURE_ACCOUNT_KEY", ... */
static const char *az_opt(const json_t *o, const char *const *names)
{
	const char *k;
	json_t *v;
	if (!json_is_object(o))
		return NULL;
	for (const char *const *n = names; *n; n++)
		json_object_foreach((json_t *)o, k, v) {
			const char *bare = !strncasecmp(k, "azure_storage_", 14) ? k + 14
					   : !strncasecmp(k, "azure_", 6)        ? k + 6
										 : k;
			if (strcasecmp(bare, *n) == 0 && json_is_string(v) && json_string_length(v))
				return json_string_value(v);
		}
	return NULL;
}

/* A boolean Azure option by any spelling (see opt_bool). */
static int az_bool(const json_t *o, const char *name)
{
	const char *k;
	json_t *v;
	if (!json_is_object(o))
		return -1;
	json_object_foreach((json_t *)o, k, v) {
		const char *bare = !strncasecmp(k, "azure_storage_", 14) ? k + 14
				   : !strncasecmp(k, "azure_", 6)        ? k + 6
									 : NULL;
		if (bare && strcasecmp(bare, name) == 0) {
			json_t *one = json_pack("{sO}", name, v);
			int r = one ? opt_bool(one, name) : -2;
			json_decref(one);
			return r;
		}
	}
	return -1;
}

/* Azurite's well-known development account (public, in Microsoft's docs). */
#define AZ_DEV_ACCOUNT "devstoreaccount1"
#define AZ_DEV_KEY "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

/*
 * az://container/key: the account from the URI ("container@account..."),
 * else account_name, else AZURE_STORAGE_ACCOUNT_NAME; the key from
 * account_key (or access_key), else AZURE_STORAGE_ACCOUNT_KEY; a SAS from
 * sas_token (sas_key), else AZURE_STORAGE_SAS_TOKEN; the endpoint from
 * endpoint (endpoint_url), else AZURE_STORAGE_ENDPOINT.  use_emulator (or
 * AZURE_STORAGE_USE_EMULATOR) means Azurite as the object-store libraries
 * reach it: AZURITE_BLOB_STORAGE_URL (default http://127.0.0.1:10000) with
 * the account in the path, the development account and key unless given,
 * plain http allowed.
 */
static int open_azure(const tt_store_uri *u, const json_t *o, tt_store **out, tt_error *err)
{
	static const char *const n_account[] = { "account_name", "account", NULL };
	static const char *const n_key[] = { "account_key", "access_key", "master_key", "key", NULL };
	static const char *const n_sas[] = { "sas_token", "sas_key", NULL };
	static const char *const n_ep[] = { "endpoint", "endpoint_url", NULL };
	tt_azure_config c = { .container = u->bucket, .prefix = "" };
	int allow = opt_bool(o, "allow_http"), emu = opt_bool(o, "use_emulator");
	long ct = opt_ms(o, "connect_timeout"), rt = opt_ms(o, "timeout"),
	     tt = opt_ms(o, "request_timeout");
	char *ep = NULL;
	int rc;

	if (emu == -1)
		emu = az_bool(o, "use_emulator");
	if (allow == -1)
		allow = az_bool(o, "allow_http");
	if (allow == -2 || emu == -2)
		return tt_error_set(err, TT_ECONFIG, "az://%s: %s must be true or false", u->bucket,
				    allow == -2 ? "allow_http" : "use_emulator");
	if (ct < 0 || rt < 0 || tt < 0)
		return tt_error_set(err, TT_ECONFIG, "az://%s: %s must be a number of seconds",
				    u->bucket, ct < 0 ? "connect_timeout" : rt < 0 ? "timeout" : "request_timeout");
	if (emu == -1 && env("AZURE_STORAGE_USE_EMULATOR"))
		emu = !strcasecmp(env("AZURE_STORAGE_USE_EMULATOR"), "true") ||
		      !strcmp(env("AZURE_STORAGE_USE_EMULATOR"), "1");
	if (allow == -1 && env("AZURE_ALLOW_HTTP"))
		allow = !strcasecmp(env("AZURE_ALLOW_HTTP"), "true") || !strcmp(env("AZURE_ALLOW_HTTP"), "1");
	c.account = u->account ? u->account : az_opt(o, n_account);
	if (!c.account)
		c.account = env("AZURE_STORAGE_ACCOUNT_NAME");
	c.account_key = az_opt(o, n_key) ? az_opt(o, n_key) : env("AZURE_STORAGE_ACCOUNT_KEY");
	if (!c.account_key)
		c.account_key = env("AZURE_STORAGE_ACCESS_KEY");
	c.sas_token = az_opt(o, n_sas) ? az_opt(o, n_sas) : env("AZURE_STORAGE_SAS_TOKEN");
	c.endpoint = az_opt(o, n_ep) ? az_opt(o, n_ep) : env("AZURE_STORAGE_ENDPOINT");
	if (emu == 1) {
		const char *root = env("AZURITE_BLOB_STORAGE_URL") ? env("AZURITE_BLOB_STORAGE_URL")
								  : "http://127.0.0.1:10000";
		if (!c.account)
			c.account = AZ_DEV_ACCOUNT;
		if (!c.account_key && !c.sas_token)
			c.account_key = AZ_DEV_KEY;
		if (!c.endpoint) {
			size_t n = strlen(root);
			while (n && root[n - 1] == '/')
				n--;
			if (!(ep = tt_asprintf("%.*s/%s", (int)n, root, c.account)))
				return tt_error_oom(err);
			c.endpoint = ep;
		}
		if (allow == -1)
			allow = 1;
	}
	if (!c.account_key && !c.sas_token) {
		free(ep);
		return tt_error_set(err, TT_ECONFIG,
				    "az://%s: no credentials: set account_key or sas_token for this "
				    "store in .tether/secrets.toml (or AZURE_STORAGE_ACCOUNT_KEY)",
				    u->bucket);
	}
	c.http.allow_http = allow == 1;
	c.http.connect_timeout_ms = ct;
	c.http.read_timeout_ms = rt;
	c.http.total_timeout_ms = tt;
	rc = tt_store_azure_open(&c, out, err);
	free(ep);
	return rc;
}

/* A GCS option by any of its spellings ("google_service_account", ...). */
static const char *gcs_opt(const json_t *o, const char *const *names)
{
	const char *k;
	json_t *v;
	if (!json_is_object(o))
		return NULL;
	for (const char *const *n = names; *n; n++)
		json_object_foreach((json_t *)o, k, v) {
			const char *bare = !strncasecmp(k, "google_", 7) ? k + 7 : k;
			if (strcasecmp(bare, *n) == 0 && json_is_string(v) && json_string_length(v))
				return json_string_value(v);
		}
	return NULL;
}

/*
 * gs://bucket/key: the base URL from endpoint (endpoint_url, base_url),
 * else the service-account file's gcs_base_url (the file from
 * service_account_path / service_account, else GOOGLE_SERVICE_ACCOUNT,
 * GOOGLE_SERVICE_ACCOUNT_PATH, GOOGLE_APPLICATION_CREDENTIALS; or its
 * JSON itself in service_account_key / GOOGLE_SERVICE_ACCOUNT_KEY), as the
 * object-store libraries reach an emulator.  Authorisation: bearer_token
 * when given; else the service account's OAuth2 tokens (gcs_auth.h),
 * unless the file says disable_oauth (an emulator: no token at all).
 */
static int open_gcs(const tt_store_uri *u, const json_t *o, tt_store **out, tt_error *err)
{
	static const char *const n_sa[] = { "service_account_path", "service_account",
					    "application_credentials", NULL };
	static const char *const n_sak[] = { "service_account_key", NULL };
	static const char *const n_ep[] = { "endpoint", "endpoint_url", "base_url", NULL };
	static const char *const n_tok[] = { "bearer_token", NULL };
	tt_gcs_config c = { .bucket = u->bucket, .prefix = "" };
	int allow = opt_bool(o, "allow_http");
	long ct = opt_ms(o, "connect_timeout"), rt = opt_ms(o, "timeout"),
	     tt = opt_ms(o, "request_timeout");
	const char *sa = gcs_opt(o, n_sa), *sak = gcs_opt(o, n_sak);
	json_t *saj = NULL;
	int rc;

	if (allow == -2)
		return tt_error_set(err, TT_ECONFIG, "gs://%s: allow_http must be true or false",
				    u->bucket);
	if (ct < 0 || rt < 0 || tt < 0)
		return tt_error_set(err, TT_ECONFIG, "gs://%s: %s must be a number of seconds",
				    u->bucket, ct < 0 ? "connect_timeout" : rt < 0 ? "timeout" : "request_timeout");
	if (!sa && !sak) {
		sa = env("GOOGLE_SERVICE_ACCOUNT") ? env("GOOGLE_SERVICE_ACCOUNT")
		     : env("GOOGLE_SERVICE_ACCOUNT_PATH") ? env("GOOGLE_SERVICE_ACCOUNT_PATH")
							  : env("GOOGLE_APPLICATION_CREDENTIALS");
		if (!sa)
			sak = env("GOOGLE_SERVICE_ACCOUNT_KEY");
	}
	c.base_url = gcs_opt(o, n_ep);
	c.bearer_token = gcs_opt(o, n_tok);
	if (allow == -1 && env("GOOGLE_ALLOW_HTTP"))
		allow = !strcasecmp(env("GOOGLE_ALLOW_HTTP"), "true") || !strcmp(env("GOOGLE_ALLOW_HTTP"), "1");
	c.http.allow_http = allow == 1;
	c.http.connect_timeout_ms = ct;
	c.http.read_timeout_ms = rt;
	c.http.total_timeout_ms = tt;
	if (sa || sak) {
		json_error_t je;
		json_t *v;
		/* never the key's text in a message: only where it came from */
		if (sa)
			saj = json_load_file(sa, 0, &je);
		else
			saj = json_loads(sak, 0, &je);
		if (!saj || !json_is_object(saj)) {
			json_decref(saj);
			return sa ? tt_error_set(err, TT_ECONFIG,
						 "gs://%s: the service-account file %s cannot be read as "
						 "JSON; point service_account_path at the key file",
						 u->bucket, sa)
				  : tt_error_set(err, TT_ECONFIG,
						 "gs://%s: service_account_key is not a service account's "
						 "JSON key; give the key file's whole text (or its path as "
						 "service_account_path)", u->bucket);
		}
		v = json_object_get(saj, "gcs_base_url");
		if (!c.base_url && json_is_string(v))
			c.base_url = json_string_value(v);
		if (!c.bearer_token && !json_is_true(json_object_get(saj, "disable_oauth"))) {
			char *where = sa ? tt_strdup(sa) : tt_strdup("service_account_key");
			if (!where)
				rc = tt_error_oom(err);
			else
				rc = tt_gcs_token_source_new(saj, where, &c.http, &c.token_source, err);
			free(where);
			if (rc) {
				json_decref(saj);
				return tt_error_prefix(err, "gs://%s", u->bucket);
			}
		}
	}
	rc = tt_store_gcs_open(&c, out, err);
	json_decref(saj);
	return rc;
}

int tt_store_open_uri(const char *uri, const json_t *options, tt_store **out, char **key,
		      tt_error *err)
{
	tt_store_uri u;
	int rc;
	*out = NULL;
	*key = NULL;
	if ((rc = tt_store_uri_parse(uri, &u, err)) != 0)
		return rc;
	switch (u.kind) {
	case TT_STORE_LOCAL:
		rc = tt_store_local_open(u.path, false, out, err);
		if (rc == 0 && !(*key = tt_strdup("")))
			rc = tt_error_oom(err);
		break;
	case TT_STORE_S3:
		rc = open_s3(&u, options, out, err);
		if (rc == 0 && !(*key = tt_strdup(u.key)))
			rc = tt_error_oom(err);
		break;
	case TT_STORE_GCS:
		rc = open_gcs(&u, options, out, err);
		if (rc == 0 && !(*key = tt_strdup(u.key)))
			rc = tt_error_oom(err);
		break;
	case TT_STORE_AZURE:
		rc = open_azure(&u, options, out, err);
		if (rc == 0 && !(*key = tt_strdup(u.key)))
			rc = tt_error_oom(err);
		break;
	default:
		rc = tt_error_set(err, TT_ECAPABILITY, "%s:// stores are not built into this tether yet",
				  u.scheme);
	}
	if (rc) {
		tt_store_close(*out);
		*out = NULL;
		free(*key);
		*key = NULL;
	}
	tt_store_uri_release(&u);
	return rc;
}
