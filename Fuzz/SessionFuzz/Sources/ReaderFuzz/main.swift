import CFuzzerDriver
import Glibc
import SessionScript

// The file side of the fuzzing (docs/protocol.md §11.2): each input is the bytes of an MP4
// file, read, recovered and resumed on memory files by ReaderDrive. A trap, a hang (-timeout),
// a large allocation (-rss_limit_mb, -malloc_limit_mb) or a violated expectation is a finding.
//
// READER_FUZZ_SEEDS=DIR writes the seed files (recordings as the muxer leaves them) into DIR
// first; scripts/fuzz-reader.sh does that for the working corpus.
if let directory = getenv("READER_FUZZ_SEEDS").map({ String(cString: $0) }) {
    for (index, seed) in ReaderDrive.seeds().enumerated() {
        let path = "\(directory)/seed-\(index).mp4"
        guard let file = fopen(path, "wb") else { continue }
        _ = seed.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, file) }
        fclose(file)
    }
}

/// The fuzzed function; libFuzzer's runtime also expects the symbol by this name.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data, size > 0 else { return 0 }
    let violations = ReaderDrive.run(Array(UnsafeBufferPointer(start: data, count: size)))
    precondition(violations.isEmpty, violations.joined(separator: "; "))
    return 0
}

var argc = CommandLine.argc
var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
let status = LLVMFuzzerRunDriver(&argc, &argv) { data, size in fuzzOneInput(data, size) }
exit(status)
