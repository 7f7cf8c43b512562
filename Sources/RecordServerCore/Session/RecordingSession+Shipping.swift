import Shared

/// The session's side of live shipping (``LiveShipper``, ``ShippingLedger``): what to ship
/// next, what is shipped, and the `RemoteAck`s that follow for its agents (protocol.md §6.13a).
extension RecordingSession {
    /// A `RemoteAck` for one member's agent, on the connection it is attached through.
    struct RemoteAckDelivery: Sendable, Equatable {
        var agentID: String
        var connection: UInt64
        var wireID: SessionID
        var sequence: UInt64
    }

    var sidecarsShipped: Bool { shipping?.sidecarsShipped ?? true }

    func markSidecarsShipped() { shipping?.sidecarsShipped = true }

    var filesToLookUp: [String] { shipping?.filesToLookUp ?? [] }

    func nextChunk() -> ShippingLedger.Chunk? { shipping?.nextChunk() }

    /// The ledger's epoch (0 for a session that never changed servers).
    var shippingEpochValue: Int { shipping?.epoch ?? 0 }

    /// Finished, and nothing left to ship (or nothing to ship at all): the shipper lets it go.
    var isDoneShipping: Bool {
        guard let shipping else { return true }
        return isFinished && shipping.isCaughtUp
    }

    /// After a resume: the bucket already holds `file` up to `end`.
    func knownShipped(file: String, end: UInt64) -> [RemoteAckDelivery] {
        shipping?.knownShipped(file: file, end: end)
        return settleRemote()
    }

    /// `chunk` is in the bucket.
    func shipped(_ chunk: ShippingLedger.Chunk) -> [RemoteAckDelivery] {
        shipping?.shipped(chunk)
        return settleRemote()
    }

    /// Its files are gone before they were shipped: shipping stops, and closes waiting for
    /// the copy are answered (no `RemoteAck` is sent for what was never copied).
    func abandonShipping() {
        shipping = nil
        for m in members.indices {
            let waiters = members[m].remoteWaiters
            members[m].remoteWaiters = []
            for waiter in waiters { waiter.continuation.resume(returning: false) }
        }
    }

    /// Waits until member `lane`'s samples through `through` are in object storage: what its
    /// `SessionClosed` says once `remoteAcks` is negotiated. Whether they are: false at once
    /// without live shipping, or once it stopped (``abandonShipping()``).
    func waitUntilShipped(through: UInt64, lane: UInt16) async -> Bool {
        let m = Int(lane)
        guard shipping != nil, members.indices.contains(m) else { return false }
        guard members[m].reportedRemoteAck < through else { return true }
        return await withCheckedContinuation { members[m].remoteWaiters.append((through, $0)) }
    }

    /// Each member's remote point (never past its ack point, so never past a refused sample):
    /// the `RemoteAck`s to send, and the closes waiting for it to answer.
    private func settleRemote() -> [RemoteAckDelivery] {
        guard let remote = shipping?.remote else { return [] }
        var deliveries: [RemoteAckDelivery] = []
        for m in members.indices {
            let point = min(SequenceLane.local(remote[members[m].lane]), members[m].acknowledged)
            guard point > members[m].reportedRemoteAck else { continue }
            members[m].reportedRemoteAck = point
            if case .attached(let connection) = members[m].attachment {
                deliveries.append(RemoteAckDelivery(agentID: members[m].agentID, connection: connection, wireID: members[m].wireID, sequence: point))
            }
            let ready = members[m].remoteWaiters.filter { $0.through <= point }
            members[m].remoteWaiters.removeAll { $0.through <= point }
            for waiter in ready { waiter.continuation.resume(returning: true) }
        }
        return deliveries
    }
}
