// Writes the benchmark content for scripts/bench-agent.sh from the project's own generators
// (Sources/MediaEncoding/TestPatternVideo.swift and TestToneAudio.swift are compiled into this
// tool with swiftc; see the script):
//   gen-content OUT.y4m OUT.wav SECONDS [WIDTH HEIGHT FPS]
// The y4m is YUV4MPEG2 C420 (I420, tightly packed), one FRAME per picture; the wav is PCM s16le
// 48 kHz mono of the test tone (beep at each flash). Deterministic: same arguments, same bytes.
#if canImport(Glibc)
import Glibc
#endif

let args = CommandLine.arguments
guard args.count == 4 || args.count == 7, let seconds = Int(args[3]), seconds > 0 else {
    fputs("usage: gen-content OUT.y4m OUT.wav SECONDS [WIDTH HEIGHT FPS]\n", stderr)
    exit(64)
}
let width = args.count == 7 ? Int(args[4])! : 1280
let height = args.count == 7 ? Int(args[5])! : 720
let fps = args.count == 7 ? Int(args[6])! : 30

func openOrDie(_ path: String) -> UnsafeMutablePointer<FILE> {
    guard let f = fopen(path, "wb") else {
        fputs("gen-content: cannot create \(path): \(String(cString: strerror(errno)))\n", stderr)
        exit(1)
    }
    return f
}

func write(_ bytes: [UInt8], _ f: UnsafeMutablePointer<FILE>) {
    let n = bytes.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, f) }
    guard n == bytes.count else { fputs("gen-content: write failed\n", stderr); exit(1) }
}

// Video: the same pattern the `test:` source draws (label "bench").
let video = TestPatternVideo(width: width, height: height, fps: fps, label: "bench")
let y4m = openOrDie(args[1])
write(Array("YUV4MPEG2 W\(width) H\(height) F\(fps):1 Ip A1:1 C420\n".utf8), y4m)
let frameMarker = Array("FRAME\n".utf8)
for i in 0..<(seconds * fps) {
    let frame = video.frame(index: i)
    write(frameMarker, y4m)
    write(frame.y, y4m)
    write(frame.u, y4m)
    write(frame.v, y4m)
}
fclose(y4m)

// Audio: the `test:audio` tone, mono, 48 kHz.
let tone = TestToneAudio(sampleRate: 48000, channels: 1)
let sampleCount = seconds * 48000
let dataBytes = UInt32(sampleCount * 2)
func le32(_ v: UInt32) -> [UInt8] { (0..<4).map { UInt8((v >> (8 * UInt32($0))) & 0xFF) } }
func le16(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8)] }
let wav = openOrDie(args[2])
var header: [UInt8] = Array("RIFF".utf8) + le32(36 + dataBytes) + Array("WAVE".utf8)
header += Array("fmt ".utf8) + le32(16) + le16(1) + le16(1) + le32(48000) + le32(96000) + le16(2) + le16(16)
header += Array("data".utf8) + le32(dataBytes)
write(header, wav)
var done = 0
while done < sampleCount {
    let n = min(48000, sampleCount - done)
    let pcm = tone.samples(from: Int64(done), count: n)
    var bytes = [UInt8](repeating: 0, count: 2 * n)
    for (i, s) in pcm.enumerated() {
        let u = UInt16(bitPattern: s)
        bytes[2 * i] = UInt8(u & 0xFF)
        bytes[2 * i + 1] = UInt8(u >> 8)
    }
    write(bytes, wav)
    done += n
}
fclose(wav)
