/*
 * storage/xml.h - the text of a tag in the flat XML responses of S3 and
 * STS (see xml.c).
 */
#ifndef TT_STORAGE_XML_H
#define TT_STORAGE_XML_H

#include <stdbool.h>
#include <stddef.h>

/* The text between <tag> and </tag> at or after p (before end): true with
 * [*vs, *ve); *after (may be NULL) is past the closing tag. */
bool tt_xml_find(const char *p, const char *end, const char *tag, const char **vs, const char **ve,
		 const char **after);
/* A tag tt_xml_entry looks for (len: strlen(tag), at least 1) and its text
 * [vs, ve) (NULL when not found). */
typedef struct tt_xml_field {
	const char *tag;
	size_t len;
	const char *vs, *ve;
} tt_xml_field;
/* The first <tag> at or after p (before end) and the first </tag> after
 * it, and each field's text inside as tt_xml_find would find it there,
 * in one pass: true with *after past the </tag>. */
bool tt_xml_entry(const char *p, const char *end, const char *tag, tt_xml_field *f, size_t n,
		  const char **after);
/* XML text with its entities decoded.  NULL on OOM. */
char *tt_xml_text(const char *s, const char *e);
/* v without one pair of surrounding double quotes (an ETag); a copy, NULL for NULL or OOM. */
char *tt_xml_unquote(const char *v);

#endif
