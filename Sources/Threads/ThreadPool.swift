import Foundation
import Synchronization

/// Threads of their own for blocking work (a folder walked, a file stat'ed or read, a synchronous SQLite read): `run`
/// suspends its caller, a task or an actor, until the work is done on one of the pool's threads. The caller holds
/// none of the cooperative pool's threads meanwhile: there are as many of those as cores (two on a two-core machine),
/// and the D-Bus handlers, the player and every actor but the database's run there; one blocked thread of two is half
/// the daemon waiting.
///
/// ```swift
/// let folders = try await ThreadPool.fileSystem.run { try FolderWalk.audioFolders(in: path) }
/// ```
///
/// Jobs start in the order they were asked for, as many at once as the pool has threads; the others wait in the
/// pool's queue, not on a thread. A job that has started runs to its end: cancelling the caller's task doesn't stop
/// it. A thread starts when a job finds none free, up to ``threads``, and then lives as long as the process: a pool
/// whose jobs come one at a time keeps one thread (each costs its stack and its share of the heap's bookkeeping).
/// A pool is made once (``fileSystem``, the library's readers).
public final class ThreadPool: Sendable {
    /// How many jobs run at once, at most.
    public let threads: Int
    private let name: String
    /// The jobs not started yet, and the threads.
    private let state = Mutex(State())
    /// Signalled once per job queued; each thread waits on it for its next job.
    private let wake = DispatchSemaphore(value: 0)

    /// A pool of up to `threads` threads (at least one), each named `name` (what `top -H` and a debugger show; Linux
    /// keeps the first 15 bytes). None starts before the first job.
    public init(name: String, threads: Int) {
        self.threads = max(1, threads)
        self.name = name
    }

    /// Runs `work` on one of the pool's threads and returns what it returns, or throws what it throws. The caller is
    /// suspended meanwhile, on its own executor: it asks for the work from there (an actor's thread, or the task's) and
    /// goes on there, and no other thread is taken to make the request.
    public nonisolated(nonsending) func run<T: Sendable, E: Error>(_ work: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
        let result = await withCheckedContinuation { (done: CheckedContinuation<Result<T, E>, Never>) in
            enqueue {
                let result = Result(catching: work)
                return { done.resume(returning: result) }
            }
        }
        return try result.get()
    }

    /// How many jobs wait for a thread now.
    var waitingJobs: Int { state.withLock { $0.jobs.count } }

    /// How many threads have started.
    var startedThreads: Int { state.withLock { $0.started } }

    /// Queues `job` for a free thread: one waiting for work, else a new one while the pool has fewer than ``threads``.
    private func enqueue(_ job: @escaping Job) {
        let startsThread = state.withLock { state in
            state.jobs.push(job)
            if state.free > 0 {
                state.free -= 1
            } else if state.started < threads {
                state.started += 1
                return true
            } else {
                state.unclaimed += 1
            }
            return false
        }
        if startsThread { startThread(named: name) { [self] in serve() } }
        wake.signal()
    }

    private func serve() {
        while true {
            wake.wait()
            let job = state.withLock { $0.jobs.pop() }
            let finish = job()
            // Free before its caller goes on: a caller that asks again at once finds this thread, not a new one.
            state.withLock { state in
                if state.unclaimed > 0 { state.unclaimed -= 1 } else { state.free += 1 }
            }
            finish()
        }
    }

    /// A job does its work and returns what hands the outcome to its caller.
    private typealias Job = @Sendable () -> @Sendable () -> Void

    private struct State {
        var jobs = JobQueue()
        /// Threads started.
        var started = 0
        /// Threads done with their last job and not yet given another.
        var free = 0
        /// Jobs queued while every thread was busy: each goes to the next thread that is done.
        var unclaimed = 0
    }

    /// First in, first out, with no copying per job: a flood of calls may queue thousands of reads.
    private struct JobQueue {
        private var jobs: [Job?] = []
        private var head = 0

        mutating func push(_ job: @escaping Job) { jobs.append(job) }

        var count: Int { jobs.count - head }

        /// The oldest job; called once per `wake` signal, so there is one.
        mutating func pop() -> Job {
            let job = jobs[head]!
            jobs[head] = nil
            head += 1
            if head == jobs.count {
                jobs.removeAll(keepingCapacity: jobs.count <= 1024)
                head = 0
            } else if head >= 1024 && head * 2 >= jobs.count {
                jobs.removeFirst(head)
                head = 0
            }
            return job
        }
    }
}

extension ThreadPool {
    /// The process's blocking file-system work: an import's walk, its stats, fingerprints and covers; the folder
    /// watcher's walk as it starts watching; the LRC files and chapters read when a book or a file is opened.
    ///
    /// Four threads. They wait on the disk, not on the CPU, so their number needn't follow the cores: four is an
    /// import's fingerprints (one at a time per media reader: two on two cores) beside a walk and the words of a book
    /// being opened, without a thread per file. A file system that hangs (a network share gone) holds one thread per
    /// job that touches it; with four, a walk of it and a fingerprint hang and the others still run.
    public static let fileSystem = ThreadPool(name: "lectern-io", threads: 4)
}
