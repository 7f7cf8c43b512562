import CFuzzerDriver
import Glibc

// Hand control to libFuzzer, which parses its own command-line flags
// (-runs=, -max_len=, corpus directories, …) and calls fuzzOneInput.
var argc = CommandLine.argc
var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
let status = LLVMFuzzerRunDriver(&argc, &argv) { data, size in fuzzOneInput(data, size) }
exit(status)
