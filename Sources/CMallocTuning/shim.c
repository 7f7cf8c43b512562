#include "CMallocTuning.h"
// Any libc header defines __GLIBC__ on glibc (through <features.h>); without one the test
// below is false and the stubs are compiled, silently (that was the case until issue 14).
#include <stdlib.h>
#if defined(__GLIBC__)
#include <malloc.h>
int cmalloc_return_freed_memory(int threshold) {
    return mallopt(M_MMAP_THRESHOLD, threshold) == 1 && mallopt(M_TRIM_THRESHOLD, threshold) == 1;
}
int cmalloc_trim(void) { return malloc_trim(0); }
#else
int cmalloc_return_freed_memory(int threshold) { (void)threshold; return 0; }
int cmalloc_trim(void) { return 0; }
#endif
