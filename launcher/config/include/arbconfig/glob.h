// Shell-glob matching with fnmatch(3) semantics (flags 0, C locale), written for the class rules:
// it works on string_views (no NUL-terminated copies), never allocates and never consults the
// locale, so the preload library can call it from pthread_create in any program.
#pragma once

#include <string>
#include <string_view>

namespace arbconfig {

// True when `text` matches `pattern`: '*' any run of bytes (including '/' and a leading '.'),
// '?' one byte, '[...]' one byte from a set ('!' or '^' negates; ranges a-z by byte value; classes
// [:alpha:] [:digit:] [:alnum:] [:upper:] [:lower:] [:space:] [:blank:] [:punct:] [:print:]
// [:graph:] [:cntrl:] [:xdigit:], ASCII only), '\' makes the next byte literal (inside brackets
// too). As fnmatch does, an unterminated '[' is a literal '[' and a lone trailing '\' matches
// nothing. Byte-wise: multibyte characters are matched as their bytes.
bool globMatch(std::string_view pattern, std::string_view text);

// True when `pattern` is a glob the rules accept: non-empty, no lone trailing '\', every '['
// closed, only the classes above, no collating elements ([.x.]) or equivalence classes ([=x=]).
// Otherwise false with *reason (if not null) set to a short phrase saying what is wrong and how to
// write it ("'[' at offset 3 is not closed (write \[ for a literal '[')").
bool validateGlob(std::string_view pattern, std::string* reason);

}  // namespace arbconfig
