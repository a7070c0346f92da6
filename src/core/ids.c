/*
 * core/ids.c - pin ids, listing names, the manifest hash and ref names,
 * computed exactly as tether-vcs computes them (see ids.h).
 */
#include "core/ids.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "util/buf.h"
#include "util/hash.h"
#include "util/json.h"
#include "util/mem.h"

#define REF_PREFIX "tether."
#define WORKING_REF_PREFIX "tether.ws."

/* Turn a failed canonical dump of `what` into an error. */
static int canon_error(tt_error *err, int rc, const char *what)
{
	switch (rc) {
	case TT_ENOMEM:
		return tt_error_oom(err);
	case TT_EPARSE:
		return tt_error_set(err, TT_EPARSE, "%s: a string is not valid UTF-8", what);
	case TT_ELIMIT:
		return tt_error_set(err, TT_ELIMIT, "%s: nested too deeply", what);
	default:
		return tt_error_set(err, rc ? rc : TT_ERROR, "%s: cannot be encoded as JSON", what);
	}
}

/*
 * The first n code points of a valid UTF-8 string (Python's s[:n]), copied
 * into out (room for 4n + 1 bytes).  Returns the byte length.
 */
static size_t copy_codepoints(char *out, const char *s, size_t n)
{
	size_t i = 0, cps = 0;
	while (s[i]) {
		if (((unsigned char)s[i] & 0xc0) != 0x80) {
			if (cps == n)
				break;
			cps++;
		}
		i++;
	}
	memcpy(out, s, i);
	out[i] = '\0';
	return i;
}

/* dataset_id[:8] as tether-vcs slices it; TT_EUSAGE when not UTF-8. */
static int dataset_prefix(char out[4 * TT_DATASET_ID_LEN + 1], const char *dataset_id,
			  tt_error *err)
{
	if (!dataset_id)
		return tt_error_set(err, TT_EUSAGE, "no dataset id");
	if (!tt_utf8_valid(dataset_id, strlen(dataset_id)))
		return tt_error_set(err, TT_EUSAGE, "dataset id is not valid UTF-8");
	copy_codepoints(out, dataset_id, TT_DATASET_ID_LEN);
	return 0;
}

/* blake(canon(kind), canon(identity), canon(state), size=16) as 32 hex. */
static int state_digest(char hex[33], const char *kind, const json_t *identity,
			const json_t *state, tt_error *err)
{
	tt_buf b[3] = { TT_BUF_INIT, TT_BUF_INIT, TT_BUF_INIT };
	int rc;

	if (!kind || !identity || !state) {
		rc = tt_error_set(err, TT_EUSAGE, "pin id: kind, identity and state are required");
		goto out;
	}
	rc = tt_json_dump_string(&b[0], kind, strlen(kind), false);
	if (rc) {
		rc = canon_error(err, rc, "kind");
		goto out;
	}
	rc = tt_json_canonical(&b[1], identity);
	if (rc) {
		rc = canon_error(err, rc, "identity");
		goto out;
	}
	rc = tt_json_canonical(&b[2], state);
	if (rc) {
		rc = canon_error(err, rc, "state");
		goto out;
	}
	tt_bytes parts[3] = {
		{ b[0].ptr, b[0].len }, { b[1].ptr, b[1].len }, { b[2].ptr, b[2].len },
	};
	if (tt_blake_parts(hex, 16, parts, 3) != 0)
		rc = tt_error_set(err, TT_ERROR, "BLAKE2b failed");
out:
	for (int i = 0; i < 3; i++)
		tt_buf_release(&b[i]);
	return rc;
}

int tt_pin_id(char out[TT_PIN_ID_MAX], const char *dataset_id, const char *kind,
	      const json_t *identity, const json_t *content_state, tt_error *err)
{
	char ds[4 * TT_DATASET_ID_LEN + 1];
	char hex[33];
	int rc = dataset_prefix(ds, dataset_id, err);
	if (rc)
		return rc;
	rc = state_digest(hex, kind, identity, content_state, err);
	if (rc)
		return rc;
	hex[16] = '\0';
	size_t dl = strlen(ds);
	memcpy(out, ds, dl);
	out[dl] = '.';
	memcpy(out + dl + 1, hex, 17);
	return 0;
}

int tt_listing_name(char out[TT_LISTING_NAME_MAX], const char *kind,
		    const json_t *identity, const json_t *content_state, tt_error *err)
{
	char hex[33];
	int rc = state_digest(hex, kind, identity, content_state, err);
	if (rc)
		return rc;
	memcpy(out, hex, 20);
	memcpy(out + 20, ".jsonl", sizeof ".jsonl");
	return 0;
}

static int entry_cmp(const void *a, const void *b)
{
	const tt_keyed_canon *const *x = a, *const *y = b;
	return strcmp((*x)->key, (*y)->key);  /* unsigned bytes: code point order */
}

int tt_manifest_hash_of(char hex[65], const tt_keyed_canon *entries, size_t n, tt_error *err)
{
	const tt_keyed_canon **sorted = NULL;
	size_t *ends = NULL;
	tt_bytes *parts = NULL;
	tt_buf b = TT_BUF_INIT;
	int rc = 0;

	if (n && !entries)
		return tt_error_set(err, TT_EUSAGE, "manifest hash: no entries");
	if (n) {
		sorted = tt_reallocarray(NULL, n, sizeof *sorted);
		ends = tt_reallocarray(NULL, n, sizeof *ends);
		parts = tt_reallocarray(NULL, n, sizeof *parts);
		if (!sorted || !ends || !parts) {
			rc = tt_error_oom(err);
			goto out;
		}
	}
	for (size_t i = 0; i < n; i++) {
		if (!entries[i].key || !entries[i].canonical) {
			rc = tt_error_set(err, TT_EUSAGE, "manifest hash: entry %zu has no %s", i,
					  entries[i].key ? "canonical form" : "key");
			goto out;
		}
		sorted[i] = &entries[i];
	}
	if (n > 1)
		qsort(sorted, n, sizeof *sorted, entry_cmp);
	for (size_t i = 0; i < n; i++) {
		const tt_keyed_canon *e = sorted[i];
		if (i && strcmp(sorted[i - 1]->key, e->key) == 0) {
			rc = tt_error_set(err, TT_EUSAGE, "manifest hash: duplicate key");
			tt_error_object(err, e->key, NULL);
			goto out;
		}
		/* canon([key, canonical]): a two-string array, compact. */
		tt_buf_putc(&b, '[');
		rc = tt_json_dump_string(&b, e->key, strlen(e->key), false);
		if (!rc) {
			tt_buf_putc(&b, ',');
			rc = tt_json_dump_string(&b, e->canonical, strlen(e->canonical), false);
		}
		if (!rc)
			rc = tt_buf_putc(&b, ']');
		if (rc) {
			rc = canon_error(err, rc, "manifest hash");
			if (rc == TT_EPARSE)
				tt_error_object(err, tt_utf8_valid(e->key, strlen(e->key))
						     ? e->key : NULL, NULL);
			goto out;
		}
		ends[i] = b.len;
	}
	for (size_t i = 0; i < n; i++) {
		size_t start = i ? ends[i - 1] : 0;
		parts[i].data = b.ptr + start;
		parts[i].len = ends[i] - start;
	}
	if (tt_blake_parts(hex, 32, parts, n) != 0)
		rc = tt_error_set(err, TT_ERROR, "BLAKE2b failed");
out:
	free(sorted);
	free(ends);
	free(parts);
	tt_buf_release(&b);
	return rc;
}

static bool is_lower_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

bool tt_is_dataset_id(const char *s)
{
	if (!s)
		return false;
	for (size_t i = 0; i < TT_DATASET_ID_LEN; i++)
		if (!is_lower_hex(s[i]))
			return false;
	return s[TT_DATASET_ID_LEN] == '\0';
}

/* n bytes from getrandom(2), or /dev/urandom where the kernel lacks it. */
static int fill_random(unsigned char *p, size_t n, tt_error *err)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = getrandom(p + got, n - got, 0);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ENOSYS)
				break;
			return tt_error_errno(err, errno, "getrandom");
		}
		got += (size_t)r;
	}
	if (got == n)
		return 0;

	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return tt_error_errno(err, errno, "/dev/urandom");
	while (got < n) {
		ssize_t r = read(fd, p + got, n - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			int e = r < 0 ? errno : EIO;
			close(fd);
			return tt_error_errno(err, e, "/dev/urandom");
		}
		got += (size_t)r;
	}
	close(fd);
	return 0;
}

int tt_random_hex(char *out, size_t n, tt_error *err)
{
	unsigned char raw[32];
	char hex[2 * sizeof raw + 1];
	size_t done = 0;

	if (!out)
		return tt_error_set(err, TT_EUSAGE, "random id: no buffer");
	while (done < n) {
		size_t want = n - done;
		if (want > 2 * sizeof raw)
			want = 2 * sizeof raw;
		size_t nbytes = (want + 1) / 2;
		int rc = fill_random(raw, nbytes, err);
		if (rc) {
			out[0] = '\0';
			return rc;
		}
		tt_hex(hex, raw, nbytes);
		memcpy(out + done, hex, want);
		done += want;
	}
	out[n] = '\0';
	return 0;
}

int tt_new_dataset_id(char out[TT_DATASET_ID_LEN + 1], tt_error *err)
{
	return tt_random_hex(out, TT_DATASET_ID_LEN, err);
}

int tt_ref_for_pin(char *out, size_t outsz, const char *pin_id)
{
	size_t n;
	if (!out || !pin_id)
		return TT_EUSAGE;
	n = strlen(pin_id);
	if (outsz < sizeof REF_PREFIX + n) {
		if (outsz)
			out[0] = '\0';
		return TT_ELIMIT;
	}
	memcpy(out, REF_PREFIX, sizeof REF_PREFIX - 1);
	memcpy(out + sizeof REF_PREFIX - 1, pin_id, n + 1);
	return 0;
}

/* pin_dataset() over s[0..len): "<8 lower hex>.<non-empty, no dot>". */
static bool pin_dataset_n(const char *s, size_t len)
{
	if (len < TT_DATASET_ID_LEN + 2 || s[TT_DATASET_ID_LEN] != '.')
		return false;
	for (size_t i = 0; i < TT_DATASET_ID_LEN; i++)
		if (!is_lower_hex(s[i]))
			return false;
	return memchr(s + TT_DATASET_ID_LEN + 1, '.', len - TT_DATASET_ID_LEN - 1) == NULL;
}

bool tt_pin_dataset(const char *pin_id, char ds[TT_DATASET_ID_LEN + 1])
{
	if (!pin_id || !pin_dataset_n(pin_id, strlen(pin_id)))
		return false;
	if (ds) {
		memcpy(ds, pin_id, TT_DATASET_ID_LEN);
		ds[TT_DATASET_ID_LEN] = '\0';
	}
	return true;
}

/*
 * The code points for which Python's str.isdigit() is true (Numeric_Type
 * Digit or Decimal), as ranges.  Taken from the Unicode 14.0 database that
 * the reference's Python 3.11 uses.
 */
static const uint32_t digit_ranges[][2] = {
	{ 0x30, 0x39 }, { 0xB2, 0xB3 }, { 0xB9, 0xB9 }, { 0x660, 0x669 },
	{ 0x6F0, 0x6F9 }, { 0x7C0, 0x7C9 }, { 0x966, 0x96F }, { 0x9E6, 0x9EF },
	{ 0xA66, 0xA6F }, { 0xAE6, 0xAEF }, { 0xB66, 0xB6F }, { 0xBE6, 0xBEF },
	{ 0xC66, 0xC6F }, { 0xCE6, 0xCEF }, { 0xD66, 0xD6F }, { 0xDE6, 0xDEF },
	{ 0xE50, 0xE59 }, { 0xED0, 0xED9 }, { 0xF20, 0xF29 }, { 0x1040, 0x1049 },
	{ 0x1090, 0x1099 }, { 0x1369, 0x1371 }, { 0x17E0, 0x17E9 }, { 0x1810, 0x1819 },
	{ 0x1946, 0x194F }, { 0x19D0, 0x19DA }, { 0x1A80, 0x1A89 }, { 0x1A90, 0x1A99 },
	{ 0x1B50, 0x1B59 }, { 0x1BB0, 0x1BB9 }, { 0x1C40, 0x1C49 }, { 0x1C50, 0x1C59 },
	{ 0x2070, 0x2070 }, { 0x2074, 0x2079 }, { 0x2080, 0x2089 }, { 0x2460, 0x2468 },
	{ 0x2474, 0x247C }, { 0x2488, 0x2490 }, { 0x24EA, 0x24EA }, { 0x24F5, 0x24FD },
	{ 0x24FF, 0x24FF }, { 0x2776, 0x277E }, { 0x2780, 0x2788 }, { 0x278A, 0x2792 },
	{ 0xA620, 0xA629 }, { 0xA8D0, 0xA8D9 }, { 0xA900, 0xA909 }, { 0xA9D0, 0xA9D9 },
	{ 0xA9F0, 0xA9F9 }, { 0xAA50, 0xAA59 }, { 0xABF0, 0xABF9 }, { 0xFF10, 0xFF19 },
	{ 0x104A0, 0x104A9 }, { 0x10A40, 0x10A43 }, { 0x10D30, 0x10D39 }, { 0x10E60, 0x10E68 },
	{ 0x11052, 0x1105A }, { 0x11066, 0x1106F }, { 0x110F0, 0x110F9 }, { 0x11136, 0x1113F },
	{ 0x111D0, 0x111D9 }, { 0x112F0, 0x112F9 }, { 0x11450, 0x11459 }, { 0x114D0, 0x114D9 },
	{ 0x11650, 0x11659 }, { 0x116C0, 0x116C9 }, { 0x11730, 0x11739 }, { 0x118E0, 0x118E9 },
	{ 0x11950, 0x11959 }, { 0x11C50, 0x11C59 }, { 0x11D50, 0x11D59 }, { 0x11DA0, 0x11DA9 },
	{ 0x16A60, 0x16A69 }, { 0x16AC0, 0x16AC9 }, { 0x16B50, 0x16B59 }, { 0x1D7CE, 0x1D7FF },
	{ 0x1E140, 0x1E149 }, { 0x1E2F0, 0x1E2F9 }, { 0x1E950, 0x1E959 }, { 0x1F100, 0x1F10A },
	{ 0x1FBF0, 0x1FBF9 },
};

static bool cp_isdigit(uint32_t cp)
{
	size_t lo = 0, hi = sizeof digit_ranges / sizeof digit_ranges[0];
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (cp < digit_ranges[mid][0])
			hi = mid;
		else if (cp > digit_ranges[mid][1])
			lo = mid + 1;
		else
			return true;
	}
	return false;
}

/* Python's s.isdigit() over s[0..len) (false for "" and for bad UTF-8). */
static bool str_isdigit(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;
	if (len == 0 || !tt_utf8_valid(s, len))
		return false;
	while (i < len) {
		uint32_t cp;
		size_t n;
		if (p[i] < 0x80) {
			cp = p[i];
			n = 1;
		} else if (p[i] < 0xe0) {
			cp = p[i] & 0x1f;
			n = 2;
		} else if (p[i] < 0xf0) {
			cp = p[i] & 0x0f;
			n = 3;
		} else {
			cp = p[i] & 0x07;
			n = 4;
		}
		for (size_t k = 1; k < n; k++)
			cp = (cp << 6) | (p[i + k] & 0x3f);
		if (!cp_isdigit(cp))
			return false;
		i += n;
	}
	return true;
}

bool tt_pin_id_span(const char *ref, size_t *off, size_t *len)
{
	const size_t plen = sizeof REF_PREFIX - 1;
	if (!ref || strncmp(ref, REF_PREFIX, plen) != 0)
		return false;
	const char *rest = ref + plen;
	size_t n = strlen(rest);
	const char *d1 = strchr(rest, '.');
	const char *d2 = d1 ? strchr(d1 + 1, '.') : NULL;
	if (d2 && !strchr(d2 + 1, '.') && str_isdigit(d2 + 1, strlen(d2 + 1)))
		n = (size_t)(d2 - rest);  /* three parts, a generation: dropped */
	if (!pin_dataset_n(rest, n))
		return false;
	if (off)
		*off = plen;
	if (len)
		*len = n;
	return true;
}

bool tt_pin_id_of_ref(const char *ref, char out[TT_PIN_ID_MAX])
{
	size_t off, n;
	if (!tt_pin_id_span(ref, &off, &n) || n >= TT_PIN_ID_MAX)
		return false;
	memcpy(out, ref + off, n);
	out[n] = '\0';
	return true;
}

static bool slug_char(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	       c == '_' || c == '-';
}

/* Appends the slug of bookmark to b; returns 0 or sets err. */
static int put_slug(tt_buf *b, const char *bookmark, tt_error *err)
{
	size_t start = b->len, blen;
	bool run = false;

	if (!bookmark)
		return tt_error_set(err, TT_EUSAGE, "no bookmark name");
	blen = strlen(bookmark);
	/* re.sub("[^0-9A-Za-z_-]+", "-"): every byte of a non-ASCII character
	 * is outside the class, so working on bytes gives the same runs. */
	for (size_t i = 0; i < blen; i++) {
		unsigned char c = (unsigned char)bookmark[i];
		if (slug_char(c)) {
			if (run)
				tt_buf_putc(b, '-');
			run = false;
			tt_buf_putc(b, (char)c);
		} else {
			run = true;
		}
	}
	if (run)
		tt_buf_putc(b, '-');
	if (b->failed)
		return tt_error_oom(err);
	/* .strip("-") */
	size_t s = start, e = b->len;
	while (s < e && b->ptr[s] == '-')
		s++;
	while (e > s && b->ptr[e - 1] == '-')
		e--;
	memmove(b->ptr + start, b->ptr + s, e - s);
	tt_buf_truncate(b, start + (e - s));

	if (b->len - start == blen && memcmp(b->ptr + start, bookmark, blen) == 0)
		return 0;

	tt_buf q = TT_BUF_INIT;
	char hex[17];
	int rc = tt_json_dump_string(&q, bookmark, blen, false);
	if (rc) {
		tt_buf_release(&q);
		return canon_error(err, rc, "bookmark name");
	}
	tt_bytes part = { q.ptr, q.len };
	rc = tt_blake_parts(hex, 8, &part, 1);
	tt_buf_release(&q);
	if (rc)
		return tt_error_set(err, TT_ERROR, "BLAKE2b failed");
	if (b->len == start)
		tt_buf_puts(b, "bm");
	tt_buf_putc(b, '-');
	tt_buf_put(b, hex, 6);
	return b->failed ? tt_error_oom(err) : 0;
}

int tt_bookmark_slug(char **out, const char *bookmark, tt_error *err)
{
	tt_buf b = TT_BUF_INIT;
	int rc = put_slug(&b, bookmark, err);
	if (rc) {
		tt_buf_release(&b);
		return rc;
	}
	*out = tt_buf_detach(&b);
	return *out ? 0 : tt_error_oom(err);
}

int tt_working_ref_name(char **out, const char *dataset_id, const char *bookmark, tt_error *err)
{
	char ds[4 * TT_DATASET_ID_LEN + 1];
	tt_buf b = TT_BUF_INIT;
	int rc = dataset_prefix(ds, dataset_id, err);
	if (rc)
		return rc;
	tt_buf_puts(&b, WORKING_REF_PREFIX);
	tt_buf_puts(&b, ds);
	tt_buf_putc(&b, '.');
	rc = put_slug(&b, bookmark, err);
	if (rc) {
		tt_buf_release(&b);
		return rc;
	}
	*out = tt_buf_detach(&b);
	return *out ? 0 : tt_error_oom(err);
}
