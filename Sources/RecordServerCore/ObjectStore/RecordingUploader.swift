import Foundation
import Logging
import NIOPosix
import ObjectStorage
import ServiceLifecycle

/// Copies every finished recording of this server to the object store, oldest first: streamed
/// from disk as a multipart upload, each part checked by the store (Content-MD5, signed
/// SHA-256), the object checked afterwards (size, multipart ETag), and only then recorded in
/// the catalog (`UploadRecord`). A crash mid-upload leaves the multipart upload in the store;
/// the next pass finds it and sends only the parts it lacks. With `keepLocalCopy: false` the
/// file is removed once its upload is recorded; the admin API then serves the object.
///
/// One pass every ``interval``; a recording whose upload failed is tried again after a delay
/// that doubles up to ``maximumRetryDelay``, so a store that is down costs one log line per
/// recording per few minutes, not a storm.
struct RecordingUploader: Service {
    static let interval: Duration = .seconds(2)
    static let maximumRetryDelay: Duration = .seconds(300)
    /// Recordings taken per pass.
    static let batch = 8

    let store: RecordingObjectStore
    let catalog: any RecordingCatalog
    /// While it still ships a session's last fragments, that session's files wait: the copy
    /// reads them, and `keepLocalCopy: false` would remove them under it.
    var shipper: LiveShipper?
    let clock: any ServerClock
    let metrics: ServerMetrics
    let logger: Logger

    func run() async throws {
        let failures = UploadFailures()
        await withGracefulShutdownHandler {
            var bucketReady = false
            while !Task.isCancelled && !Task.isShuttingDownGracefully {
                if !bucketReady { bucketReady = await prepareBucket() }
                if bucketReady { await pass(failures) }
                // A cancelled sleep ends the loop at its condition; there is nothing to report.
                try? await clock.sleep(for: Self.interval)
            }
        } onGracefulShutdown: {
            logger.info("object store: stopping uploads; an unfinished one resumes after the restart")
        }
        await store.shutdown()
    }

    private func prepareBucket() async -> Bool {
        do {
            try await store.client.createBucket()
            logger.notice("object store: uploading finished recordings to \(store.description)")
            return true
        } catch {
            logger.error("object store: cannot use the bucket; uploads wait until it answers", metadata: ["error": "\(error)"])
            metrics.uploadFailed()
            return false
        }
    }

    /// Deletes the objects of deleted recordings, then uploads what awaits (those not waiting
    /// out a failure's delay).
    func pass(_ failures: UploadFailures) async {
        await purgeDeletedRecordings()
        let catalog = self.catalog
        let awaiting: [RecordingRecord]
        do {
            // Catalog calls block: on a storage thread.
            awaiting = try await StorageExecutor.pool.runIfActive { try catalog.recordingsAwaitingUpload(limit: Self.batch * 4) }
        } catch {
            logger.error("object store: cannot read the recordings awaiting upload", metadata: ["error": "\(error)"])
            return
        }
        var done = 0
        for recording in awaiting where done < Self.batch {
            guard await failures.isDue(recording.id, now: clock.now), shipper?.isShipping(recording.sessionID) != true else { continue }
            done += 1
            do {
                try await upload(recording)
                await failures.clear(recording.id)
            } catch {
                let delay = await failures.failed(recording.id, now: clock.now, maximum: Self.maximumRetryDelay)
                metrics.uploadFailed()
                logger.error("object store: upload failed; trying again later", metadata: [
                    "recording": "\(recording.id)", "retry_in_seconds": "\(delay.components.seconds)", "error": "\(error)"])
            }
        }
    }

    private func upload(_ recording: RecordingRecord) async throws {
        guard let key = store.key(forFileAt: recording.path) else {
            throw UploadProblem("the file \(recording.path) is not inside the data directory")
        }
        guard FileManager.default.fileExists(atPath: recording.path) else {
            throw UploadProblem("the file \(recording.path) is gone from disk")
        }
        let started = clock.now
        let interrupted = try await store.client.findInterruptedUpload(key: key)
        let result = try await store.client.uploadFile(
            path: recording.path, key: key,
            metadata: ["recording-id": recording.id, "session-id": recording.sessionID, "agent-id": recording.agentID],
            contentType: "video/mp4", resumeUploadID: interrupted?.uploadID)
        let row = UploadRecord(recordingID: recording.id, objectKey: store.client.location.keyPrefix + key, etag: result.etag,
                               sizeBytes: result.size, uploadedAt: Date())
        let catalog = self.catalog
        try await StorageExecutor.pool.runIfActive { try catalog.recordUpload(row) }
        metrics.uploaded(bytes: result.size, seconds: Double(started.duration(to: clock.now).nanoseconds) / 1e9)
        logger.notice("object store: recording uploaded", metadata: [
            "recording": "\(recording.id)", "key": "\(row.objectKey)", "bytes": "\(result.size)", "parts": "\(result.partCount)",
            "parts_resumed": "\(result.partsAlreadyStored)", "retries": "\(result.retries)"])
        try await dropLiveCopy(ofSession: recording.sessionID)
        guard !store.keepLocalCopy else { return }
        let path = recording.path
        var removed = row
        removed.localRemoved = true
        try await StorageExecutor.pool.runIfActive { [removed] in
            try FileManager.default.removeItem(atPath: path)
            try catalog.recordUpload(removed)
        }
    }
}

extension RecordingUploader {
    /// A recording deleted by retention or by an operator (`recordctl delete`) leaves its
    /// upload row: the object goes now, then the row. The row is the to-do item: a store that
    /// is down, or a crash in between, leaves it for a later pass, so no object outlives its
    /// recording unnoticed (the catalog is the index of the bucket; an object it no longer
    /// lists is storage paid for nothing, found by no one).
    func purgeDeletedRecordings() async {
        let catalog = self.catalog
        let deleted: [UploadRecord]
        do { deleted = try await StorageExecutor.pool.runIfActive { try catalog.uploadsOfDeletedRecordings(limit: Self.batch * 4) } } catch {
            logger.error("object store: cannot read the uploads of deleted recordings", metadata: ["error": "\(error)"])
            return
        }
        for upload in deleted {
            do {
                try await store.client.deleteObject(key: store.relativeKey(upload.objectKey))
                try await StorageExecutor.pool.runIfActive { try catalog.deleteUpload(recordingID: upload.recordingID) }
                logger.notice("object store: object of a deleted recording removed", metadata: [
                    "recording": "\(upload.recordingID)", "key": "\(upload.objectKey)"])
            } catch {
                metrics.uploadFailed()
                logger.error("object store: cannot remove the object of a deleted recording; trying again at the next pass", metadata: [
                    "recording": "\(upload.recordingID)", "key": "\(upload.objectKey)", "error": "\(error)"])
                return
            }
        }
    }

    /// Once every file of a finished session is uploaded as a finished object, the live copy
    /// of it (``LiveShipper``) has served its purpose: a server that takes the session over
    /// would answer its agent from the catalog, not continue it. Its objects go.
    func dropLiveCopy(ofSession sessionID: String) async throws {
        let catalog = self.catalog
        let finished = try await StorageExecutor.pool.runIfActive { () throws -> Bool in
            guard let session = try catalog.session(id: sessionID), session.status != .recording else { return false }
            for recording in try catalog.recordings(sessionID: sessionID) where try catalog.upload(recordingID: recording.id) == nil { return false }
            return true
        }
        guard finished else { return }
        let objects = try await store.client.listObjects(prefix: LiveFragmentKeys.sessionPrefix(sessionID))
        for object in objects { try await store.client.deleteObject(key: object.key) }
        if !objects.isEmpty {
            logger.info("object store: live copy of a finished session removed", metadata: ["session": "\(sessionID)", "objects": "\(objects.count)"])
        }
    }
}

/// When each failed recording may be tried again.
actor UploadFailures {
    private var retries: [String: (attempts: Int, due: ContinuousClock.Instant)] = [:]

    func isDue(_ id: String, now: ContinuousClock.Instant) -> Bool { retries[id].map { now >= $0.due } ?? true }

    func failed(_ id: String, now: ContinuousClock.Instant, maximum: Duration) -> Duration {
        let attempts = (retries[id]?.attempts ?? 0) + 1
        let delay = min(maximum, .seconds(2) * (1 << min(attempts, 10)))
        retries[id] = (attempts, now + delay)
        return delay
    }

    func clear(_ id: String) { retries[id] = nil }
}

struct UploadProblem: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
