import CDBus  // malloc_trim (shim.h)
import Synchronization

/// Runs the exported objects' method calls in their turns: filled on the I/O thread, drained by
/// ``BusConnection/serveCalls()``, one call at a time, each sender's in arrival order and senders in turn
/// (``CallQueue``).
final class CallScheduler: Sendable {
    typealias Job = @Sendable () async -> Void

    /// Method calls waiting for, or in, their handler, by sender; a sender's Get goes the fast way (and its GetAll
    /// is answered at once) only when it has none.
    private let calls = Mutex(CallQueue<Job>())
    /// Wakes ``serve()`` when a call is queued; finished when the connection closes.
    private let callQueued: AsyncStream<Void>
    private let callQueuedContinuation: AsyncStream<Void>.Continuation

    /// How many calls waiting at once make a burst after which ``serve()`` gives memory back.
    static let trimAfterBacklog = 500

    init() {
        (callQueued, callQueuedContinuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Whether a call of `sender` is queued or being handled: its next call must wait for it.
    func hasUnfinished(_ sender: String) -> Bool { calls.withLock { $0.hasUnfinished(sender) } }

    /// Queues a call's handling behind its sender's earlier calls (dropped once closed).
    func enqueue(from sender: String, _ job: @escaping Job) {
        if calls.withLock({ $0.append(job, from: sender) }) { callQueuedContinuation.yield() }
    }

    /// Runs `answer` at once when no earlier call of the same sender is pending, else queues it behind them
    /// (a Get sent after a Set sees the Set). Another sender's calls don't hold it up: nothing orders them.
    func answerNowOrInOrder(from sender: String, _ answer: @escaping @Sendable () -> Void) {
        let queued = calls.withLock { queue in
            queue.hasUnfinished(sender) && queue.append({ answer() }, from: sender)
        }
        if queued { callQueuedContinuation.yield() } else { answer() }
    }

    /// Handles the queued calls one at a time until ``close()``; those queued before it are still handled.
    func serve() async {
        var wakeUps = callQueued.makeAsyncIterator()
        repeat {
            var backlog = 0  // the most calls waiting at once since the queue was last empty
            while let (sender, handle, waiting) = calls.withLock({ queue -> (String, Job, Int)? in
                guard let (sender, job) = queue.next() else { return nil }
                return (sender, job, queue.count + 1)
            }) {
                backlog = max(backlog, waiting)
                await handle()
                calls.withLock { $0.finished(sender) }
            }
            // A burst of queued calls grew the heap, and glibc keeps the freed pages of a fragmented heap: measured,
            // 10,000 calls pipelined by one client left 12 MiB more resident for good. A few ms, after bursts only.
            if backlog >= Self.trimAfterBacklog { _ = malloc_trim(0) }
        } while await wakeUps.next() != nil
    }

    /// The connection closed: calls queued so far are still handled, later ones not.
    func close() {
        calls.withLock { $0.close() }
        callQueuedContinuation.finish()
    }
}
