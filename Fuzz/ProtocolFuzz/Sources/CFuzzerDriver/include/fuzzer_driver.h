#ifndef FUZZER_DRIVER_H
#define FUZZER_DRIVER_H
#include <stddef.h>
#include <stdint.h>

// libFuzzer's driver (compiler-rt, LLVM >= 11). SwiftPM links executables with their
// own `main`, so instead of libFuzzer's `main` we call the driver from main.swift.
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));

#endif
