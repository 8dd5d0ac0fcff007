/* demangle.h — C++ symbol names made readable. */
#pragma once

/* Returns a malloc'd demangled form of an Itanium-ABI mangled name
 * ("_ZN4demo6Worker3runEv" -> "demo::Worker::run()"), or NULL when the name
 * is not mangled, too long, or malformed. */
char *cxx_name__demangle(const char *name);
