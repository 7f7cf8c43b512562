// Intentionally empty: this target only exports fuzzer_driver.h to Swift.
#include "fuzzer_driver.h"
