import Dispatch
import Foundation
import Logging
import Synchronization

/// How the daemon ends, whatever hangs: within ``deadline`` of the first request to stop, and at once on a second
/// signal.
///
/// The clock starts at the first request: a signal (from the signal watcher's queue, so even a start-up or a
/// shutdown that is stuck cannot hold it back), or the daemon's own decision to stop (a client's Quit, the bus going
/// away). When the process is still running ``deadline`` later, it logs the activities still running and exits
/// with ``deadlineStatus``. A second signal ends it at once with 128 + the signal. Saving the position is the first
/// thing shutdown does, so both find it done unless the save itself is what hangs.
///
/// ```swift
/// let shutdown = Shutdown(logger: logger)
/// shutdown.begin("the bus connection closed")   // the clock starts
/// await shutdown.activity("saving the position") { await session.close() }
/// ```
final class Shutdown: Sendable {
    /// How long stopping may take before the process exits anyway: saving the position takes milliseconds, and the
    /// rest (stopping the pipeline, giving the names back) well under a second when nothing hangs.
    static let deadline: Duration = .seconds(5)
    /// The exit status when the deadline ended the process.
    static let deadlineStatus: Int32 = 1

    private struct State {
        var reason: String?
        var signals = 0
        /// What runs now, by id: the daemon's tasks and shutdown's steps.
        var activities: [Int: String] = [:]
        var nextID = 0
    }
    private let state = Mutex(State())
    private let logger: Logger
    private let deadline: Duration
    private let exit: @Sendable (Int32) -> Void

    /// `exit` ends the process with a status; the default flushes the output and calls `_exit`: nothing of the process
    /// may still run (atexit handlers, destructors) once it decided to end.
    init(logger: Logger, deadline: Duration = Shutdown.deadline,
         exit: @escaping @Sendable (Int32) -> Void = { Shutdown.exitNow($0) }) {
        self.logger = logger
        self.deadline = deadline
        self.exit = exit
    }

    static func exitNow(_ status: Int32) {
        fflush(nil)
        _exit(status)
    }

    /// Starts the clock, once; later calls do nothing. True when this call started it.
    @discardableResult
    func begin(_ reason: String) -> Bool {
        let first = state.withLock { state in
            guard state.reason == nil else { return false }
            state.reason = reason
            return true
        }
        guard first else { return false }
        let nanoseconds = deadline.components.seconds * 1_000_000_000 + deadline.components.attoseconds / 1_000_000_000
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(nanoseconds))) { [self] in expire() }
        return true
    }

    /// A signal came: the first starts the clock (true: the caller asks the daemon to stop); the second ends the
    /// process at once.
    func signalled(_ number: Int32) -> Bool {
        let count = state.withLock { state in
            state.signals += 1
            return state.signals
        }
        guard count > 1 else {
            begin("signal \(number)")
            return true
        }
        logger.warning("lecternd: a second signal: exiting now", metadata: ["signal": "\(number)", "still running": "\(running)"])
        exit(128 + number)
        return false
    }

    /// Runs `body` as a named activity: the deadline's log line lists those still running.
    func activity<T>(_ name: String, _ body: () async throws -> T) async rethrows -> T {
        let id = enter(name)
        defer { leave(id) }
        return try await body()
    }

    /// An activity that starts here and ends at ``leave(_:)`` with the id this returns.
    func enter(_ name: String) -> Int {
        state.withLock { state in
            defer { state.nextID += 1 }
            state.activities[state.nextID] = name
            return state.nextID
        }
    }

    func leave(_ id: Int) {
        _ = state.withLock { $0.activities.removeValue(forKey: id) }
    }

    /// The activities running now, oldest first.
    var running: String {
        let names = state.withLock { $0.activities.sorted { $0.key < $1.key }.map(\.value) }
        return names.isEmpty ? "nothing" : names.joined(separator: ", ")
    }

    private func expire() {
        let reason = state.withLock { $0.reason } ?? "?"
        logger.error("lecternd: shutdown did not finish within \(deadline): exiting anyway",
                     metadata: ["reason": "\(reason)", "still running": "\(running)"])
        exit(Self.deadlineStatus)
    }
}
