import Foundation
import Shared

/// Taking over a session whose server is gone (issue 18, protocol.md §6.13a): several servers
/// share a catalog and a bucket; a session belongs to the server that recorded it as long as
/// that server's heartbeat is younger than ``SessionRegistry/lease``. When its agent resumes
/// it here after that, this server claims it in the catalog (one transaction: owner, epoch,
/// directory), rebuilds its files from their copy in the bucket (``LiveShipper/restore``),
/// and continues it as if it had restarted with those files: the resume reopens the newest
/// file after its last fragment, and the agent resends what the copy lacks.
extension SessionRegistry {
    /// Makes session `id` of `agentID` this server's when its owner's lease has run out (does
    /// nothing when it is not another server's unfinished session, or without a shared catalog
    /// and an object store). Throws `sessionBusy` while the owner's lease runs, so the agent
    /// retries.
    func takeOver(_ id: SessionID, agentID: String) async throws(ProtocolError) {
        guard let shipper = liveShipper, catalog.isShared else { return }
        let record: SessionRecord
        do {
            guard let found = try catalog.session(id: id.value) else { return }
            record = found
        } catch {
            throw ProtocolError(.sessionBusy, "cannot read session \(id) from the catalog (\(error)); resume again later")
        }
        let me = catalog.serverID
        guard record.agentID == agentID, record.status != .cancelled, let owner = record.serverID else { return }
        // Its own session, claimed here before, whose files could not be rebuilt then: try again.
        let retryOwn = owner == me && record.status == .recording
        guard owner != me || retryOwn else { return }
        if owner != me, record.status != .recording, try allUploaded(record) { return }
        let epoch: Int
        let location: (directory: String, baseName: String)
        do { location = try locate(agentID, id, record.createdAt) } catch {
            throw ProtocolError(.storageFailure, "cannot create a directory for session \(id): \(error)")
        }
        if retryOwn {
            epoch = self.epoch(of: id.value)
        } else {
            epoch = try claim(record, owner: owner, directory: location.directory)
        }
        // Whatever a failed attempt left is rebuilt from the bucket again.
        try? FileManager.default.removeItem(atPath: location.directory) // absent on a first attempt
        do {
            _ = try await shipper.restore(sessionID: id.value, into: location.directory)
        } catch {
            try? FileManager.default.removeItem(atPath: location.directory) // the next attempt starts over
            throw ProtocolError(.sessionBusy, "took session \(id) over from server \(owner) but cannot rebuild its files from object storage yet "
                                + "(\(error)); resume again later")
        }
        var taken = record
        taken.directory = location.directory
        taken.serverID = me
        let members: [SessionMember]?
        do { members = try SessionSidecar.readMembers(directory: location.directory) } catch {
            throw ProtocolError(.storageFailure, "session \(id)'s members, rebuilt from object storage, cannot be read: \(error)")
        }
        let session = RecordingSession(foundAfterRestart: taken, id: id, members: members, baseName: location.baseName,
                                       deadline: clock.now + settings.resumeWindow, catalog: catalog, events: events, settings: settings,
                                       metrics: metrics, logger: logger, shippingEpoch: epoch)
        register(session)
        shipper.follow(session)
        metrics.sessionStarted()
        logger.notice("took over a session from a server whose lease ran out; its files are rebuilt from object storage", metadata: [
            "session": "\(id)", "from_server": "\(owner)", "epoch": "\(epoch)", "directory": "\(location.directory)"])
    }

    /// Sessions of servers silent for longer than the lease and a resume window together: their
    /// agents did not come back to take them elsewhere. This server takes them over as if
    /// their agents had asked; each then waits one resume window here and is finalized by
    /// recovery from what its copy holds, and uploaded — nothing its server acknowledged
    /// remotely stays behind in `live/` only. Called every few seconds by housekeeping.
    func adoptOrphanedSessions() async {
        guard liveShipper != nil, catalog.isShared else { return }
        let cutoff = Date().addingTimeInterval(-Double((Self.lease + settings.resumeWindow).components.seconds))
        let orphans: [SessionRecord]
        do { orphans = try catalog.sessionsOfSilentServers(since: cutoff) } catch {
            logger.warning("cannot look for sessions of silent servers in the catalog", metadata: ["error": "\(error)"])
            return
        }
        for record in orphans {
            guard let id = try? SessionID(validating: record.id), sessions[id] == nil else { continue } // a row no agent could name
            do { try await takeOver(id, agentID: record.agentID) } catch {
                logger.warning("cannot adopt a session of a silent server yet", metadata: ["session": "\(record.id)", "error": "\(error.message)"])
            }
        }
    }

    /// Claims `record` from `owner` in the catalog; `sessionBusy` while the owner's lease runs
    /// or when another server claimed it first.
    private func claim(_ record: SessionRecord, owner: String, directory: String) throws(ProtocolError) -> Int {
        let cutoff = Date().addingTimeInterval(-Double(Self.lease.components.seconds))
        let claimed: Int?
        do { claimed = try catalog.claimSession(id: record.id, from: owner, leaseCutoff: cutoff, directory: directory) } catch {
            throw ProtocolError(.sessionBusy, "cannot take session \(record.id) over in the catalog (\(error)); resume again later")
        }
        guard let claimed else {
            let beat = (try? catalog.servers())?.first { $0.id == owner }?.heartbeatAt // only for the message
            let age = beat.map { String(format: "%.1f s ago", Date().timeIntervalSince($0)) } ?? "at an unknown time"
            throw ProtocolError(.sessionBusy, "session \(record.id) belongs to server \(owner), last heard from \(age); another server may take "
                                + "it over \(Self.lease.components.seconds) s after that: resume again later")
        }
        return claimed
    }

    /// Whether every file of a finished session is in the bucket as a finished object: then
    /// its `SessionClosed` stands and nothing needs taking over.
    private func allUploaded(_ record: SessionRecord) throws(ProtocolError) -> Bool {
        do {
            let recordings = try catalog.recordings(sessionID: record.id)
            for recording in recordings where try catalog.upload(recordingID: recording.id) == nil { return false }
            return true
        } catch {
            throw ProtocolError(.sessionBusy, "cannot read session \(record.id)'s uploads from the catalog (\(error)); resume again later")
        }
    }
}
