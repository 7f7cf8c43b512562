import AdminModels
import Foundation
import Logging
import Shared

/// Sessions across agents (docs/architecture.md, "Sessions across agents"): an operator starts
/// one session on several agents; each is sent a `StartSession`, and the `SessionOpen` each
/// answers with joins the group instead of starting a session of its own. Once every agent has
/// opened its part, the session forms — one muxer for all their tracks — and each agent is
/// answered `SessionAccepted`; if one refuses or does not answer within ``startWait``, none is.
extension SessionRegistry {
    /// A session across agents waiting for its agents' `SessionOpen`s.
    struct PendingGroup {
        let id: SessionID
        /// The agents, in the order given: the order of their tracks in the file.
        let agents: [String]
        var opened: [String: (open: SessionOpen, connection: UInt64)] = [:]
        /// Each agent's `SessionOpen`, waiting for the session to form.
        var waiters: [String: CheckedContinuation<Result<(RecordingSession, UInt16), ProtocolError>, Never>] = [:]
        /// The operator's start, waiting for the outcome.
        var starter: CheckedContinuation<Result<String, AdminError>, Never>?
    }

    /// Starts one session on `agentIDs` (two or more, each connected and not recording) and
    /// returns its id once every agent has opened its part.
    func startGroupSession(agentIDs: [String], labels: [Label]) async throws(AdminError) -> String {
        guard Set(agentIDs).count == agentIDs.count else { throw AdminError(.badRequest, "an agent is named twice in \(agentIDs)") }
        var links: [AgentLink] = []
        for agent in agentIDs {
            if let running = await runningSessionID(of: agent) {
                throw AdminError(.conflict, "agent \(agent) is already recording session \(running); stop it first (recordctl stop \(running))",
                                 sessionID: running)
            }
            guard pendingGroupID(of: agent) == nil else { throw AdminError(.conflict, "agent \(agent) is joining another session being started") }
            guard let link = agentLink(agent) else { throw AdminError(.notFound, "agent \(agent) is not connected") }
            guard link.info.clock != nil else {
                throw AdminError(.conflict, "agent \(agent) has no clock estimate yet (it connected a moment ago); try again in a few seconds")
            }
            links.append(link)
        }
        let id = Self.newGroupSessionID()
        let settled = links.map { latestClock(of: $0.info.id)?.exchanges ?? 0 }.min() ?? 0
        let commands = scheduled(links, lead: Self.startLead(exchanges: settled)) { StartSession(labels: labels, startAt: $0) }
        let result: Result<String, AdminError> = await withCheckedContinuation { continuation in
            pendingGroups[id] = PendingGroup(id: id, agents: agentIDs, starter: continuation)
            Task {
                for (link, command) in zip(links, commands) { await link.send(.startSession(command)) }
                try? await Task.sleep(for: Self.startWait)  // cancelled never: the group forms or fails by then
                self.failGroup(id, "not every agent opened its part within \(Self.startWait): still waiting for "
                               + "\(self.pendingGroups[id].map { g in g.agents.filter { g.opened[$0] == nil } } ?? [])")
            }
        }
        return try result.get()
    }

    /// How far ahead a session across agents starts: time for every agent to hear of it and
    /// open its devices, so that all of them start at the same instant (protocol.md §6.16).
    static let startLead = Duration.seconds(2)
    /// The exchanges (one a second) a clock estimate rests on before the samples it maps
    /// count: the first few, taken while an agent was just starting, may have queued on a busy
    /// host, and a mapping that starts off slews back at 0.5 ms per second at most.
    static let settledClockExchanges = 8

    /// ``startLead``, or longer when an agent's clock estimate is younger than
    /// ``settledClockExchanges`` exchanges: the start waits for it to settle (7 s at most, within
    /// ``startWait``, since agents open their parts at once and start at the instant).
    static func startLead(exchanges: Int) -> Duration {
        let missing = settledClockExchanges - exchanges
        return max(startLead, AgentConnection.clockProbeInterval * missing)
    }
    /// How far ahead it stops: time for every agent to hear of it (protocol.md §6.17).
    static let stopLead = Duration.seconds(1)

    /// One command per link, carrying (for an agent with `scheduledCommands` and a clock
    /// estimate) the server instant `lead` from now on that agent's clock: one instant for all.
    func scheduled<Command>(_ links: [AgentLink], lead: Duration, _ make: (Int64?) -> Command) -> [Command] {
        let instant = monotonicNanoseconds() + lead.nanoseconds
        return links.map { link in
            guard link.capabilities.contains(.scheduledCommands), let estimate = latestClock(of: link.info.id) else { return make(nil) }
            return make(max(0, instant &+ estimate.offset(atServerTime: instant)))
        }
    }

    /// A new session id the server chooses for a session across agents.
    static func newGroupSessionID() -> SessionID {
        let stamp = Int(Date().timeIntervalSince1970)
        // The pattern always validates: letters, digits and dashes, well under the length limit.
        return try! SessionID(validating: "group-\(stamp)-\(UInt32.random(in: 0...UInt32.max))")
    }

    func pendingGroupID(of agentID: String) -> SessionID? {
        pendingGroups.first { $0.value.agents.contains(agentID) }?.key
    }

    /// `agentID`'s `SessionOpen` for the group it was asked to join: waits until the group forms
    /// (every agent opened) and returns the session and the agent's lane in it.
    func join(_ groupID: SessionID, open: SessionOpen, agentID: String, connection: UInt64) async throws(ProtocolError) -> (RecordingSession, UInt16) {
        guard pendingGroups[groupID]?.opened[agentID] == nil else {
            throw ProtocolError(.sessionAlreadyOpen, "agent \(agentID) has opened its part of session \(groupID) already")
        }
        let result: Result<(RecordingSession, UInt16), ProtocolError> = await withCheckedContinuation { continuation in
            pendingGroups[groupID]?.opened[agentID] = (open, connection)
            pendingGroups[groupID]?.waiters[agentID] = continuation
            if let group = pendingGroups[groupID], group.opened.count == group.agents.count { form(group) }
        }
        return try result.get()
    }

    /// The group could not form: every waiting agent and the operator are told why.
    func failGroup(_ id: SessionID, _ reason: String) {
        guard let group = pendingGroups.removeValue(forKey: id) else { return }
        logger.warning("a session across agents did not start", metadata: ["session": "\(id)", "reason": "\(reason)"])
        // An agent that opens its part after this (a slow camera) must not record on its own.
        for agent in group.agents where group.opened[agent] == nil { failedJoins[agent] = (reason, clock.now + Self.startWait) }
        for waiter in group.waiters.values {
            waiter.resume(returning: .failure(ProtocolError(.internalError, scope: .session, "session \(id) across agents did not start: \(reason)")))
        }
        group.starter?.resume(returning: .failure(AdminError(.conflict, "session across \(group.agents.joined(separator: ", ")) did not start: \(reason)")))
    }

    /// Every agent opened its part: one recording for all their tracks (renumbered in agent
    /// order, labels unique across the session), then every agent is answered.
    private func form(_ group: PendingGroup) {
        var tracks: [TrackDescriptor] = []
        var owners: [String: String] = [:]
        var members: [SessionMember] = []
        for (lane, agent) in group.agents.enumerated() {
            guard let (open, connection) = group.opened[agent] else { return }
            var sessionTracks: [UInt8: UInt8] = [:]
            for var track in open.tracks {
                if let other = owners[track.label] {
                    failGroup(group.id, "track label \"\(track.label)\" is used by agent \(other) and by agent \(agent); labels must be unique "
                              + "across a session: rename one on its agent (capture-agent --source NEWLABEL=...)")
                    return
                }
                guard tracks.count < Int(UInt8.max) else { failGroup(group.id, "more than 255 tracks in one session"); return }
                owners[track.label] = agent
                sessionTracks[track.id] = UInt8(tracks.count)
                track.id = UInt8(tracks.count)
                tracks.append(track)
            }
            var member = SessionMember(agentID: agent, wireID: open.sessionID, lane: UInt16(lane), open: open, sessionTracks: sessionTracks,
                                       attachment: .attached(connection: connection), clock: ClockMapping())
            guard let estimate = latestClock(of: agent) else { failGroup(group.id, "no clock estimate for agent \(agent)"); return }
            member.clock?.update(estimate, agentNow: estimate.at &+ estimate.offset)
            members.append(member)
        }
        // The session's labels are the first agent's (the operator's, which every agent was sent, and its own).
        let combined = SessionOpen(sessionID: group.id, labels: group.opened[group.agents[0]]?.open.labels ?? [], tracks: tracks)
        let session: RecordingSession
        do throws(ProtocolError) {
            session = try createSession(combined, members: members)
        } catch {
            failGroup(group.id, error.message)
            return
        }
        pendingGroups[group.id] = nil
        for member in members { group.waiters[member.agentID]?.resume(returning: .success((session, member.lane))) }
        group.starter?.resume(returning: .success(group.id.value))
    }
}
