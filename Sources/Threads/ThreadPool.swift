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
/// it. The threads live as long as the process: a pool is made once (``fileSystem``, the library's readers).
public final class ThreadPool: Sendable {
    /// How many jobs run at once.
    public let threads: Int
    /// The jobs not started yet, oldest first.
    private let queue = Mutex(JobQueue())
    /// Signalled once per job queued; each thread waits on it for its next job.
    private let wake = DispatchSemaphore(value: 0)

    /// Starts `threads` threads (at least one), each named `name` (what `top -H` and a debugger show; Linux keeps the
    /// first 15 bytes).
    public init(name: String, threads: Int) {
        self.threads = max(1, threads)
        for _ in 0..<self.threads {
            startThread(named: name) { [self] in serve() }
        }
    }

    /// Runs `work` on one of the pool's threads and returns what it returns, or throws what it throws. The caller is
    /// suspended meanwhile, on its own executor: it asks for the work from there (an actor's thread, or the task's) and
    /// goes on there, and no other thread is taken to make the request.
    public nonisolated(nonsending) func run<T: Sendable, E: Error>(_ work: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
        let result = await withCheckedContinuation { (done: CheckedContinuation<Result<T, E>, Never>) in
            enqueue { done.resume(returning: Result(catching: work)) }
        }
        return try result.get()
    }

    /// How many jobs wait for a thread now.
    var waitingJobs: Int { queue.withLock { $0.count } }

    /// Queues `job` for the next free thread.
    private func enqueue(_ job: @escaping @Sendable () -> Void) {
        queue.withLock { $0.push(job) }
        wake.signal()
    }

    private func serve() {
        while true {
            wake.wait()
            let job = queue.withLock { $0.pop() }
            job()
        }
    }

    /// First in, first out, with no copying per job: a flood of calls may queue thousands of reads.
    private struct JobQueue {
        private var jobs: [(@Sendable () -> Void)?] = []
        private var head = 0

        mutating func push(_ job: @escaping @Sendable () -> Void) { jobs.append(job) }

        var count: Int { jobs.count - head }

        /// The oldest job; called once per `wake` signal, so there is one.
        mutating func pop() -> @Sendable () -> Void {
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
