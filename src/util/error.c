/* util/error.c - the library's error type (see tether/error.h). */
#include "util/error.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/mem.h"

/* The text tt_error_text() composes lives after the message, in one block. */
static char oom_message[] = "out of memory";

static void free_message(tt_error *err)
{
	if (err->message != oom_message)
		free(err->message);
	err->message = NULL;
}

void tt_error_clear(tt_error *err)
{
	if (!err)
		return;
	free_message(err);
	free(err->hint);
	free(err->key);
	free(err->kind);
	err->code = 0;
	err->hint = err->key = err->kind = NULL;
}

const char *tt_code_name(int code)
{
	switch (code) {
	case TT_OK: return "ok";
	case TT_ERROR: return "error";
	case TT_ECONFIG: return "config";
	case TT_EBACKEND: return "backend";
	case TT_ECAPABILITY: return "capability";
	case TT_ENOTFOUND: return "not-found";
	case TT_EEXISTS: return "exists";
	case TT_ELOCKED: return "locked";
	case TT_EREFMOVED: return "ref-moved";
	case TT_ECONFLICT: return "merge-conflict";
	case TT_ESTALEPLAN: return "stale-plan";
	case TT_EIO: return "io";
	case TT_ENOMEM: return "no-memory";
	case TT_ELIMIT: return "limit";
	case TT_EPARSE: return "parse";
	case TT_EVCS: return "vcs";
	case TT_EIMMUTABLE: return "immutable-modified";
	case TT_EPINDRIFT: return "pin-drift";
	case TT_EUNPINNED: return "unpinned";
	case TT_ECANCELED: return "cancelled";
	case TT_EUSAGE: return "usage";
	default: return "unknown";
	}
}

int tt_error_oom(tt_error *err)
{
	if (!err)
		return TT_ENOMEM;
	free_message(err);
	err->code = TT_ENOMEM;
	err->message = oom_message;
	return TT_ENOMEM;
}

int tt_error_vset(tt_error *err, int code, const char *fmt, va_list ap)
{
	if (!err)
		return code;
	char *msg = tt_vasprintf(fmt, ap);
	if (!msg)
		return tt_error_oom(err);
	free_message(err);
	free(err->hint);
	err->hint = NULL;
	err->code = code;
	err->message = msg;
	return code;
}

int tt_error_set(tt_error *err, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int rc = tt_error_vset(err, code, fmt, ap);
	va_end(ap);
	return rc;
}

int tt_error_hint(tt_error *err, const char *fmt, ...)
{
	if (!err)
		return TT_ERROR;
	va_list ap;
	va_start(ap, fmt);
	char *hint = tt_vasprintf(fmt, ap);
	va_end(ap);
	if (hint) {
		free(err->hint);
		err->hint = hint;
	}
	return err->code;
}

/* Does message start with "[name]"? */
static bool bracketed(const char *message, const char *name)
{
	size_t n = name ? strlen(name) : 0;
	return name && message[0] == '[' && strncmp(message + 1, name, n) == 0 && message[n + 1] == ']';
}

int tt_error_object(tt_error *err, const char *key, const char *kind)
{
	if (!err)
		return TT_ERROR;
	/* An error a backend raised names its kind in its text, as tether-vcs
	 * words it ("[git] ..."): the engine adding the object's key later does
	 * not rename it.  One the engine raises about an object names the key. */
	if (!key && kind && !err->key && !err->kind && err->message && err->message != oom_message &&
	    !bracketed(err->message, kind)) {
		char *msg = tt_asprintf("[%s] %s", kind, err->message);
		if (msg) {
			free_message(err);
			err->message = msg;
		}
	}
	/* Each name fills in once: a backend names its kind, the engine then
	 * adds the object's key. */
	if (key && !err->key)
		err->key = tt_strdup(key);
	if (kind && !err->kind)
		err->kind = tt_strdup(kind);
	return err->code;
}

int tt_error_prefix(tt_error *err, const char *fmt, ...)
{
	if (!err || !err->message)
		return err ? err->code : TT_ERROR;
	va_list ap;
	va_start(ap, fmt);
	char *ctx = tt_vasprintf(fmt, ap);
	va_end(ap);
	if (!ctx)
		return err->code;
	char *msg = tt_asprintf("%s: %s", ctx, err->message);
	free(ctx);
	if (msg) {
		free_message(err);
		err->message = msg;
	}
	return err->code;
}

void tt_error_move(tt_error *dst, tt_error *src)
{
	if (!dst || !src || dst == src)
		return;
	tt_error_clear(dst);
	*dst = *src;
	src->code = 0;
	src->message = src->hint = src->key = src->kind = NULL;
}

int tt_error_errno(tt_error *err, int errnum, const char *fmt, ...)
{
	if (!err)
		return TT_EIO;
	va_list ap;
	va_start(ap, fmt);
	char *what = tt_vasprintf(fmt, ap);
	va_end(ap);
	if (!what)
		return tt_error_oom(err);
	int code = errnum == ENOMEM ? TT_ENOMEM : errnum == ENOENT ? TT_ENOTFOUND : TT_EIO;
	tt_error_set(err, code, "%s: %s", what, strerror(errnum));
	free(what);
	return code;
}

const char *tt_error_text(tt_error *err)
{
	if (!err || !err->message)
		return "";
	const char *who = err->key ? err->key : err->kind;
	if (!who)
		return err->message;
	/* Already prefixed: a backend's "[kind] ...", or "[key] ..." written
	 * by whoever raised it. */
	if (bracketed(err->message, err->key) || bracketed(err->message, err->kind))
		return err->message;
	/* Named by kind first ("[git] ..."), then by key: one name, the key's. */
	const char *rest = err->message;
	size_t kl = err->key && err->kind ? strlen(err->kind) : 0;
	if (kl && rest[0] == '[' && strncmp(rest + 1, err->kind, kl) == 0 && rest[kl + 1] == ']' &&
	    rest[kl + 2] == ' ')
		rest += kl + 3;
	char *msg = tt_asprintf("[%s] %s", who, rest);
	if (!msg)
		return err->message;
	free_message(err);
	err->message = msg;
	return err->message;
}
