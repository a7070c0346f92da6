/*
 * tether/error.h - the one error type of libtether.
 *
 * Every fallible library function returns 0 on success or a negative
 * tt_code, and fills a caller-owned tt_error.  The library never prints and
 * never exits: the message names the object ("[key]" or "[kind]") and, where
 * there is one, a fix hint.  Only the CLI turns an error into text on stderr
 * and an exit status.
 */
#ifndef TETHER_ERROR_H
#define TETHER_ERROR_H

#include <tether/export.h>

#ifdef __cplusplus
extern "C" {
#endif

TT_API_BEGIN

typedef enum tt_code {
	TT_OK = 0,
	TT_ERROR = -1,        /* anything without a more specific code */
	TT_ECONFIG = -2,      /* tether.toml, a manifest, secrets.toml, a key */
	TT_EBACKEND = -3,     /* a store refused or failed */
	TT_ECAPABILITY = -4,  /* the kind cannot do what was asked */
	TT_ENOTFOUND = -5,
	TT_EEXISTS = -6,
	TT_ELOCKED = -7,      /* a lock was not granted in time */
	TT_EREFMOVED = -8,    /* a conditional ref move found another head */
	TT_ECONFLICT = -9,    /* a merge reported conflicts */
	TT_ESTALEPLAN = -10,  /* a saved plan's preconditions no longer hold */
	TT_EIO = -11,         /* the operating system refused */
	TT_ENOMEM = -12,
	TT_ELIMIT = -13,      /* a size cap was exceeded */
	TT_EPARSE = -14,      /* malformed input (file:line:col in the message) */
	TT_EVCS = -15,        /* the dataset's git/jj failed */
	TT_EIMMUTABLE = -16,  /* an immutable object changed */
	TT_EPINDRIFT = -17,   /* a pin points somewhere else */
	TT_EUNPINNED = -18,   /* --strict and a state could not be pinned */
	TT_EUSAGE = -19,      /* the caller asked for something meaningless */
	TT_ECANCELED = -20    /* tt_repo_cancel stopped the operation */
} tt_code;

/*
 * A caller-allocated error.  Initialise with TT_ERROR_INIT, read after a
 * failure, release with tt_error_clear().  All strings are owned.
 */
typedef struct tt_error {
	int code;       /* a tt_code; 0 when no error is set */
	char *message;  /* what went wrong; NULL when code == 0 */
	char *hint;     /* how to fix it, or NULL */
	char *key;      /* the object key the error is about, or NULL */
	char *kind;     /* the backend kind the error is about, or NULL */
} tt_error;

#define TT_ERROR_INIT { 0, NULL, NULL, NULL, NULL }

/* Free the strings and reset to TT_ERROR_INIT.  NULL-safe. */
void tt_error_clear(tt_error *err);

/* Name of a code ("config", "backend", ...). */
const char *tt_code_name(int code);

/*
 * The full text of an error as the CLI prints it after "error: ":
 * "[key] message" (or "[kind] message"), without the hint.  The returned
 * string is owned by the error and lives until the next change to it.
 */
const char *tt_error_text(tt_error *err);

TT_API_END

#ifdef __cplusplus
}
#endif
#endif
