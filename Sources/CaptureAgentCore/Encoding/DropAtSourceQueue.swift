import Foundation
import NIOCore

/// The bounded hand-off between a capture thread and its encoder thread.
///
/// A live source cannot wait (a camera keeps exposing, a sound card keeps sampling), so
/// when the encoder falls behind and the queue is full, ``offer(_:)`` drops the new
/// unit and counts it instead of letting latency and memory grow. The count travels
/// with the next unit that does get in (or with the end of the stream), so the
/// consumer reports each run of drops exactly where it happened. Non-live producers
/// (files read as fast as possible) use ``put(_:)``, which waits for room.
final class DropAtSourceQueue<Element>: @unchecked Sendable {
    /// Units missing right before an item: dropped here because the queue was full
    /// (`overflow`), or lost inside the source and recorded with ``recordLost(_:)``.
    struct Drops: Sendable, Equatable {
        var overflow = 0
        var lost = 0
        init(overflow: Int = 0, lost: Int = 0) {
            self.overflow = overflow
            self.lost = lost
        }
        var isEmpty: Bool { overflow == 0 && lost == 0 }
    }

    /// What the consumer takes out.
    enum Item {
        /// A unit, preceded by the units that went missing right before it.
        case element(Element, dropsBefore: Drops)
        /// The producer finished; `dropsBefore` went missing after the last element.
        case end(dropsBefore: Drops)
    }

    let capacity: Int
    private let condition = NSCondition()
    /// Each queued unit with the drops right before it. A ring buffer: a taken frame (a 720p
    /// frame is 1.4 MB) is released as it is taken, not kept in a consumed slot.
    private var items = CircularBuffer<(element: Element, dropsBefore: Drops)>()
    private var pendingDrops = Drops()
    private var closed = false
    private var cancelled = false
    private var droppedCount = 0
    private var lostCount = 0

    /// Every unit dropped for lack of room so far.
    var totalDropped: Int {
        condition.lock()
        defer { condition.unlock() }
        return droppedCount
    }

    /// Every unit recorded as lost by the source so far.
    var totalLost: Int {
        condition.lock()
        defer { condition.unlock() }
        return lostCount
    }

    init(capacity: Int) {
        precondition(capacity >= 1)
        self.capacity = capacity
    }

    private var count: Int { items.count }

    /// Adds `element` if there is room; otherwise drops it, counts it and returns false.
    @discardableResult
    func offer(_ element: Element) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard !closed else { return false }
        guard count < capacity else {
            pendingDrops.overflow += 1
            droppedCount += 1
            return false
        }
        append(element)
        return true
    }

    /// Adds `element`, waiting for room. Returns false if the queue was cancelled.
    @discardableResult
    func put(_ element: Element) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while count >= capacity && !cancelled { condition.wait() }
        guard !closed else { return false }
        append(element)
        return true
    }

    private func append(_ element: Element) {
        items.append((element, pendingDrops))
        pendingDrops = Drops()
        condition.broadcast()
    }

    /// Records `n` units the source itself lost (they never reached the queue); they are
    /// reported like queue drops, at this position.
    func recordLost(_ n: Int) {
        guard n > 0 else { return }
        condition.lock()
        pendingDrops.lost += n
        lostCount += n
        condition.unlock()
    }

    /// No more elements will be offered; the consumer gets what is queued, then `.end`.
    func close() {
        condition.lock()
        closed = true
        condition.broadcast()
        condition.unlock()
    }

    /// Like ``close()`` but also wakes a producer blocked in ``put(_:)``.
    func cancel() {
        condition.lock()
        closed = true
        cancelled = true
        condition.broadcast()
        condition.unlock()
    }

    /// The next item, waiting for one.
    func take() -> Item {
        condition.lock()
        defer { condition.unlock() }
        while count == 0 && !closed { condition.wait() }
        if count == 0 {
            let drops = pendingDrops
            pendingDrops = Drops()
            return .end(dropsBefore: drops)
        }
        let next = items.removeFirst()
        condition.broadcast()
        return .element(next.element, dropsBefore: next.dropsBefore)
    }
}
