import Foundation
import MediaEncoding
import NIOCore
import WireProtocol
@testable import CaptureAgentCore

/// Collects what a pipeline delivers, in order.
final class RecordingSink: PipelineSink, @unchecked Sendable {
    enum Event: Equatable {
        case sample(track: UInt8, pts: Int64, keyframe: Bool)
        case dropped(track: UInt8, count: Int, reason: DropReport.Reason)
        case ended(track: UInt8, reason: TrackEnd.Reason, message: String)
    }
    private let lock = NSLock()
    private var recorded: [Event] = []
    private(set) var samples: [EncodedSample] = []

    var events: [Event] {
        lock.lock()
        defer { lock.unlock() }
        return recorded
    }

    func pipelineDropped(track: UInt8, count: Int, reason: DropReport.Reason) {
        lock.lock(); recorded.append(.dropped(track: track, count: count, reason: reason)); lock.unlock()
    }
    func pipelineProduced(_ sample: EncodedSample) {
        lock.lock(); recorded.append(.sample(track: sample.track, pts: sample.pts, keyframe: sample.isKeyframe)); samples.append(sample); lock.unlock()
    }
    func pipelineEnded(track: UInt8, reason: TrackEnd.Reason, message: String) {
        lock.lock(); recorded.append(.ended(track: track, reason: reason, message: message)); lock.unlock()
    }
}

/// An encoder that turns each unit into one sample carrying its pts, optionally waiting
/// at a gate before its first unit (to make the encoder "slow" deterministically).
final class PassThroughEncoder: SampleEncoder, @unchecked Sendable {
    let track: UInt8
    let firstUnitTaken = DispatchSemaphore(value: 0)
    let gate: DispatchSemaphore?
    private var first = true
    init(track: UInt8, gate: DispatchSemaphore? = nil) {
        self.track = track
        self.gate = gate
    }
    var mediaFormat: MediaFormat { .opus(OpusFormat(sampleRate: 48000, channels: 1, opusHead: Array("OpusHead".utf8) + [1, 1] + Array(repeating: 0, count: 9))) }
    var timescale: UInt32 { 48000 }
    func encode(_ media: CapturedMedia) throws(EncoderError) -> [EncodedSample] {
        if first {
            first = false
            firstUnitTaken.signal()
            gate?.wait()
        }
        return [EncodedSample(track: track, pts: media.pts, dts: media.pts, duration: 1, isKeyframe: true, bytes: [1, 2, 3])]
    }
    func flush() throws(EncoderError) -> [EncodedSample] { [] }
    func inputDiscontinuity() {}
    func requestKeyframe() {}
}

/// A source producing `count` tiny audio units stamped 0, 1, 2, …; before unit
/// `waitBefore` it waits for a semaphore (so the test controls the interleaving).
final class CountingSource: CaptureSource {
    let name = "counting"
    let isLive: Bool
    let format: SourceFormat = .audio(sampleRate: 48000, channels: 1)
    private let count: Int
    private var index = 0
    private let waitBefore: Int?
    private let proceed: DispatchSemaphore?
    private let failAt: Int?
    init(count: Int, isLive: Bool = true, waitBefore: Int? = nil, proceed: DispatchSemaphore? = nil, failAt: Int? = nil) {
        self.count = count
        self.isLive = isLive
        self.waitBefore = waitBefore
        self.proceed = proceed
        self.failAt = failAt
    }
    func start() throws(CaptureError) {}
    func read() throws(CaptureError) -> CapturedMedia? {
        if index == waitBefore { proceed?.wait() }
        if index == failAt { throw CaptureError(.deviceLost, "counting: gone") }
        guard index < count else { return nil }
        defer { index += 1 }
        return .audio([0], frames: 1, pts: Int64(index))
    }
    func stop() {}
}

func encoded(track: UInt8, pts: Int64, size: Int = 100, keyframe: Bool = true, fill: UInt8 = 0) -> EncodedSample {
    EncodedSample(track: track, pts: pts, dts: pts, duration: 33_333_333, isKeyframe: keyframe, bytes: [UInt8](repeating: fill, count: size))
}

extension ResendBuffer {
    /// Everything currently sendable.
    mutating func drain() -> [Outgoing] {
        var out: [Outgoing] = []
        while let o = nextOutgoing() { out.append(o) }
        return out
    }
}

extension ResendBuffer.Outgoing {
    var sample: Sample? {
        if case .sample(let s) = self { return s }
        return nil
    }
    var dropReport: DropReport? {
        if case .dropReport(let d) = self { return d }
        return nil
    }
}

/// Hands a non-Sendable object to one other thread (the test does not touch it meanwhile).
final class UncheckedBox<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}
