import Foundation
import Synchronization

/// A serial executor on a thread of its own: an actor that does blocking work (SQLite writes) runs its jobs here,
/// in order, and never holds one of the cooperative pool's threads (two on a two-core machine) while it waits.
///
/// ```swift
/// actor Writer {
///     let executor = ThreadExecutor(name: "lectern-db")
///     nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
/// }
/// ```
/// The thread lives as long as the process: one per such actor, made once by the daemon.
public final class ThreadExecutor: SerialExecutor {
    private let jobs = Mutex<[UnownedJob]>([])
    private let wake = DispatchSemaphore(value: 0)

    public init(name: String) {
        startThread(named: name) { [self] in run() }
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        jobs.withLock { $0.append(job) }
        wake.signal()
    }

    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    private func run() {
        while true {
            wake.wait()
            let job = jobs.withLock { $0.removeFirst() }
            job.runSynchronously(on: asUnownedSerialExecutor())
        }
    }
}
