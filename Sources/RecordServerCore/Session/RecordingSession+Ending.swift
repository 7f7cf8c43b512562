import Foundation
import Shared

/// Every way a session finishes. Each checks the phase and acts in one turn of the actor,
/// leaves its files in a final state, writes the catalog rows and reads the files back into
/// them (``CatalogReconciler``); a catalog write that fails is retried (``repairCatalog()``).
extension RecordingSession {
    /// Member `lane`'s agent closed its part. A session of one agent is finalized into a
    /// regular MP4. Across agents, the member's tracks end and its answer waits until all it
    /// sent is durable; the last member to close (or leave) finalizes the session.
    func close(lane: UInt16 = 0) async throws(ProtocolError) -> UInt64 {
        let m = Int(lane)
        guard !isFinished, muxer != nil else { throw ProtocolError(.unknownSession, "session \(members[m].wireID) has finished") }
        if isAcrossAgents {
            leave(member: m, reason: "its agent closed it")
            // Stopped before any agent's first sample (a stop right after the start): nothing to keep.
            if members.allSatisfy(\.hasLeft), !hasSamples {
                discardEmpty(reason: "closed before the first sample")
                return members[m].acknowledged
            }
            guard members.allSatisfy(\.hasLeft) else {
                try syncIfDue()
                guard members[m].acknowledged < members[m].highestReceived, !isFinished else { return members[m].acknowledged }
                return await withCheckedContinuation { members[m].closeWaiters.append($0) }
            }
        }
        finalize(as: .completed, reason: nil)
        guard case .finished(.completed, _) = phase else {
            throw ProtocolError(.storageFailure, "session \(id) could not be finalized")
        }
        return members[m].acknowledged
    }

    /// A session-scoped error ends the session it names (protocol.md §8), whoever raised it:
    /// finalized as `failed` with every durable sample, or discarded when it never received
    /// one. Across agents it ends only member `lane`'s part (unless the session itself
    /// failed), and the others go on. Returns the durable point for the `SessionClosed` that
    /// tells the agent.
    func end(after error: ProtocolError, lane: UInt16 = 0) -> UInt64 {
        let m = Int(lane)
        if !isFinished {
            if isAcrossAgents {
                leave(member: m, reason: "\(error.code): \(error.message)")
                if members.allSatisfy(\.hasLeft) {
                    if hasSamples { finalize(as: .failed, reason: "\(error.code): \(error.message)") } else { discardEmpty(reason: "\(error.code): \(error.message)") }
                }
            } else if hasSamples {
                finalize(as: .failed, reason: "\(error.code): \(error.message)")
            } else {
                discardEmpty(reason: "\(error.code): \(error.message)")
            }
        }
        if case .finished(.cancelled, _) = phase { return 0 }
        return members[m].acknowledged
    }

    /// Ends a session that never received a sample and removes every trace of it: its
    /// directory (with the sidecar) and its catalog rows.
    func discardEmpty(reason: String) {
        guard !isFinished else { return }
        // A last check before deleting a directory: a session that only looks empty (its
        // ack point lost by a resume) must not take media with it. Kept, and finalized.
        if let held = filesOnDisk.first(where: { Self.holdsMedia($0.path) }) {
            logger.error("a session that received no sample has media in its files; finalized, not discarded",
                         metadata: ["file": "\(held.path)", "reason": "\(reason)"])
            if muxer != nil { finalize(as: .failed, reason: reason) } else { recoverFiles() }
            return
        }
        muxer?.cancel()
        do { try FileManager.default.removeItem(atPath: directory) } catch {
            logger.warning("could not remove the empty session's directory", metadata: ["directory": "\(directory)", "error": "\(error)"])
        }
        catalogWrite("delete the empty session's rows") { try catalog.deleteSession(id: id.value) }
        phase = .finished(.cancelled, .erased)
        answerAllCloses()
        metrics.sessionEnded(outcome: .cancelled)
        reportQueue()
        logger.notice("session ended before its first sample; nothing kept", metadata: ["reason": "\(reason)"])
    }

    /// Discard everything recorded: files, directory, and the files' rows; the session's row
    /// says `cancelled`.
    func cancel(reason: String) {
        guard !isFinished else { return }
        let files = filesOnDisk
        muxer?.cancel()
        for file in files {
            catalogWrite("delete recording \(file.id)") { try catalog.deleteRecording(id: file.id) }
        }
        // Cancelled means discarded: a directory that cannot be removed holds nothing the catalog lists.
        try? FileManager.default.removeItem(atPath: directory)
        phase = .finished(.cancelled, .written)
        answerAllCloses()
        endReason = reason.isEmpty ? nil : reason
        catalogWrite("session status") {
            try catalog.updateSession(id: id.value, status: .cancelled, endedAt: Date(), error: endReason, durableSequence: 0)
        }
        metrics.sessionEnded(outcome: .cancelled)
        reportQueue()
        logger.notice("session cancelled; recording discarded", metadata: ["reason": "\(reason)"])
    }

    /// Graceful server shutdown: stop as a crash would, but cleanly. The file keeps every
    /// durable fragment and the catalog keeps the session as `recording`. After the restart,
    /// the server finds it unfinished and waits one resume window for the agent, which
    /// resends everything past the ack point into the same file. If the agent does not come
    /// back, the server finalizes the file by recovery. A graceful restart therefore loses
    /// no sample, as a `kill -9` does not either.
    func suspend() {
        guard !isFinished else { return }
        if case .dormant = phase {
            phase = .suspended
            logger.notice("session still waits for its agent; left for the next start")
            return
        }
        muxer?.suspend()
        phase = .suspended
        answerAllCloses()
        persistTracks()
        logger.notice("session suspended for the server restart; the agent can resume it into the same file",
                      metadata: ["acknowledged": "\(members.map(\.acknowledged))"])
    }

    /// Finish now with what is there, the agent not asked: finalized as `status` (the resume
    /// window passed: `interrupted`; an operator's stop without the agent: `completed`), or,
    /// for a session found after a restart, its files finalized by recovery (`recovered`).
    func expire(as status: RecordingStatus = .interrupted) {
        switch phase {
        case .finished, .suspended:
            return
        case .dormant:
            recoverFiles()
        case .recording:
            finalize(as: status, reason: status == .interrupted ? "agent did not resume within \(settings.resumeWindow)" : nil)
            reconcileCatalog()
        }
    }

    /// Finishes the session if its agent has not resumed it by its deadline: finalized as
    /// `interrupted`, or recovered when it was found after a restart. One actor turn checks
    /// and acts, so a resume cannot slip in between. Returns whether the session is over (for
    /// whatever reason).
    func expireIfAbandoned(_ now: ContinuousClock.Instant) -> Bool {
        switch phase {
        case .dormant(let deadline) where now >= deadline:
            expire()
        case .recording:
            // A member whose agent did not come back in time leaves; the last one ends the session.
            for m in members.indices {
                guard case .detached(let deadline) = members[m].attachment, now >= deadline else { continue }
                if members.filter({ !$0.hasLeft }).count == 1 {
                    expire()
                    break
                }
                leave(member: m, reason: "agent did not resume within \(settings.resumeWindow)")
                try? syncIfDue()  // a storage failure here has failed the session; the sweep sees it finished
            }
        default:
            break
        }
        return isFinished
    }

    /// The members whose agents are attached now: the ones an operator's stop or cancel asks.
    func attachedMembers() -> [(agentID: String, wireID: SessionID)] {
        members.filter(\.isAttached).map { ($0.agentID, $0.wireID) }
    }

    /// An operator stops a session across agents while some agents are away: their parts end
    /// now (what they sent and was acknowledged stays), so the session can finish when the
    /// attached ones close theirs.
    func endAbsentMembers(reason: String) {
        guard isAcrossAgents, case .recording = phase else { return }
        for m in members.indices where !members[m].isAttached && !members[m].hasLeft { leave(member: m, reason: reason) }
        // Ignoring the error loses nothing: a storage failure has failed the session inside
        // syncIfDue (its rows written), and the agents are told when they next send.
        try? syncIfDue()
    }

    /// Every member waiting for its `SessionClose` answer gets it: the session is over.
    func answerAllCloses() {
        for m in members.indices where !members[m].closeWaiters.isEmpty { answerClose(member: m) }
    }

    func fail(_ status: RecordingStatus, _ reason: String) {
        guard !isFinished, let muxer else { return }
        guard muxer.status != .running else {
            finalize(as: status, reason: reason)
            return
        }
        // The muxer stopped on an I/O error: the file is fragmented but every durable
        // fragment is intact. Try to finalize it now; if that fails too, recovery can later.
        let files = filesOnDisk
        for file in files {
            // A segment that closed while the session went on is complete whatever happened later.
            let last = file.index == files.last?.index
            let fileStatus = last ? status : .completed
            do {
                let report = try MP4Recovery.recover(path: file.path)
                recordSegmentFile(file.index, path: file.path, status: fileStatus, size: Int64(report.fileSize), error: last ? reason : nil)
                announceFinished(segment: file.index, status: fileStatus, message: last ? reason : nil)
            } catch where error.code == .noCompleteFragment {
                // Nothing of it ever became durable: no media, nothing acknowledged. It goes.
                emptySegments.insert(file.index)
                removeEmptyRecording(file)
            } catch {
                let message = reason + " (file left fragmented; run recordctl recover)"
                recordSegmentFile(file.index, path: file.path, status: fileStatus, size: nil, error: message)
                announceFinished(segment: file.index, status: fileStatus, message: message)
            }
        }
        finished(as: status, reason: reason)
        logger.error("session failed", metadata: ["error": "\(reason)"])
    }

    func finalize(as status: RecordingStatus, reason: String?) {
        guard let muxer else { return }
        do {
            let summary = try muxer.finish()
            // Only acks and rows for fragments written by finish(); a refusal here is already past the ack point.
            _ = try? process(summary.events.filter { if case .segmentCompleted = $0 { false } else { true } })
            settleAcknowledged(muxer.durablePoints)
            for segment in summary.segments { recordSegment(segment, status: status) }
            finished(as: status, reason: reason)
            logger.notice("session finalized", metadata: ["status": "\(status.rawValue)", "files": "\(summary.segments.map(\.path))"])
        } catch {
            fail(.failed, "finalize failed: \(error.message)")
        }
    }

    /// The common end of finalize and fail: the phase, the session's row (with the durable
    /// point its agent is told), its tracks, and the files to be read back.
    private func finished(as status: RecordingStatus, reason: String?) {
        phase = .finished(status, .written)
        answerAllCloses()
        endReason = reason
        catalogWrite("session status") {
            try catalog.updateSession(id: id.value, status: status, endedAt: Date(), error: reason, durableSequence: members[0].acknowledged)
        }
        // A track still active ends with its session, as the reconciler would write it later:
        // the rows are final when the agent is told (SessionClosed), not a moment after.
        for key in tracks.keys where tracks[key]?.status == .active { tracks[key]?.status = .ended }
        persistTracks()
        reconcilePending = true
        metrics.sessionEnded(outcome: status)
        reportQueue()
    }

    /// Finalizes by recovery the files of a session found after a restart whose agent did not
    /// resume it (or that an operator stopped), and marks it `recovered` (or `failed`). A file
    /// that never held a complete fragment holds nothing acknowledged and is removed. The
    /// files are recovered once: what happened to them (``RecoveryResult``) is what the rows
    /// say, and what ``repairCatalog()`` writes again after a failed write.
    func recoverFiles() {
        guard let result = recoverFilesOnDisk() else {
            // The files are not known yet: repairCatalog() recovers them at a later sweep.
            phase = .finished(.recovered, .recovered(nil))
            return
        }
        finishRecovery(result)
        logger.notice("unfinished session not resumed in time; finalized by recovery", metadata: [
            "files": "\(result.files.map(\.record.path))", "status": "\(result.status.rawValue)",
            "failures": "\(result.reason ?? "none")"])
    }

    /// The phase, the metric and the rows of a session whose files recovery has dealt with.
    func finishRecovery(_ result: RecoveryResult) {
        phase = .finished(result.status, .recovered(result))
        metrics.sessionEnded(outcome: result.status)
        writeRows(of: result)
        for file in result.files {
            switch file {
            case .recovered(let row), .failed(let row): announceFinished(segment: row.segmentIndex, status: row.status, message: row.error)
            case .removedEmpty: break  // nothing was kept: no recording to announce
            }
        }
    }

    /// Recovers each file the catalog lists as still `recording`; nil when the rows cannot
    /// be read (the files are then not known).
    private func recoverFilesOnDisk() -> RecoveryResult? {
        let rows: [RecordingRecord]
        do { rows = try recordingRows() } catch {
            logger.error("cannot read the session's recordings from the catalog; its recovery is retried", metadata: ["error": "\(error)"])
            metrics.catalogWriteFailed()
            owesCatalog = true
            return nil
        }
        var result = RecoveryResult()
        for var recording in rows where recording.status == .recording {
            recording.finishedAt = Date()
            do {
                let report = try MP4Recovery.recover(path: recording.path)
                recording.status = .recovered
                recording.sizeBytes = Int64(report.fileSize)
                result.files.append(.recovered(recording))
            } catch where error.code == .noCompleteFragment {
                // Not one fragment became durable (the server died within the first second):
                // the file holds no media and nothing of it was acknowledged. It goes, after
                // its row (writeRows).
                result.files.append(.removedEmpty(recording))
            } catch {
                recording.status = .failed
                recording.error = error.message
                result.files.append(.failed(recording))
            }
        }
        return result
    }

    /// Writes the rows of a recovered session from what recovery did, then reads its files
    /// back; a write that fails leaves ``owesCatalog`` set for the next sweep.
    func writeRows(of result: RecoveryResult) {
        for file in result.files {
            switch file {
            case .recovered(let row), .failed(let row):
                catalogWrite("recording \(row.id)") { try catalog.upsertRecording(row) }
            case .removedEmpty(let row):
                removeEmptyRecording(SessionFile(index: row.segmentIndex, path: row.path, id: row.id))
            }
        }
        endReason = result.reason
        catalogWrite("session status") { try catalog.updateSession(id: id.value, status: result.status, endedAt: Date(), error: result.reason) }
        if !CatalogReconciler(catalog: catalog, logger: logger, metrics: metrics).reconcile(sessionID: id.value) { owesCatalog = true }
    }

    /// Removes a file that never held a durable fragment: its row first, then the file. A
    /// server stopped in between (or a row that cannot be deleted now: a full disk) leaves
    /// the file, which the next recovery finds still empty and removes the same way. The
    /// other order left a row whose file was gone, which a restart could not tell from a
    /// file lost with its media, and called the session failed.
    func removeEmptyRecording(_ file: SessionFile) {
        var deleted = false
        catalogWrite("delete empty recording \(file.id)") {
            try catalog.deleteRecording(id: file.id)
            deleted = true
        }
        if deleted { RandomAccessFile.remove(file.path) }
    }

    /// Whether the file at `path` holds a durable fragment (or is a finished MP4).
    static func holdsMedia(_ path: String) -> Bool {
        // A file that cannot be read holds nothing a finalize could keep either.
        guard RandomAccessFile.exists(path), let scan = try? MP4FileScanner.scan(path: path) else { return false }
        return !scan.fragments.isEmpty || scan.isProgressive
    }
}
