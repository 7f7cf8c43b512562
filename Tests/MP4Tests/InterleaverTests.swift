@testable import MP4
import Testing

@Suite("Interleaver")
struct InterleaverTests {
    /// Calls `next()` until it returns nil; returns the released samples' sequences.
    func releaseAll(_ interleaver: inout Interleaver) -> [UInt64] {
        var out: [UInt64] = []
        while let s = interleaver.next() { out.append(s.sequence) }
        return out
    }

    @Test("merges three tracks by DTS and holds back what an empty track could still precede")
    func mergeThreeTracks() {
        var il = Interleaver(trackCount: 3, stallTimeout: 1_000, maxQueuedBytes: 1 << 20)
        // sequence = DTS, to read the order directly
        for dts: Int64 in [0, 30, 60] { il.push(prepared(track: 0, dts: dts, sequence: UInt64(dts))) }
        for dts: Int64 in [10, 40] { il.push(prepared(track: 1, dts: dts, sequence: UInt64(dts))) }
        for dts: Int64 in [20, 50] { il.push(prepared(track: 2, dts: dts, sequence: UInt64(dts))) }
        #expect(il.queuedSampleCount == 7)
        // 50 (track 2) waits: track 1 is empty and its next sample may come at 41...50.
        #expect(releaseAll(&il) == [0, 10, 20, 30, 40])
        #expect(il.queuedSampleCount == 2)
        il.push(prepared(track: 1, dts: 70, sequence: 70))
        // 50 goes; 60 (track 0) waits for track 2, which last delivered 50.
        #expect(releaseAll(&il) == [50])
        il.push(prepared(track: 2, dts: 55, sequence: 55))
        #expect(releaseAll(&il) == [55])  // 60 still waits for track 2 (last 55)
        il.push(prepared(track: 2, dts: 80, sequence: 80))
        #expect(releaseAll(&il) == [60])  // then track 0 is empty: 70 waits for it (last 60)
        #expect(il.drain().map(\.sequence) == [70, 80])
        #expect(il.takeEvents() == [])
    }

    @Test("a released sample's payload is let go at once, also while its queue is not empty")
    func releasedPayloadsAreNotKept() {
        var il = Interleaver(trackCount: 2, stallTimeout: 1_000_000, maxQueuedBytes: 1 << 30)
        // Track 1 runs ahead, so its queue never empties while track 0 is released one by one.
        for k in 0..<300 { il.push(prepared(track: 1, dts: Int64(k) * 10 + 5, sequence: UInt64(2 * k + 1), bytes: 1000)) }
        for k in 0..<200 {
            il.push(prepared(track: 0, dts: Int64(k) * 10, sequence: UInt64(2 * k), bytes: 1000))
            _ = releaseAll(&il)
            #expect(il.referencedPayloadBytes == il.queuedBytes, "after \(k + 1) rounds")
        }
        // Track 0 ended at 1990: track 1's samples from 1995 on (101 of them) wait for it.
        #expect(il.queuedBytes == 101 * 1000)
        _ = il.drain()
        #expect(il.referencedPayloadBytes == 0)
    }

    @Test("equal DTS: lower track index first; a sample at an empty track's last DTS may pass")
    func ties() {
        var il = Interleaver(trackCount: 2, stallTimeout: 1_000, maxQueuedBytes: 1 << 20)
        il.push(prepared(track: 1, dts: 100, sequence: 1))
        il.push(prepared(track: 0, dts: 100, sequence: 2))
        il.push(prepared(track: 0, dts: 200, sequence: 3))
        #expect(releaseAll(&il) == [2, 1])  // then 200 waits for track 1 (last 100)
        il.push(prepared(track: 1, dts: 200, sequence: 4))
        #expect(releaseAll(&il) == [3, 4])
    }

    @Test("an empty track is declared stalled once the candidate is more than stallTimeout past its last DTS")
    func stallAndResume() {
        // Exactly stallTimeout past: still waiting.
        var waiting = Interleaver(trackCount: 2, stallTimeout: 500, maxQueuedBytes: 1 << 20)
        waiting.push(prepared(track: 0, dts: 0, sequence: 1))
        waiting.push(prepared(track: 1, dts: 0, sequence: 2))
        #expect(releaseAll(&waiting) == [1, 2])
        waiting.push(prepared(track: 0, dts: 500, sequence: 3))
        #expect(releaseAll(&waiting) == [])
        #expect(waiting.takeEvents() == [])

        // One tick more: the audio track (1) is stalled, exactly once.
        var il = Interleaver(trackCount: 2, stallTimeout: 500, maxQueuedBytes: 1 << 20)
        il.push(prepared(track: 0, dts: 0, sequence: 1))
        il.push(prepared(track: 1, dts: 0, sequence: 2))
        #expect(releaseAll(&il) == [1, 2])
        il.push(prepared(track: 0, dts: 501, sequence: 3))
        #expect(releaseAll(&il) == [3])
        #expect(il.takeEvents() == [.stalled(trackIndex: 1, lastDTS: 0)])
        il.push(prepared(track: 0, dts: 1_000, sequence: 4))
        il.push(prepared(track: 0, dts: 1_500, sequence: 5))
        #expect(releaseAll(&il) == [4, 5])  // no longer held back
        #expect(il.takeEvents() == [])      // and not reported again

        // It delivers again: resumed, and it holds the others back once more.
        il.push(prepared(track: 1, dts: 1_400, sequence: 6))
        #expect(il.takeEvents() == [.resumed(trackIndex: 1)])
        #expect(releaseAll(&il) == [6])
        il.push(prepared(track: 0, dts: 1_600, sequence: 7))
        #expect(releaseAll(&il) == [])  // waits for track 1 (last 1_400, 200 < 500)
        il.push(prepared(track: 1, dts: 1_700, sequence: 8))
        #expect(releaseAll(&il) == [7])
        #expect(il.takeEvents() == [])
    }

    @Test("a track that never delivered is measured from the earliest DTS seen")
    func neverDelivered() {
        var il = Interleaver(trackCount: 2, stallTimeout: 500, maxQueuedBytes: 15)
        il.push(prepared(track: 0, dts: 100, sequence: 1, bytes: 20))  // over the byte limit: released anyway
        #expect(releaseAll(&il) == [1])
        #expect(il.takeEvents() == [])  // a forced release is not a stall
        il.push(prepared(track: 0, dts: 600, sequence: 2, bytes: 1))
        #expect(releaseAll(&il) == [])  // 600 - 100 = 500: not yet
        var il2 = Interleaver(trackCount: 2, stallTimeout: 500, maxQueuedBytes: 15)
        il2.push(prepared(track: 0, dts: 100, sequence: 1, bytes: 20))
        _ = releaseAll(&il2)
        il2.push(prepared(track: 0, dts: 601, sequence: 2, bytes: 1))
        #expect(releaseAll(&il2) == [2])
        #expect(il2.takeEvents() == [.stalled(trackIndex: 1, lastDTS: nil)])
    }

    @Test("an ended track does not hold the others back")
    func endedTrack() {
        var il = Interleaver(trackCount: 3, stallTimeout: 1_000, maxQueuedBytes: 1 << 20)
        il.endTrack(2)
        for dts: Int64 in [0, 20, 40] { il.push(prepared(track: 0, dts: dts, sequence: UInt64(dts))) }
        for dts: Int64 in [10, 30] { il.push(prepared(track: 1, dts: dts, sequence: UInt64(dts))) }
        #expect(releaseAll(&il) == [0, 10, 20, 30])  // 40 waits for track 1 only
        il.endTrack(1)
        #expect(releaseAll(&il) == [40])
        #expect(il.takeEvents() == [])
    }

    @Test("maxQueuedBytes forces the oldest sample out, one at a time, without declaring a stall")
    func queuedBytesLimit() {
        var il = Interleaver(trackCount: 2, stallTimeout: 1_000_000, maxQueuedBytes: 25)
        il.push(prepared(track: 1, dts: 0, sequence: 1))
        il.push(prepared(track: 0, dts: 0, sequence: 2))
        #expect(releaseAll(&il) == [2, 1])
        for i in 0..<3 { il.push(prepared(track: 0, dts: Int64(10 * (i + 1)), sequence: UInt64(3 + i), bytes: 10)) }
        // 30 bytes queued > 25: the head goes; 20 bytes left is within the limit, so 20 waits again.
        #expect(releaseAll(&il) == [3])
        #expect(il.queuedSampleCount == 2)
        #expect(il.takeEvents() == [])
    }

    @Test("drain returns everything in DTS order, ignoring empty tracks")
    func drain() {
        var il = Interleaver(trackCount: 3, stallTimeout: 10, maxQueuedBytes: 1 << 20)
        il.push(prepared(track: 0, dts: 30, sequence: 30))
        il.push(prepared(track: 0, dts: 60, sequence: 60))
        il.push(prepared(track: 1, dts: 0, sequence: 0))
        il.push(prepared(track: 1, dts: 90, sequence: 90))
        il.push(prepared(track: 2, dts: 45, sequence: 45))
        #expect(il.drain().map(\.sequence) == [0, 30, 45, 60, 90])
        #expect(il.queuedSampleCount == 0)
        #expect(il.next() == nil)
    }

    @Test("thousands of samples keep their order across queue compaction")
    func longRun() {
        var il = Interleaver(trackCount: 2, stallTimeout: 1_000_000, maxQueuedBytes: 1 << 30)
        var released: [Int64] = []
        for i in 0..<3_000 {
            il.push(prepared(track: 0, dts: Int64(i) * 3, sequence: UInt64(i)))
            il.push(prepared(track: 1, dts: Int64(i) * 3 + 1, sequence: UInt64(i)))
            while let s = il.next() { released.append(s.dts) }
        }
        released += il.drain().map(\.dts)
        #expect(released.count == 6_000)
        #expect(released == released.sorted())
    }

    @Test("a track that goes silent while others keep arriving is declared stalled after stallTimeout of media time")
    func silentTrackWhileOthersFlow() {
        var il = Interleaver(trackCount: 2, stallTimeout: 500_000_000, maxQueuedBytes: 64 << 20)
        il.push(prepared(track: 1, dts: 0, sequence: 0))  // the microphone's last packet
        var released = 0
        for i in 0..<300 {  // 10 s of 30 fps video
            il.push(prepared(track: 0, dts: Int64(i) * 33_333_333, sequence: UInt64(i + 1)))
            while il.next() != nil { released += 1 }
        }
        #expect(il.takeEvents().first == .stalled(trackIndex: 1, lastDTS: 0))
        #expect(released > 250)
    }
}
