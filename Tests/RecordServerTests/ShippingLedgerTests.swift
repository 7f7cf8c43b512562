@testable import RecordServerCore
import Shared
import Testing

/// The sans-I/O half of live shipping: what goes into each chunk, when the remote points move,
/// and how a file's copy is read back from the chunks in the bucket.
struct ShippingLedgerTests {
    private func points(_ lane0: UInt64) -> DurablePoints { DurablePoints(lane0: lane0) }

    @Test func chunksFollowTheFragmentsInOrderAndMoveTheRemotePoint() {
        var ledger = ShippingLedger(epoch: 0)
        let first = ContinuousClock.now
        ledger.fragmentDurable(file: "recording.mp4", path: "/d/recording.mp4", fileEnd: 1000, durable: points(10), at: first)
        ledger.fragmentDurable(file: "recording.mp4", path: "/d/recording.mp4", fileEnd: 1800, durable: points(25), at: first + .seconds(1))
        #expect(ledger.filesToLookUp == ["recording.mp4"])
        #expect(ledger.nextChunk() == nil, "nothing ships before the bucket's copy is known")
        ledger.knownShipped(file: "recording.mp4", end: 0)
        let chunk = ledger.nextChunk()
        #expect(chunk == .init(file: "recording.mp4", path: "/d/recording.mp4", from: 0, to: 1800, durable: points(25), reports: 2, oldest: first),
                "one chunk for both fragments; its lag counts from the older")
        #expect(ledger.remote == DurablePoints())
        ledger.shipped(chunk!)
        #expect(ledger.remote == points(25) && ledger.isCaughtUp && ledger.nextChunk() == nil)

        ledger.fragmentDurable(file: "recording.mp4", path: "/d/recording.mp4", fileEnd: 2500, durable: points(40))
        #expect(ledger.nextChunk()?.from == 1800 && ledger.nextChunk()?.to == 2500)
    }

    @Test func aChunkNeverSpansTwoFilesAndKeepsTheirOrder() {
        var ledger = ShippingLedger(epoch: 0)
        ledger.knownShipped(file: "r-0001.mp4", end: 0)
        ledger.knownShipped(file: "r-0002.mp4", end: 0)
        ledger.fragmentDurable(file: "r-0001.mp4", path: "/d/r-0001.mp4", fileEnd: 500, durable: points(5))
        ledger.fragmentDurable(file: "r-0002.mp4", path: "/d/r-0002.mp4", fileEnd: 300, durable: points(8))
        ledger.fragmentDurable(file: "r-0001.mp4", path: "/d/r-0001.mp4", fileEnd: 700, durable: points(9))
        let first = ledger.nextChunk()!
        #expect(first.file == "r-0001.mp4" && first.to == 500 && first.reports == 1)
        ledger.shipped(first)
        #expect(ledger.remote == points(5))
        let second = ledger.nextChunk()!
        #expect(second.file == "r-0002.mp4" && second.to == 300)
        ledger.shipped(second)
        ledger.shipped(ledger.nextChunk()!)
        #expect(ledger.remote == points(9) && ledger.isCaughtUp)
    }

    @Test func aResumedFileAlreadyInTheBucketIsRemoteAtOnce() {
        var ledger = ShippingLedger(epoch: 1)
        ledger.fragmentDurable(file: "recording.mp4", path: "/d/recording.mp4", fileEnd: 4096, durable: points(120))
        ledger.knownShipped(file: "recording.mp4", end: 4096)
        #expect(ledger.isCaughtUp && ledger.remote == points(120))
    }

    @Test func chunkSizeIsBounded() {
        var ledger = ShippingLedger(epoch: 0)
        ledger.knownShipped(file: "f", end: 0)
        let big = ShippingLedger.maximumChunkBytes
        ledger.fragmentDurable(file: "f", path: "/d/f", fileEnd: big - 10, durable: points(1))
        ledger.fragmentDurable(file: "f", path: "/d/f", fileEnd: big + 10, durable: points(2))
        #expect(ledger.nextChunk()?.to == big - 10)
    }

    @Test func keysRoundTripAndOthersAreIgnored() {
        let key = LiveFragmentKeys.chunk("s1", epoch: 2, file: "recording.mp4", offset: 1234)
        #expect(key == "live/s1/0002/recording.mp4/0000000000001234")
        #expect(LiveFragmentKeys.parse(key, size: 10, sessionID: "s1")
                == .init(key: key, epoch: 2, file: "recording.mp4", offset: 1234, size: 10))
        #expect(LiveFragmentKeys.parse(LiveFragmentKeys.sidecar("s1", file: "session.mcrp"), size: 10, sessionID: "s1") == nil)
        #expect(LiveFragmentKeys.parse(key, size: 0, sessionID: "s1") == nil, "an empty object is no chunk")
        #expect(LiveFragmentKeys.parse("live/s1/0002/../0000000000001234", size: 5, sessionID: "s1") == nil)
        #expect(LiveFragmentKeys.parse(key, size: 10, sessionID: "s") == nil)
    }

    @Test func theChainFollowsOffsetsAndTheHigherEpochWinsWhereTwoStartTogether() {
        func chunk(_ epoch: Int, _ offset: UInt64, _ size: UInt64) -> LiveFragmentKeys.Listed {
            .init(key: LiveFragmentKeys.chunk("s", epoch: epoch, file: "f", offset: offset), epoch: epoch, file: "f", offset: offset, size: size)
        }
        // Epoch 0 shipped 0..<100 and 100..<200 and lost the session at 200, but kept shipping
        // 200..<300 while epoch 1 continued from 200 with 200..<250 and 250..<400.
        let chunks = [chunk(0, 0, 100), chunk(0, 100, 100), chunk(0, 200, 100), chunk(1, 200, 50), chunk(1, 250, 150), chunk(0, 900, 5)]
        let chain = LiveFragmentKeys.chains(chunks)["f"]!
        #expect(chain.map(\.offset) == [0, 100, 200, 250])
        #expect(chain.map(\.epoch) == [0, 0, 1, 1])
        #expect(LiveFragmentKeys.chains([chunk(0, 100, 5)]).isEmpty, "no chain without the file's start")
    }
}
