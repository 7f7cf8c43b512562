#if canImport(Glibc)
import Glibc
#endif
import CALSA
import Foundation

/// What `capture-agent devices` prints: V4L2 capture devices with their formats and sizes,
/// and ALSA capture PCMs. Says plainly when there are none.
enum DeviceListing {
    static func report() -> String {
        var out = "Video (V4L2):\n"
        let nodes = ((try? FileManager.default.contentsOfDirectory(atPath: "/dev")) ?? [])
            .filter { $0.hasPrefix("video") }
            .sorted { $0.localizedStandardCompare($1) == .orderedAscending }
        var cameras = 0
        for node in nodes {
            let path = "/dev/" + node
            do {
                let device = try LibV4L2Device(path: path)
                defer { device.close() }
                let caps = try device.queryCapabilities()
                guard caps.canCaptureAndStream else {
                    out += "  \(path): \(caps.card) (\(caps.driver)) — not a streaming capture node, skipped\n"
                    continue
                }
                cameras += 1
                out += "  \(path): \(caps.card) (\(caps.driver), \(caps.busInfo))\n"
                for format in device.enumerateFormats() {
                    let sizes = format.sizes.isEmpty ? "sizes not enumerable" : format.sizes.joined(separator: ", ")
                    out += "    \(V4L2PixelFormat.fourccString(format.fourcc)) \(format.description): \(sizes)\n"
                }
                out += "    (any of these is delivered as YU12/I420 through libv4lconvert)\n"
            } catch {
                out += "  \(path): cannot query: \(error)\n"
            }
        }
        if cameras == 0 {
            out += nodes.isEmpty
                ? "  none: there is no /dev/video* device on this machine\n"
                : "  none usable: no /dev/video* node is a streaming capture device\n"
        }

        out += "Audio capture (ALSA):\n"
        var card: Int32 = -1
        var cards: [String] = []
        while snd_card_next(&card) >= 0 && card >= 0 {
            var name: UnsafeMutablePointer<CChar>?
            if snd_card_get_longname(card, &name) >= 0, let name {
                cards.append("card \(card): \(String(cString: name))")
                free(name)
            } else {
                cards.append("card \(card)")
            }
        }
        if cards.isEmpty {
            out += "  no sound cards on this machine\n"
        } else {
            for c in cards { out += "  \(c)\n" }
        }
        let pcms = capturePCMs()
        if pcms.isEmpty {
            out += "  no capture PCMs\n"
        } else {
            out += "  capture PCMs (use as alsa:NAME):\n"
            for pcm in pcms { out += "    \(pcm.name)\(pcm.description.isEmpty ? "" : " — \(pcm.description)")\n" }
            if cards.isEmpty {
                out += "  (without a sound card only software PCMs such as `null` can capture: silence)\n"
            }
        }
        return out
    }

    /// PCM names from `snd_device_name_hint` whose direction includes input.
    static func capturePCMs() -> [(name: String, description: String)] {
        var hints: UnsafeMutablePointer<UnsafeMutableRawPointer?>?
        guard snd_device_name_hint(-1, "pcm", &hints) >= 0, let hints else { return [] }
        defer { snd_device_name_free_hint(hints) }
        var result: [(String, String)] = []
        var i = 0
        while let hint = hints[i] {
            i += 1
            func get(_ key: String) -> String? {
                guard let value = snd_device_name_get_hint(hint, key) else { return nil }
                defer { free(value) }
                return String(cString: value)
            }
            // IOID absent means both directions.
            if let io = get("IOID"), io != "Input" { continue }
            guard let name = get("NAME") else { continue }
            let description = (get("DESC") ?? "").replacingOccurrences(of: "\n", with: " — ")
            result.append((name, description))
        }
        return result
    }
}
