import Synchronization

/// A `Clock` whose time only moves when the test calls ``advance(by:)``; sleepers resume when their
/// deadline is reached, or throw `CancellationError` when their task is cancelled.
final class ManualClock: Clock, Sendable {
    struct Instant: InstantProtocol {
        var offset: Duration
        func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        func duration(to other: Instant) -> Duration { other.offset - offset }
        static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
    }

    private struct Sleeper {
        let id: UInt64
        let deadline: Instant
        let tolerance: Duration?
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now = Instant(offset: .zero)
        var sleepers: [Sleeper] = []
        var cancelled: Set<UInt64> = []
        /// Sleepers resumed by ``advance(by:)`` whose task has not run on past its sleep yet.
        var woken: Set<UInt64> = []
        var nextID: UInt64 = 0
    }

    private let state = Mutex(State())

    init() {}

    var now: Instant { state.withLock { $0.now } }
    var minimumResolution: Duration { .zero }
    /// How many tasks are sleeping on this clock now.
    var sleeperCount: Int { state.withLock { $0.sleepers.count } }
    /// Whether a task sleeps with this tolerance (the player's tick loop sleeps with ``Player/tickTolerance``).
    func hasSleeper(tolerance: Duration) -> Bool { state.withLock { $0.sleepers.contains { $0.tolerance == tolerance } } }
    /// Whether every task that ``advance(by:)`` woke has run on past its sleep (to what it does next, e.g. a call to
    /// the player, queued on the actor by then unless the thread was pre-empted in between).
    var wokenHaveRun: Bool { state.withLock { $0.woken.isEmpty } }

    func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        let id = state.withLock { state -> UInt64 in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let result: Result<Void, any Error>? = state.withLock { state in
                    if state.cancelled.remove(id) != nil { return .failure(CancellationError()) }
                    if deadline <= state.now { return .success(()) }
                    state.sleepers.append(Sleeper(id: id, deadline: deadline, tolerance: tolerance, continuation: continuation))
                    return nil
                }
                if let result { continuation.resume(with: result) }
            }
            state.withLock { _ = $0.woken.remove(id) }
        } onCancel: {
            let sleeper = state.withLock { state -> Sleeper? in
                if let index = state.sleepers.firstIndex(where: { $0.id == id }) {
                    return state.sleepers.remove(at: index)
                }
                state.cancelled.insert(id)
                return nil
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves time forward and wakes every sleeper whose deadline has come.
    func advance(by duration: Duration) {
        let due = state.withLock { state -> [Sleeper] in
            state.now = state.now.advanced(by: duration)
            let now = state.now
            let due = state.sleepers.filter { $0.deadline <= now }
            state.sleepers.removeAll { $0.deadline <= now }
            state.woken.formUnion(due.map(\.id))
            return due
        }
        for sleeper in due { sleeper.continuation.resume() }
    }
}
