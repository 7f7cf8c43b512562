import MP4
import NIOCore
import SessionScript
import WireProtocol

/// The server's side of the session (protocol.md §7): every operation goes through a
/// ``SessionValidator`` first, and only what it accepts reaches the muxer, as in the server.
///
/// Oracles, reported as violations:
///  - a sample the validator accepted (within the §6.12 bounds) is never refused by the muxer
///    for its timestamps: the protocol's bounds lie inside the muxer's;
///  - a SessionResume without the negotiated `resume` capability is `unexpectedMessage`.
struct ValidatorGate: SessionGate {
    let script: SessionScript
    let descriptors: [TrackDescriptor]
    var validator: SessionValidator
    var accepted: Set<UInt64> = []
    var firstDTS: Int64?

    static let sessionID: SessionID = "fuzz"

    init(script: SessionScript) {
        self.script = script
        descriptors = script.tracks.map { track in
            TrackDescriptor(id: UInt8(track.id), label: "t\(track.id)", format: track.isVideo
                ? .h264(H264Format(width: 1280, height: 720, sequenceParameterSets: [[0x67]], pictureParameterSets: [[0x68]]))
                : .opus(OpusFormat(sampleRate: 48000, channels: 2, opusHead: [])))
        }
        validator = Self.connect(script)
        _ = try? validator.validate(.sessionOpen(SessionOpen(sessionID: Self.sessionID, tracks: descriptors)))
    }

    static func connect(_ script: SessionScript) -> SessionValidator {
        var v = SessionValidator()
        _ = try? v.validate(.hello(Hello(capabilities: script.resumeCapability ? .all : [.dropReports, .serverCommands],
                                         agentID: "agent", softwareVersion: "fuzz")))
        return v
    }

    mutating func sample(_ s: SessionScript.Sample) -> SessionDrive.Verdict {
        let sample = Sample(track: UInt8(truncatingIfNeeded: s.trackID), flags: s.keyframe ? .keyframe : [], sequence: s.sequence,
                            pts: s.pts, dts: s.dts, duration: s.duration, data: ByteBuffer(bytes: [0x65]))
        do {
            switch try validator.validate(.sample(sample)) {
            case .accept:
                accepted.insert(s.sequence)
                firstDTS = firstDTS ?? s.dts
                return .pass
            default:
                return .drop
            }
        } catch {
            return .endSession // a session-scoped error ends the session (the server finalizes it)
        }
    }

    mutating func trackEnd(trackID: UInt32) -> SessionDrive.Verdict {
        let end = TrackEnd(track: UInt8(truncatingIfNeeded: trackID), reason: .endOfStream)
        guard let action = try? validator.validate(.trackEnd(end)) else { return .endSession }
        return action == .accept ? .pass : .drop
    }

    mutating func reconnect(durableThrough: UInt64) -> SessionDrive.Verdict {
        let highest = validator.highestReceived ?? 0
        validator = Self.connect(script)
        let resume = SessionResume(sessionID: Self.sessionID, lastAcknowledged: durableThrough)
        do {
            guard case .resumeRequested = try validator.validate(.sessionResume(resume)) else { return .endSession }
            precondition(script.resumeCapability, "SessionResume accepted without the resume capability")
        } catch {
            precondition(script.resumeCapability || error.code == .unexpectedMessage, "SessionResume without the capability: \(error)")
            return .endSession
        }
        validator.resumeAccepted(.init(tracks: descriptors, highestReceived: highest, acknowledged: min(durableThrough, highest),
                                       firstDTS: firstDTS))
        return .pass
    }

    func muxed(_ s: SessionScript.Sample, error: MuxerError?) -> [String] {
        guard error?.code == .timestampOutOfRange else { return [] }
        return ["sequence \(s.sequence) passed the validator's timestamp bounds but the muxer refused it: \(error!)"]
    }
}
