/*
 * tether/export.h - which names libtether.so exports.
 *
 * The library is compiled with -fvisibility=hidden: nothing is exported
 * unless it is declared between TT_API_BEGIN and TT_API_END, which every
 * public header wraps around its declarations.  Internal modules (the TOML
 * reader, the icechunk readers, ...) stay private, so their names cannot
 * collide with another library's in a program that links both.
 */
#ifndef TETHER_EXPORT_H
#define TETHER_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define TT_API_BEGIN _Pragma("GCC visibility push(default)")
#define TT_API_END _Pragma("GCC visibility pop")
#else
#define TT_API_BEGIN
#define TT_API_END
#endif

#endif
