import Foundation
import Logging
import NIOCore
@testable import RecordServerCore
import Shared
import Testing
import TestSupport

/// A session across agents inside one registry, without sockets: two fake agent links, two
/// agents' `SessionOpen`s joining the group, their samples in two lanes. What the parts do to
/// each other — acks, a close that waits for the rest of its samples, a refused sample that
/// ends one part only — is judged on the file by ffprobe.
@Suite("Sessions across agents in the registry")
struct SessionAcrossAgentsRegistryTests {
    /// A registry on a fresh data directory, with agents "cam" and "mic" connected and their
    /// clocks estimated: cam's clock reads the server's, mic's is 5 s ahead.
    private static func registry(_ directory: TemporaryDirectory) async throws -> SessionRegistry {
        var settings = SessionSettings()
        settings.durability = .none
        let dir = directory.path
        let registry = SessionRegistry(catalog: try Catalog(path: dir + "/catalog.sqlite"), settings: settings, maxSessions: 8,
                                       metrics: ServerMetrics(), logger: Logger(label: "across") { _ in SwiftLogNoOpLogHandler() },
                                       dataDirectory: dir) { _, id, _ in
            let path = dir + "/" + id.value
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            return (path, "recording")
        }
        for (connection, (agent, offset)) in [("cam", Int64(0)), ("mic", Int64(5_000_000_000))].enumerated() {
            let info = ConnectedAgentInfo(id: agent, address: "127.0.0.1", softwareVersion: "test", connectedAt: Date(), lastSeen: Date())
            await registry.agentConnected(.init(connection: UInt64(connection + 1), info: info, send: { _ in }))
            // 30 exchanges over a clean 0.2 ms round trip: the agent's clock `offset` ahead.
            var history = ClockEstimator()
            for k in Int64(0)..<30 {
                let sent = k * 1_000_000_000
                history.add(ClockExchange(serverSent: sent, agentReceived: sent + 100_000 + offset, agentSent: sent + 100_000 + offset,
                                          serverReceived: sent + 200_000))
            }
            await registry.agentSeen(agent, connection: UInt64(connection + 1), roundTripMillis: 0.2, history: history, sessionID: nil)
        }
        return registry
    }

    /// cam's video and mic's audio of one synthetic recording, each as its agent sends it: its
    /// own session id, its own track ids and sequences from 1, mic's times on its own clock.
    private static func parts(seconds: Double = 3) throws -> (cam: SessionContent, mic: SessionContent) {
        let all = try SessionContent.make(sessionID: "unused", seconds: seconds, videos: ["front"], audio: "mic")
        func part(_ id: SessionID, track: UInt8, shift: Int64) -> SessionContent {
            var samples = all.samples.filter { $0.track == track }
            for i in samples.indices {
                samples[i].track = 1
                samples[i].sequence = UInt64(i + 1)
                samples[i].pts += shift
                samples[i].dts += shift
            }
            var descriptor = all.open.tracks.first { $0.id == track }!
            descriptor.id = 1
            return SessionContent(open: SessionOpen(sessionID: id, labels: [], tracks: [descriptor]), samples: samples, counts: [1: samples.count])
        }
        return (part("cam-part", track: 0, shift: 0), part("mic-part", track: 1, shift: 5_000_000_000))
    }

    /// Starts the group and has both agents open their parts; returns the session and each lane.
    private static func form(_ registry: SessionRegistry, _ cam: SessionContent, _ mic: SessionContent) async throws
        -> (session: RecordingSession, cam: UInt16, mic: UInt16, id: String) {
        let start = Task { try await registry.startSession(agentIDs: ["cam", "mic"], labels: [:]) }
        // The start is pending once the registry knows the group; then each agent opens its part.
        _ = try await eventually("the group to be pending") { await registry.pendingGroupID(of: "cam") }
        async let camOpen = registry.openSession(cam.open, agentID: "cam", connection: 1)
        async let micOpen = registry.openSession(mic.open, agentID: "mic", connection: 2)
        let (a, b) = try await (camOpen, micOpen)
        #expect(a.0 === b.0, "one session for both agents")
        return (a.0, a.1, b.1, try await start.value)
    }

    @Test func eachAgentIsAcknowledgedForItsOwnSamplesAndTheFileHoldsBothTracks() async throws {
        let directory = try TemporaryDirectory(prefix: "across-registry")
        let registry = try await Self.registry(directory)
        let (cam, mic) = try Self.parts()
        let (session, camLane, micLane, id) = try await Self.form(registry, cam, mic)
        #expect(id.hasPrefix("group-") && camLane == 0 && micLane == 1)
        #expect(await registry.session(try SessionID(validating: id)) === session, "found under the session's id")
        #expect(await registry.session("mic-part") === session, "and under each part's id")

        // Interleaved as two connections would deliver them, a second's worth at a time.
        var camAck: UInt64 = 0, micAck: UInt64 = 0
        for chunk in 0..<3 {
            let c = cam.samples[(cam.samples.count * chunk / 3)..<(cam.samples.count * (chunk + 1) / 3)]
            let m = mic.samples[(mic.samples.count * chunk / 3)..<(mic.samples.count * (chunk + 1) / 3)]
            let a = await session.append(c, lane: camLane)
            let b = await session.append(m, lane: micLane)
            #expect(a.failure == nil && b.failure == nil)
            camAck = a.acknowledged ?? camAck
            micAck = b.acknowledged ?? micAck
            camAck = (await session.takeAck(lane: camLane)) ?? camAck
        }
        #expect(camAck > 0 && camAck <= UInt64(cam.samples.count), "cam's ack is in cam's own numbers: \(camAck)")
        #expect(micAck > 0 && micAck <= UInt64(mic.samples.count), "mic's ack is in mic's own numbers: \(micAck)")

        // cam closes first: its answer waits until everything it sent is durable, which mic's
        // close (the last part, finalizing the file) brings.
        let camClose = Task { try await session.close(lane: camLane) }
        _ = try await eventually("cam's part to end") { await session.members[Int(camLane)].hasLeft ? true : nil }
        #expect(await !session.isFinished, "mic still records")
        let micDurable = try await session.close(lane: micLane)
        let camDurable = try await camClose.value
        #expect(camDurable == UInt64(cam.samples.count) && micDurable == UInt64(mic.samples.count), "\(camDurable), \(micDurable)")
        #expect(await session.isFinished)

        let file = directory.path + "/" + id + "/recording.mp4"
        #expect(try Oracle.decodeErrors(file) == nil)
        let streams = try Oracle.streams(file)
        #expect(streams.map(\.codec) == ["h264", "opus"])
        #expect(streams.map(\.packets) == [cam.samples.count, mic.samples.count], "every sample of both agents once")
        // mic's clock is 5 s ahead: mapped onto the server's, its audio starts with the video.
        let audio = try Oracle.packetTimes(file, stream: 1), video = try Oracle.packetTimes(file, stream: 0)
        #expect(abs(Double(audio.first ?? 0) / 48000 - Double(video.first ?? 0) / 90000) < 0.05)
    }

    @Test func aRefusedSampleEndsOnlyItsAgentsPart() async throws {
        let directory = try TemporaryDirectory(prefix: "across-refusal")
        let registry = try await Self.registry(directory)
        let (cam, mic) = try Self.parts()
        let (session, camLane, micLane, id) = try await Self.form(registry, cam, mic)
        let half = mic.samples.count / 2
        _ = await session.append(cam.samples[..<(cam.samples.count / 2)], lane: camLane)
        _ = await session.append(mic.samples[..<half], lane: micLane)
        // An empty Opus packet is content the muxer cannot store: mic's part ends before it.
        var bad = mic.samples[half]
        bad.data = ByteBuffer()
        let refused = await session.append([bad][...], lane: micLane)
        #expect(refused.failure?.error.code == .sampleRefused, "\(String(describing: refused.failure))")
        #expect(await session.members[Int(micLane)].hasLeft)
        #expect(await !session.isFinished, "cam's part goes on")
        let more = await session.append(cam.samples[(cam.samples.count / 2)...], lane: camLane)
        #expect(more.failure == nil)
        #expect(try await session.close(lane: camLane) == UInt64(cam.samples.count))
        let file = directory.path + "/" + id + "/recording.mp4"
        #expect(try Oracle.decodeErrors(file) == nil)
        #expect(try Oracle.streams(file).map(\.packets) == [cam.samples.count, half], "all of cam's, mic's up to the refused one")
    }

    @Test func anAgentNotBackWithinTheResumeWindowHasItsTracksEndedAndTheOthersGoOn() async throws {
        let directory = try TemporaryDirectory(prefix: "across-window")
        let registry = try await Self.registry(directory)
        let (cam, mic) = try Self.parts(seconds: 4)
        let (session, camLane, micLane, id) = try await Self.form(registry, cam, mic)
        let camHalf = cam.samples.count / 2, micHalf = mic.samples.count / 2
        _ = await session.append(cam.samples[..<camHalf], lane: camLane)
        _ = await session.append(mic.samples[..<micHalf], lane: micLane)
        // mic's connection ends; its part waits for a resume until the window's end.
        let now = ContinuousClock.now
        #expect(await session.detach(connection: 2, now: now) == false, "the session goes on")
        #expect(await session.snapshot().state == "recording", "cam is still attached")
        await registry.sweep(now: now + .seconds(1))
        #expect(await !session.members[Int(micLane)].hasLeft, "within the window mic's part waits")
        await registry.sweep(now: now + registry.resumeWindow + .seconds(1))
        #expect(await session.members[Int(micLane)].hasLeft, "past the window mic's part has ended")
        #expect(await !session.isFinished, "cam's goes on")
        #expect(await registry.liveSessionCount == 1)
        #expect(await registry.session("mic-part") === session, "mic's id still finds the session (and a late resume is refused)")
        await #expect(throws: ProtocolError.self) { try await registry.resumeSession("mic-part", agentID: "mic", connection: 3) }
        let rest = await session.append(cam.samples[camHalf...], lane: camLane)
        #expect(rest.failure == nil)
        #expect(try await session.close(lane: camLane) == UInt64(cam.samples.count))
        let file = directory.path + "/" + id + "/recording.mp4"
        #expect(try Oracle.decodeErrors(file) == nil)
        let packets = try Oracle.streams(file).map(\.packets)
        #expect(packets[0] == cam.samples.count, "all of cam's samples")
        #expect(packets[1] > 0 && packets[1] <= micHalf, "mic's acknowledged part, \(packets[1]) of the \(micHalf) it sent")
        #expect(UInt64(packets[1]) >= (await session.members[Int(micLane)].acknowledged), "every sample acknowledged to mic is in the file")
    }

    @Test func labelsSharedByTwoAgentsRefuseTheStartForBoth() async throws {
        let directory = try TemporaryDirectory(prefix: "across-labels")
        let registry = try await Self.registry(directory)
        var (cam, mic) = try Self.parts()
        mic.open.tracks[0].label = cam.open.tracks[0].label
        let start = Task { try await registry.startSession(agentIDs: ["cam", "mic"], labels: [:]) }
        _ = try await eventually("the group to be pending") { await registry.pendingGroupID(of: "cam") }
        let opens = [(cam.open, "cam", UInt64(1)), (mic.open, "mic", UInt64(2))].map { open, agent, connection in
            Task { () -> String? in
                do {
                    _ = try await registry.openSession(open, agentID: agent, connection: connection)
                    return nil
                } catch {
                    return "\(error)"
                }
            }
        }
        for open in opens {
            let error = await open.value
            #expect(error?.contains(#"track label "front" is used by agent cam and by agent mic"#) == true, "\(error ?? "it opened")")
        }
        await #expect(throws: AdminError.self) { try await start.value }
        #expect(await registry.liveSessionCount == 0)
    }

    /// An agent whose network was cut reconnects while its old connection still looks alive to
    /// the server: the new connection goes on from the clock history the old one built, and a
    /// connection that is no longer the agent's does not overwrite it.
    @Test func aReconnectingAgentGoesOnFromItsClockHistory() async throws {
        let directory = try TemporaryDirectory(prefix: "across-clock-history")
        let registry = try await Self.registry(directory)
        let carried = try #require(await registry.clockHistory(of: "mic"))
        #expect(carried.isCarriedOver && !carried.isConfirmed)
        #expect(carried.estimate?.exchanges == 30 && carried.estimate?.offset == 5_000_000_000)
        #expect(await registry.clockHistory(of: "nobody") == nil)

        // mic's new connection (3) replaces the old one (2), which then reports one more exchange.
        let info = ConnectedAgentInfo(id: "mic", address: "127.0.0.1", softwareVersion: "test", connectedAt: Date(), lastSeen: Date())
        await registry.agentConnected(.init(connection: 3, info: info, send: { _ in }))
        var stale = ClockEstimator()
        stale.add(ClockExchange(serverSent: 40_000_000_000, agentReceived: 45_000_100_000, agentSent: 45_000_100_000, serverReceived: 40_000_200_000))
        await registry.agentSeen("mic", connection: 2, roundTripMillis: 0.2, history: stale, sessionID: nil)
        #expect(await registry.clockHistory(of: "mic")?.estimate?.exchanges == 30, "a stale connection leaves the history alone")
        await registry.agentDisconnected("mic", connection: 2)
        #expect(await registry.clockHistory(of: "mic")?.estimate?.exchanges == 30, "the history outlives the connection that built it")
    }
}
