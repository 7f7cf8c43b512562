#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// Facts about the machine and the files a benchmark wrote, read with independent tools.

/// Packets per stream as ffprobe counts them (demuxing the whole file).
public func ffprobePacketCount(_ path: String) -> Int? {
    guard let out = capture("ffprobe -v error -count_packets -show_entries stream=nb_read_packets -of csv=p=0 " + shellQuote(path))
    else { return nil }
    let counts = out.split(whereSeparator: \.isNewline).compactMap { Int($0.trimmingCharacters()) }
    return counts.isEmpty ? nil : counts.reduce(0, +)
}

extension Substring {
    public func trimmingCharacters() -> Substring {
        var s = self
        while let c = s.first, c.isWhitespace || c == "," { s.removeFirst() }
        while let c = s.last, c.isWhitespace || c == "," { s.removeLast() }
        return s
    }
}

public func machineFacts(workDirectory: String) -> [(String, String)] {
    let cpuinfo = readTextFile("/proc/cpuinfo") ?? ""
    let model = cpuinfo.split(separator: "\n").first { $0.hasPrefix("model name") }
        .flatMap { $0.split(separator: ":", maxSplits: 1).last.map { String($0.trimmingCharacters()) } } ?? "?"
    let memKiB = (readTextFile("/proc/meminfo") ?? "").split(separator: "\n").first { $0.hasPrefix("MemTotal:") }
        .flatMap { Int($0.filter(\.isNumber)) } ?? 0
    var u = utsname()
    uname(&u)
    let kernel = withUnsafeBytes(of: &u.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
    let os = (readTextFile("/etc/os-release") ?? "").split(separator: "\n").first { $0.hasPrefix("PRETTY_NAME=") }
        .map { String($0.dropFirst("PRETTY_NAME=".count).filter { $0 != "\"" }) } ?? "?"
    let ffmpeg = capture("ffmpeg -hide_banner -version 2>/dev/null")?.split(separator: "\n").first.map(String.init) ?? "ffmpeg not found"
    let fs = capture("stat -f -c %T " + shellQuote(workDirectory))?.split(separator: "\n").first.map(String.init) ?? "?"
    let swiftVersion = (getenv("BENCH_SWIFT_VERSION") ?? getenv("MUX_BENCH_SWIFT_VERSION")).map { String(cString: $0) } ?? "see `swift --version`"
    return [
        ("CPU", "\(model), \(sysconf(Int32(_SC_NPROCESSORS_ONLN))) online CPUs (nproc)"),
        ("Memory", "\(format(Double(memKiB) / 1048576, 1)) GiB"),
        ("OS / kernel", "\(os), Linux \(kernel)"),
        ("Swift", swiftVersion + ", release build (-c release)"),
        ("ffmpeg", ffmpeg),
        ("Output directory", "\(workDirectory) (stat -f: \(fs))"),
    ]
}
