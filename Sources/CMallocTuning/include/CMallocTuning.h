#ifndef CMALLOCTUNING_H
#define CMALLOCTUNING_H
// glibc's mallopt and its M_* constants live in <malloc.h>, which Swift's Glibc module does
// not export. One function sets what record-server needs (see RecordServerCommand).

/// Allocations of at least `threshold` bytes get their own mapping (returned to the system
/// when freed), and the heap is trimmed once `threshold` bytes are free at its top.
/// Returns 1 when both settings took effect, 0 otherwise (or off glibc).
int cmalloc_return_freed_memory(int threshold);

/// Gives free memory anywhere in the heap back to the system (malloc_trim(0)): what many
/// short connections freed lies between live allocations, where the top-of-heap trim never
/// reaches. Returns 1 if memory was released.
int cmalloc_trim(void);
#endif
