/* Unit tests for storage/xml: a listing entry's fields in one pass, read
 * as tt_xml_find reads each, and entity decoding. */
#include <stdint.h>
#include <stdlib.h>

#include "harness.h"
#include "storage/xml.h"

static tt_xml_field field(const char *tag)
{
	return (tt_xml_field){ .tag = tag, .len = strlen(tag) };
}

/* [vs, ve) equals want (NULL: not found). */
static int text_is(const tt_xml_field *f, const char *want)
{
	if (!want)
		return f->vs == NULL;
	return f->vs && (size_t)(f->ve - f->vs) == strlen(want) && memcmp(f->vs, want, strlen(want)) == 0;
}

TT_TEST(entry_fields_of_an_s3_page)
{
	const char *page = "<ListBucketResult><IsTruncated>true</IsTruncated>"
			   "<Contents><Key>big/a</Key><ETag>&#34;e1&#34;</ETag><Size>3</Size>"
			   "<StorageClass>STANDARD</StorageClass><LastModified>2026-12-04T18:45:44.000Z"
			   "</LastModified></Contents>"
			   "<Contents><Key>big/b</Key><Size>0</Size></Contents>"
			   "<NextContinuationToken>big/b</NextContinuationToken></ListBucketResult>";
	const char *end = page + strlen(page), *p = page;
	tt_xml_field f[] = { field("Key"), field("ETag"), field("Size"), field("LastModified") };
	CHECK(tt_xml_entry(p, end, "Contents", f, 4, &p));
	CHECK(text_is(&f[0], "big/a") && text_is(&f[1], "&#34;e1&#34;") && text_is(&f[2], "3"));
	CHECK(text_is(&f[3], "2026-12-04T18:45:44.000Z"));
	CHECK(tt_xml_entry(p, end, "Contents", f, 4, &p));
	CHECK(text_is(&f[0], "big/b") && text_is(&f[1], NULL) && text_is(&f[2], "0") && text_is(&f[3], NULL));
	CHECK(!tt_xml_entry(p, end, "Contents", f, 4, &p));
	CHECK(strncmp(p, "<NextContinuationToken>", 23) == 0);
}

TT_TEST(entry_fields_nested_and_unclosed)
{
	/* Azure nests size and time in <Properties>; a field opened and not
	 * closed inside the entry is not found; the entry's close ends it */
	const char *doc = "<Blob><Name>n</Name><Properties><Content-Length>7</Content-Length>"
			  "<Etag>0x1</Etag></Properties><Size>9</Blob><Size>1</Size>";
	const char *after = NULL;
	tt_xml_field f[] = { field("Name"), field("Content-Length"), field("Etag"), field("Size") };
	CHECK(tt_xml_entry(doc, doc + strlen(doc), "Blob", f, 4, &after));
	CHECK(text_is(&f[0], "n") && text_is(&f[1], "7") && text_is(&f[2], "0x1") && text_is(&f[3], NULL));
	CHECK(strcmp(after, "<Size>1</Size>") == 0);
	/* no close of the entry: no entry */
	const char *open = "<Blob><Name>n</Name>";
	CHECK(!tt_xml_entry(open, open + strlen(open), "Blob", f, 4, &after));
}

/* What the parser did before tt_xml_entry: the entry by tt_xml_find, then
 * each field by tt_xml_find inside it. */
static bool entry_by_finds(const char *p, const char *end, const char *tag, tt_xml_field *f, size_t n,
			   const char **after)
{
	const char *cs, *ce;
	if (!tt_xml_find(p, end, tag, &cs, &ce, after))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!tt_xml_find(cs, ce, f[i].tag, &f[i].vs, &f[i].ve, NULL))
			f[i].vs = f[i].ve = NULL;
	return true;
}

TT_TEST(entry_fields_match_finds_on_random_documents)
{
	static const char *const tok[] = { "<E>",  "</E>", "<K>",  "</K>", "<Ka>", "</Ka>", "<S>", "</S>",
					   "<T>",  "</T>", "x",    "yz",   "<",    ">",    "/",    "</",
					   "<O>",  "</O>", "&#34;", "<E",  "K>",   "</K",  "<>",   "</>" };
	char doc[512];
	uint64_t r = 0x9e3779b97f4a7c15u;
	for (int iter = 0; iter < 200000; iter++) {
		size_t len = 0, ntok;
		r = r * 6364136223846793005u + 1442695040888963407u;
		ntok = (size_t)(r >> 58) + 1;
		for (size_t i = 0; i < ntok; i++) {
			const char *t;
			r = r * 6364136223846793005u + 1442695040888963407u;
			t = tok[(r >> 33) % (sizeof tok / sizeof tok[0])];
			if (len + strlen(t) >= sizeof doc)
				break;
			memcpy(doc + len, t, strlen(t));
			len += strlen(t);
		}
		/* no NUL after the document: every read must stay before end */
		char *copy = malloc(len ? len : 1);
		memcpy(copy, doc, len);
		const char *p1 = copy, *p2 = copy, *end = copy + len;
		for (;;) {
			tt_xml_field a[] = { field("K"), field("Ka"), field("S"), field("T") };
			tt_xml_field b[] = { field("K"), field("Ka"), field("S"), field("T") };
			bool ga = tt_xml_entry(p1, end, "E", a, 4, &p1), gb = entry_by_finds(p2, end, "E", b, 4, &p2);
			if (ga != gb || (ga && p1 != p2)) {
				free(copy);
				CHECK_MSG(false, "entry differs on \"%.*s\"", (int)len, doc);
			}
			if (!ga)
				break;
			for (size_t i = 0; i < 4; i++)
				if (a[i].vs != b[i].vs || (a[i].vs && a[i].ve != b[i].ve)) {
					free(copy);
					CHECK_MSG(false, "field %s differs on \"%.*s\"", a[i].tag, (int)len, doc);
				}
		}
		free(copy);
	}
}

TT_TEST(text_decodes_entities)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "plain", "plain" },
		{ "&#34;d41d8cd98f00b204e9800998ecf8427e&#34;", "\"d41d8cd98f00b204e9800998ecf8427e\"" },
		{ "a&amp;b&lt;c&gt;d&quot;e&apos;f", "a&b<c>d\"e'f" },
		{ "&#xe9;t&#233;", "\xc3\xa9t\xc3\xa9" },
		{ "&#x20AC;", "\xe2\x82\xac" },
		{ "&#x1F600;", "\xf0\x9f\x98\x80" },
		{ "AT&T & co", "AT&T & co" },
		{ "&", "&" },
		{ "&#", "&#" },
		{ "&amp", "&amp" },
		{ "x&#x41;&amp;&#66;", "xA&B" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *got = tt_xml_text(cases[i].in, cases[i].in + strlen(cases[i].in));
		int same = got && strcmp(got, cases[i].out) == 0;
		free(got);
		CHECK_MSG(same, "'%s' decoded wrongly", cases[i].in);
	}
}

TT_TEST(text_never_outgrows_its_source)
{
	/* references decode in place into the encoded length: the longest
	 * output per input character is a four-character reference's one
	 * byte, "&#1;", or "&#65536;"'s four bytes from eight */
	const char *in = "&#1;&#65536;&#x10FFFF;&#128;&#2048;&#x7FF;&#xFFFF;";
	char *got = tt_xml_text(in, in + strlen(in));
	CHECK(got != NULL);
	CHECK(strlen(got) <= strlen(in));
	free(got);
}
