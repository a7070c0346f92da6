/*
 * storage/xml.c - the little XML the object-store and credential APIs
 * answer in (S3, STS): the text of a tag, entities decoded.  Not a parser:
 * the responses it reads are flat and machine-written.
 */
#define _GNU_SOURCE
#include "storage/xml.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/mem.h"

/* The text between <tag> and </tag> at or after p (before end): true with
 * [*vs, *ve); *after is past the closing tag. */
/* The first "<" + tag + ">" (close: "</" + tag + ">") in [p, end), by the
 * '<'s: an answer has a few a key, and memmem's setup per call cost more
 * than the search. */
static const char *tag_at(const char *p, const char *end, const char *tag, size_t tl, bool close)
{
	size_t skip = close ? 2 : 1;
	while ((p = memchr(p, '<', (size_t)(end - p))) != NULL) {
		if ((size_t)(end - p) < tl + skip + 1)
			return NULL;
		if ((!close || p[1] == '/') && p[skip] == tag[0] && memcmp(p + skip, tag, tl) == 0 &&
		    p[skip + tl] == '>')
			return p;
		p++;
	}
	return NULL;
}

bool tt_xml_find(const char *p, const char *end, const char *tag, const char **vs,
			const char **ve, const char **after)
{
	size_t tl = strlen(tag);
	const char *a, *b;
	if (!(a = tag_at(p, end, tag, tl, false)))
		return false;
	a += tl + 2;
	if (!(b = tag_at(a, end, tag, tl, true)))
		return false;
	*vs = a;
	*ve = b;
	if (after)
		*after = b + tl + 3;
	return true;
}

/* The field of f (n of them) whose tag (after "<" or "</") starts at name,
 * followed by '>' before end; n when none. */
static size_t field_at(const char *name, const char *end, const tt_xml_field *f, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((size_t)(end - name) > f[i].len && name[0] == f[i].tag[0] &&
		    memcmp(name, f[i].tag, f[i].len) == 0 && name[f[i].len] == '>')
			return i;
	return n;
}

bool tt_xml_entry(const char *p, const char *end, const char *tag, tt_xml_field *f, size_t n,
			 const char **after)
{
	size_t tl = strlen(tag), i;
	const char *q;
	for (i = 0; i < n; i++)
		f[i].vs = f[i].ve = NULL;
	if (!(p = tag_at(p, end, tag, tl, false)))
		return false;
	/* every '<' in turn: a field's text runs from its first <tag> to the
	 * first </tag> after that, both before the entry's own close */
	for (q = p + tl + 2; (q = memchr(q, '<', (size_t)(end - q))) != NULL; q++) {
		if (q + 1 < end && q[1] == '/') {
			if ((size_t)(end - q) > tl + 2 && memcmp(q + 2, tag, tl) == 0 && q[tl + 2] == '>') {
				for (i = 0; i < n; i++)
					if (!f[i].ve)
						f[i].vs = NULL; /* opened, never closed */
				*after = q + tl + 3;
				return true;
			}
			if ((i = field_at(q + 2, end, f, n)) < n && f[i].vs && !f[i].ve)
				f[i].ve = q;
		} else if ((i = field_at(q + 1, end, f, n)) < n && !f[i].vs) {
			f[i].vs = q + f[i].len + 2;
		}
	}
	return false;
}

/* The code point of a character reference's digits at s (hex: after
 * "&#x"), as strtoul reads them. */
static unsigned long char_ref(const char *s, bool hex)
{
	return strtoul(s, NULL, hex ? 16 : 10);
}

/* cp as UTF-8 at o (at most four bytes, as the references it comes from
 * are at least four characters long, the decoded text never outgrows the
 * encoded); the bytes written. */
static size_t put_utf8(char *o, unsigned long cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xc0 | (cp >> 6));
		o[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xe0 | (cp >> 12));
		o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		o[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (char)(0xf0 | ((cp >> 18) & 0x07));
	o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	o[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* The entity at s (*s == '&', before e) decoded at o: the bytes written,
 * *used the characters it took; 0 when s starts none (the '&' is copied as
 * it is). */
static size_t entity(const char *s, const char *e, char *o, size_t *used)
{
	static const struct {
		const char *ent;
		size_t len;
		char c;
	} ents[] = { { "&amp;", 5, '&' }, { "&lt;", 4, '<' }, { "&gt;", 4, '>' }, { "&quot;", 6, '"' },
		     { "&apos;", 6, '\'' } };
	const char *semi;
	for (size_t i = 0; i < sizeof ents / sizeof ents[0]; i++)
		if ((size_t)(e - s) >= ents[i].len && memcmp(s, ents[i].ent, ents[i].len) == 0) {
			*o = ents[i].c;
			*used = ents[i].len;
			return 1;
		}
	if (e - s > 3 && s[1] == '#' && (semi = memchr(s, ';', (size_t)(e - s))) != NULL) {
		*used = (size_t)(semi + 1 - s);
		return put_utf8(o, s[2] == 'x' ? char_ref(s + 3, true) : char_ref(s + 2, false));
	}
	return 0;
}

/* XML text with its entities decoded, into one allocation of the encoded
 * length (S3 servers written in Go escape an ETag's quotes as &#34;, so
 * every entry of their listings comes here).  NULL on OOM. */
char *tt_xml_text(const char *s, const char *e)
{
	char *out = malloc((size_t)(e - s) + 1), *o = out;
	const char *amp;
	if (!out)
		return NULL;
	while ((amp = memchr(s, '&', (size_t)(e - s))) != NULL) {
		size_t used = 0, w;
		memcpy(o, s, (size_t)(amp - s));
		o += amp - s;
		if ((w = entity(amp, e, o, &used)) == 0) {
			*o++ = '&';
			used = 1;
		}
		o += w;
		s = amp + used;
	}
	memcpy(o, s, (size_t)(e - s));
	o[e - s] = '\0';
	return out;
}
char *tt_xml_unquote(const char *v)
{
	size_t n;
	if (!v)
		return NULL;
	n = strlen(v);
	if (n >= 2 && v[0] == '"' && v[n - 1] == '"')
		return tt_strndup(v + 1, n - 2);
	return tt_strdup(v);
}
