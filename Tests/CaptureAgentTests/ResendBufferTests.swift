import NIOCore
import Testing
import WireProtocol
@testable import CaptureAgentCore

@Suite("Resend buffer: bounds, drop-oldest reporting, acks, resume")
struct ResendBufferTests {
    let big = ResendBuffer.Limits(maxBytes: 1 << 30, maxDuration: 1 << 60)

    @Test func sequencesStartAtOneWithoutGapsAndAcksFreeMemory() {
        var buffer = ResendBuffer(limits: big)
        for i in 0..<5 { _ = buffer.append(encoded(track: 1, pts: Int64(i), size: 100)) }
        #expect(buffer.byteCount == 5 * 134)
        let out = buffer.drain()
        #expect(out.compactMap(\.sample).map(\.sequence) == [1, 2, 3, 4, 5])
        #expect(buffer.lastSequence == 5)
        #expect(buffer.unacknowledgedCount == 5)
        buffer.acknowledge(3)
        #expect(buffer.unacknowledgedCount == 2)
        #expect(buffer.byteCount == 2 * 134)
        buffer.acknowledge(2)  // acks never go back
        #expect(buffer.acknowledged == 3)
        buffer.acknowledge(99)  // never beyond what was sent
        #expect(buffer.acknowledged == 5)
        #expect(buffer.byteCount == 0)
        #expect(buffer.isDrained)
    }

    @Test func theByteBoundDropsTheOldestUnsentSampleAndReportsIt() {
        // Room for three 100-byte samples.
        var buffer = ResendBuffer(limits: .init(maxBytes: 3 * 134, maxDuration: 1 << 60))
        for i in 0..<3 { #expect(!buffer.append(encoded(track: 2, pts: Int64(i), fill: UInt8(i))).droppedAny) }
        let result = buffer.append(encoded(track: 2, pts: 3, fill: 3))
        #expect(result.dropped == [2: 1])
        #expect(buffer.overflowDrops == 1)
        #expect(buffer.byteCount == 3 * 134)
        let out = buffer.drain()
        #expect(out.count == 4)
        #expect(out[0].dropReport == DropReport(track: 2, reason: .queueOverflow, count: 1))
        // Sequence numbers stay gap-free; the next sample of the track is flagged.
        #expect(out.compactMap(\.sample).map(\.sequence) == [1, 2, 3])
        #expect(out[1].sample?.flags.contains(.discontinuity) == true)
        #expect(out[1].sample?.data.getInteger(at: 0, as: UInt8.self) == 1)
        #expect(out[2].sample?.flags.contains(.discontinuity) == false)
    }

    @Test func aBurstOfDropsIsOneReport() {
        var buffer = ResendBuffer(limits: .init(maxBytes: 2 * 134, maxDuration: 1 << 60))
        for i in 0..<10 { _ = buffer.append(encoded(track: 1, pts: Int64(i))) }
        let out = buffer.drain()
        #expect(out.compactMap(\.dropReport) == [DropReport(track: 1, reason: .queueOverflow, count: 8)])
        #expect(out.compactMap(\.sample).map(\.pts) == [8, 9])
    }

    @Test func theDurationBoundCountsTheSpanOfKeptSamples() {
        var buffer = ResendBuffer(limits: .init(maxBytes: 1 << 30, maxDuration: 1_000_000_000))
        for i in 0...10 { _ = buffer.append(encoded(track: 1, pts: Int64(i) * 100_000_000)) }  // exactly 1 s span
        #expect(buffer.overflowDrops == 0)
        let r = buffer.append(encoded(track: 1, pts: 1_100_000_000))
        #expect(r.dropped == [1: 1])
        #expect(buffer.drain().compactMap(\.sample).first?.pts == 100_000_000)
    }

    @Test func samplesWithASequenceNumberAreNeverDroppedTheNewOneIs() {
        var buffer = ResendBuffer(limits: .init(maxBytes: 2 * 134, maxDuration: 1 << 60))
        _ = buffer.append(encoded(track: 1, pts: 0))
        _ = buffer.append(encoded(track: 1, pts: 1))
        #expect(buffer.drain().count == 2)  // sent, not acknowledged (e.g. the link is down)
        let r = buffer.append(encoded(track: 1, pts: 2))
        #expect(r.dropped == [1: 1])
        buffer.resume(from: 0)
        let out = buffer.drain()
        #expect(out.compactMap(\.sample).map(\.sequence) == [1, 2])
        #expect(out.compactMap(\.dropReport) == [DropReport(track: 1, reason: .queueOverflow, count: 1)])
        // The next new sample carries on at 3 with the discontinuity flag.
        _ = buffer.append(encoded(track: 1, pts: 3))  // still over the bound: dropped too
        buffer.acknowledge(2)
        _ = buffer.append(encoded(track: 1, pts: 4))
        let next = buffer.drain()
        #expect(next.compactMap(\.sample).map(\.sequence) == [3])
        #expect(next.compactMap(\.sample).first?.flags.contains(.discontinuity) == true)
    }

    @Test func droppingVideoAlsoDropsItsDependentFramesAndAsksForAKeyframe() {
        var buffer = ResendBuffer(limits: .init(maxBytes: 4 * 134, maxDuration: 1 << 60), videoTracks: [1])
        _ = buffer.append(encoded(track: 1, pts: 0, keyframe: true))
        _ = buffer.append(encoded(track: 2, pts: 0))  // audio
        _ = buffer.append(encoded(track: 1, pts: 1, keyframe: false))
        _ = buffer.append(encoded(track: 1, pts: 2, keyframe: false))
        let r = buffer.append(encoded(track: 1, pts: 3, keyframe: false))
        #expect(r.dropped == [1: 1])
        #expect(r.keyframeRequests == [1])
        var out = buffer.drain()
        _ = buffer.append(encoded(track: 1, pts: 4, keyframe: true))
        out += buffer.drain()
        let summary = out.map { o -> String in
            switch o {
            case .sample(let s): "s\(s.track)@\(s.pts)\(s.flags.contains(.discontinuity) ? "!" : "")"
            case .dropReport(let d): "drop\(d.track)x\(d.count)"
            case .trackEnd(let t): "end\(t.track)"
            }
        }
        // The keyframe at 0 went first; 1, 2, 3 cannot be decoded without it: reported as one drop.
        #expect(summary == ["drop1x1", "s2@0", "drop1x3", "s1@4!"])
        #expect(out.compactMap(\.sample).map(\.sequence) == [1, 2])
        #expect(buffer.byteCount == 2 * 134)
    }

    @Test func sourceDropsAreReportedWhereTheyHappened() {
        var buffer = ResendBuffer(limits: big)
        _ = buffer.append(encoded(track: 1, pts: 0))
        buffer.recordDrop(track: 1, reason: .encoderError, count: 2)
        buffer.recordDrop(track: 1, reason: .encoderError, count: 1)
        _ = buffer.append(encoded(track: 1, pts: 3))
        let out = buffer.drain()
        #expect(out.count == 3)
        #expect(out[0].sample?.flags.contains(.discontinuity) == false)
        #expect(out[1].dropReport == DropReport(track: 1, reason: .encoderError, count: 3))
        #expect(out[2].sample?.flags.contains(.discontinuity) == true)
    }

    @Test func resumeResendsExactlyWhatTheServerLacksIncludingTrackEnds() {
        var buffer = ResendBuffer(limits: big)
        for i in 0..<4 { _ = buffer.append(encoded(track: 1, pts: Int64(i), fill: UInt8(i))) }
        _ = buffer.append(encoded(track: 2, pts: 0))
        buffer.endTrack(TrackEnd(track: 2, reason: .endOfStream))
        _ = buffer.append(encoded(track: 1, pts: 4, fill: 4))
        let first = buffer.drain()
        #expect(first.compactMap(\.sample).map(\.sequence) == [1, 2, 3, 4, 5, 6])
        buffer.acknowledge(2)
        // Link lost; the server's durable point turns out to be 3 (an Ack was lost on the way).
        buffer.resume(from: 3)
        let resent = buffer.drain()
        #expect(resent.compactMap(\.sample).map(\.sequence) == [4, 5, 6])
        #expect(resent.map(\.message) == Array(first.suffix(4)).map(\.message))
        #expect(resent.contains(.trackEnd(TrackEnd(track: 2, reason: .endOfStream))))
        #expect(buffer.acknowledged == 3)
        // Once a sample after the TrackEnd is acknowledged the TrackEnd is not resent any more.
        buffer.acknowledge(6)
        buffer.resume(from: 6)
        #expect(buffer.drain().isEmpty)
        #expect(buffer.isDrained)
    }

    @Test func newSamplesFollowResentOnes() {
        var buffer = ResendBuffer(limits: big)
        _ = buffer.append(encoded(track: 1, pts: 0))
        _ = buffer.append(encoded(track: 1, pts: 1))
        _ = buffer.drain()
        _ = buffer.append(encoded(track: 1, pts: 2))  // arrived while the link was down
        buffer.resume(from: 1)
        #expect(buffer.drain().compactMap(\.sample).map { [$0.sequence, UInt64($0.pts)] } == [[2, 1], [3, 2]])
    }

    // MARK: Two acknowledgement levels (protocol.md §6.13a)

    @Test func anAckOfTheServersHostKeepsSamplesARemoteAckFreesThem() {
        var buffer = ResendBuffer(limits: big)
        for i in 0..<5 { _ = buffer.append(encoded(track: 1, pts: Int64(i), size: 100)) }
        _ = buffer.drain()
        buffer.acknowledge(4, .keep)
        #expect(buffer.acknowledged == 4 && buffer.freedThrough == 0)
        #expect(buffer.unacknowledgedCount == 5)
        #expect(buffer.byteCount == 5 * 134)
        buffer.acknowledge(2, .free)
        #expect(buffer.acknowledged == 4, "a RemoteAck below the Ack point does not move it back")
        #expect(buffer.freedThrough == 2 && buffer.unacknowledgedCount == 3 && buffer.byteCount == 3 * 134)
        buffer.acknowledge(3, .keep)  // acks never go back
        #expect(buffer.acknowledged == 4 && buffer.freedThrough == 2)
        #expect(!buffer.isDrained, "sent but held until durable beyond the host")
        buffer.acknowledge(5, .free)  // above the Ack point: an Ack too
        #expect(buffer.acknowledged == 5 && buffer.freedThrough == 5)
        #expect(buffer.byteCount == 0 && buffer.isDrained)
    }

    /// Another server took the session over with less than the lost host had acknowledged: the
    /// agent resends from its point, the samples between the RemoteAck and the old Ack included,
    /// each TrackEnd at its place, and frees nothing more than the RemoteAck did.
    @Test func aResumeBelowTheHostsAckResendsWhatLiesAboveTheRemoteAck() {
        var buffer = ResendBuffer(limits: big)
        for i in 0..<3 { _ = buffer.append(encoded(track: 1, pts: Int64(i), fill: UInt8(i))) }
        buffer.endTrack(TrackEnd(track: 1, reason: .endOfStream))
        for i in 3..<6 { _ = buffer.append(encoded(track: 2, pts: Int64(i), fill: UInt8(i))) }
        let first = buffer.drain()
        #expect(first.compactMap(\.sample).map(\.sequence) == [1, 2, 3, 4, 5, 6])
        buffer.acknowledge(5, .keep)
        buffer.acknowledge(2, .free)

        #expect(buffer.resume(from: 2, .keep) == .resending)
        let resent = buffer.drain()
        #expect(resent.map(\.message) == Array(first.suffix(5)).map(\.message), "3, the TrackEnd, 4, 5, 6: byte for byte")
        #expect(buffer.acknowledged == 5, "the next resume still names the highest Ack")
        #expect(buffer.freedThrough == 2 && buffer.unacknowledgedCount == 4)

        // At 3 the TrackEnd (sent after 3) is still owed; past 4 it is not.
        #expect(buffer.resume(from: 3, .keep) == .resending)
        #expect(buffer.drain().map(\.message) == Array(first.suffix(4)).map(\.message))
        #expect(buffer.resume(from: 4, .keep) == .resending)
        #expect(buffer.drain().compactMap(\.sample).map(\.sequence) == [5, 6])
    }

    @Test func aResumeOnALinkWithoutRemoteAcksFreesThroughTheServersPoint() {
        var buffer = ResendBuffer(limits: big)
        for i in 0..<6 { _ = buffer.append(encoded(track: 1, pts: Int64(i))) }
        _ = buffer.drain()
        buffer.acknowledge(5, .keep)
        buffer.acknowledge(1, .free)
        #expect(buffer.resume(from: 4, .free) == .resending)
        #expect(buffer.freedThrough == 4 && buffer.acknowledged == 5)
        #expect(buffer.unacknowledgedCount == 2)
        #expect(buffer.drain().compactMap(\.sample).map(\.sequence) == [5, 6])
    }

    /// A point below what was freed (a server that lost acknowledged data, §6.7) cannot be
    /// resumed without a gap: the buffer says which samples are gone.
    @Test func aResumeBelowWhatWasFreedNamesTheMissingSamples() {
        var buffer = ResendBuffer(limits: big)
        for i in 0..<6 { _ = buffer.append(encoded(track: 1, pts: Int64(i))) }
        _ = buffer.drain()
        buffer.acknowledge(4)
        #expect(buffer.resume(from: 2) == .gap(missing: 3...4))
        #expect(buffer.acknowledged == 4 && buffer.freedThrough == 4)
        #expect(buffer.drain().compactMap(\.sample).map(\.sequence) == [5, 6])
    }
}
