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

#include "util/buf.h"
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
		if ((!close || p[1] == '/') && memcmp(p + skip, tag, tl) == 0 && p[skip + tl] == '>')
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

/* XML text with its entities decoded.  NULL on OOM. */
char *tt_xml_text(const char *s, const char *e)
{
	tt_buf b = TT_BUF_INIT;
	static const struct {
		const char *ent;
		char c;
	} ents[] = { { "&amp;", '&' }, { "&lt;", '<' }, { "&gt;", '>' }, { "&quot;", '"' },
		     { "&apos;", '\'' } };
	if (!memchr(s, '&', (size_t)(e - s)))
		return tt_strndup(s, (size_t)(e - s)); /* nothing to decode: most keys */
	while (s < e) {
		bool done = false;
		if (*s == '&') {
			for (size_t i = 0; i < sizeof ents / sizeof ents[0] && !done; i++) {
				size_t n = strlen(ents[i].ent);
				if ((size_t)(e - s) >= n && memcmp(s, ents[i].ent, n) == 0) {
					tt_buf_putc(&b, ents[i].c);
					s += n;
					done = true;
				}
			}
			if (!done && e - s > 3 && s[1] == '#') {
				const char *semi = memchr(s, ';', (size_t)(e - s));
				if (semi) {
					unsigned long cp = s[2] == 'x' ? strtoul(s + 3, NULL, 16)
								       : strtoul(s + 2, NULL, 10);
					/* UTF-8 */
					if (cp < 0x80) {
						tt_buf_putc(&b, (char)cp);
					} else if (cp < 0x800) {
						tt_buf_putc(&b, (char)(0xc0 | (cp >> 6)));
						tt_buf_putc(&b, (char)(0x80 | (cp & 0x3f)));
					} else if (cp < 0x10000) {
						tt_buf_putc(&b, (char)(0xe0 | (cp >> 12)));
						tt_buf_putc(&b, (char)(0x80 | ((cp >> 6) & 0x3f)));
						tt_buf_putc(&b, (char)(0x80 | (cp & 0x3f)));
					} else {
						tt_buf_putc(&b, (char)(0xf0 | (cp >> 18)));
						tt_buf_putc(&b, (char)(0x80 | ((cp >> 12) & 0x3f)));
						tt_buf_putc(&b, (char)(0x80 | ((cp >> 6) & 0x3f)));
						tt_buf_putc(&b, (char)(0x80 | (cp & 0x3f)));
					}
					s = semi + 1;
					done = true;
				}
			}
		}
		if (!done) { /* up to the next entity at once */
			const char *amp = memchr(s + 1, '&', (size_t)(e - s - 1));
			size_t run = amp ? (size_t)(amp - s) : (size_t)(e - s);
			tt_buf_put(&b, s, run);
			s += run;
		}
	}
	tt_buf_puts(&b, "");
	if (b.failed) {
		tt_buf_release(&b);
		return NULL;
	}
	return tt_buf_detach(&b);
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
