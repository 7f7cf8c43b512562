import Foundation
import MediaEncoding
import Testing
import TestSupport

/// Records an issue unless `body` throws an ``EncoderError`` with `code`.
func expectEncoderError(_ code: EncoderError.Code, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void) {
    do {
        try body()
        Issue.record("expected \(code), nothing thrown", sourceLocation: sourceLocation)
    } catch let error as EncoderError {
        #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("unexpected error \(error)", sourceLocation: sourceLocation)
    }
}

/// True when `tool` can be found on PATH.
func toolExists(_ tool: String) -> Bool {
    (try? runTool("sh", ["-c", "command -v \(tool)"]).status) == 0
}

let ffmpegAvailable = toolExists("ffmpeg") && toolExists("ffprobe")

extension Data {
    /// Little-endian signed 16-bit samples.
    var int16Samples: [Int16] {
        var result = [Int16](repeating: 0, count: count / 2)
        result.withUnsafeMutableBytes { dst in
            _ = copyBytes(to: dst, from: 0..<(count / 2 * 2))
        }
        return result.map { Int16(littleEndian: $0) }
    }
}
