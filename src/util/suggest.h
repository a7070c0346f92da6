/*
 * util/suggest.h - "did you mean": the closest of a set of names to a word
 * that names none of them, by edit distance (insertions, deletions,
 * substitutions and swaps of two neighbouring characters each cost 1).
 */
#ifndef TT_UTIL_SUGGEST_H
#define TT_UTIL_SUGGEST_H

#include <stddef.h>

/* The edit distance between a and b (capped at 255 characters each). */
size_t tt_edit_distance(const char *a, const char *b);

/*
 * The candidate closest to word, or NULL when none is close enough to be a
 * likely typo: at most a third of the word's length away (at least 1), and
 * never the whole word.  A candidate the word is a prefix of (3 characters
 * or more) also counts.  Ties go to the first candidate.
 */
const char *tt_suggest(const char *word, const char *const *cands, size_t n);

#endif
