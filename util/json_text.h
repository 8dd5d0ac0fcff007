/* json_text.h — the few JSON writing helpers the file formats and `dump
 * --json` need: strings escaped per RFC 8259 (control characters as \uXXXX,
 * bytes >= 0x80 passed through, since target strings are UTF-8 or close to
 * it; an invalid byte becomes U+FFFD so the document always parses). */
#pragma once

#include <stdio.h>

/* Writes `text` (NULL = "") as a quoted JSON string. */
void json_text__string(FILE *out, const char *text);

/* Length of the well-formed UTF-8 sequence starting at `s` (1..4), or 0
 * when it is not one.  For other writers of untrusted text (SVG/XML). */
size_t json_text__utf8_length(const unsigned char *s);
