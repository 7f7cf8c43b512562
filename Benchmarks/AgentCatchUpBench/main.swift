// agent-catchup-bench: what one step of catching up costs the agent's state machine (a live
// sample enqueued, one resent, an ack now and then) at several backlog sizes. A pump that copied the resend log on every
// call (issue 13, finding 10) costs time in proportion to the backlog, which makes catching up
// quadratic; a flat column means linear catch-up. No network, no encoder: the state machine alone.
//
// Usage: swift run -c release agent-catchup-bench [BACKLOG...]   (default 1000 8000 32000)
import CaptureAgentCore
import NIOCore
import Shared

let backlogs = CommandLine.arguments.dropFirst().compactMap(Int.init)
let sizes = backlogs.isEmpty ? [1_000, 8_000, 32_000] : backlogs
let session: SessionID = "bench-s1"
let tracks = [TrackDescriptor(id: 0, label: "front", timescale: 90000, format: .h264(H264Format(
    width: 1280, height: 720, sequenceParameterSets: [[0x67, 0x64, 0, 0x1F]], pictureParameterSets: [[0x68, 0xEE, 0x3C, 0x80]])))]
let payload = ByteBuffer(repeating: 0x41, count: 1_000)

/// A machine with `backlog` samples sent once, then a lost connection and a resume from 0:
/// every one of them waits to be sent again.
func machineWithBacklog(_ backlog: Int) -> AgentStateMachine {
    var m = AgentStateMachine(configuration: .init(agentID: "bench", bufferLimits: .init(maxBytes: 1 << 34, maxDuration: .max)),
                              random: SystemRandomNumberGenerator())
    let reply = HelloReply(serverID: "server", softwareVersion: "bench", heartbeatIntervalMillis: 5_000, idleTimeoutMillis: 30_000)
    _ = m.connectionEstablished(now: 0)
    _ = m.received(.helloReply(reply), now: 0)
    _ = m.openSession(id: session, labels: [], tracks: tracks, now: 0)
    _ = m.received(.sessionAccepted(SessionAccepted(sessionID: session, acknowledged: 0)), now: 0)
    for i in 0..<backlog {
        let t = Int64(i) * 33_333_333
        _ = m.enqueue(EncodedSample(track: 0, pts: t, dts: t, duration: 33_333_333, isKeyframe: i % 30 == 0, data: payload), now: t)
    }
    _ = m.pump(now: 0)
    _ = m.connectionLost(now: 1)
    _ = m.connectionEstablished(now: 2)
    _ = m.received(.helloReply(reply), now: 2)
    _ = m.received(.sessionAccepted(SessionAccepted(sessionID: session, acknowledged: 0)), now: 2)
    return m
}

print("backlog (unacknowledged samples) | µs per step (enqueue a live sample, resend one, an ack every 30th) | steps per second")
print("---: | ---: | ---:")
for backlog in sizes {
    var m = machineWithBacklog(backlog)
    let steps = min(backlog, 2_000)
    let clock = ContinuousClock()
    var sent = 0
    var acked: UInt64 = 0
    let elapsed = clock.measure {
        for i in 0..<steps {
            // Catching up while capture goes on: a new sample arrives, one is resent, and the
            // server acknowledges a fragment's worth now and then.
            let t = Int64(backlog + i) * 33_333_333
            _ = m.enqueue(EncodedSample(track: 0, pts: t, dts: t, duration: 33_333_333, isKeyframe: false, data: payload), now: t)
            sent += m.pump(maxBytes: 1, now: 3).count
            if i % 30 == 29 {
                acked += 30
                _ = m.received(.ack(Ack(sessionID: session, sequence: acked)), now: 3)
            }
        }
    }
    let micros = Double(elapsed.components.attoseconds) / 1e12 + Double(elapsed.components.seconds) * 1e6
    precondition(sent >= steps, "each step sends one sample")
    print("\(backlog) | \(String(format: "%.2f", micros / Double(steps))) | \(String(format: "%.0f", Double(steps) / (micros / 1e6)))")
}
