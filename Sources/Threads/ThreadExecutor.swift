import Foundation
import Synchronization

/// An executor on a thread of its own, whose jobs run there one after another and never hold, or wait for, one of the
/// cooperative pool's threads (two on a two-core machine). Two uses:
/// - the serial executor of an actor that does blocking work (SQLite writes):
///   ```swift
///   actor Writer {
///       let executor = ThreadExecutor(name: "lectern-db")
///       nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
///   }
///   ```
/// - a task executor preference (`withTaskExecutorPreference(executor) { ... }`): the task's nonisolated code, and
///   the code of the default actors it calls, run here, so that it goes on however busy the pool is (the D-Bus
///   connections' method calls, ``DBus/BusConnection/serveCalls()``).
///
/// The thread lives as long as the process: each executor is made once.
public final class ThreadExecutor: SerialExecutor, TaskExecutor {
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

    public func asUnownedTaskExecutor() -> UnownedTaskExecutor {
        UnownedTaskExecutor(ordinary: self)
    }

    private func run() {
        while true {
            wake.wait()
            let job = jobs.withLock { $0.removeFirst() }
            job.runSynchronously(isolatedTo: asUnownedSerialExecutor(), taskExecutor: asUnownedTaskExecutor())
        }
    }
}
