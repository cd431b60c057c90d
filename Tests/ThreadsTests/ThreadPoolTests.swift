import Foundation
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif
@testable import Threads

/// A pool runs blocking work on threads of its own: its callers suspend and hold none of the cooperative pool's
/// threads, at most as many jobs run at once as it has threads, the others start in the order they were asked for,
/// a thread starts only when a job finds none free, and what the work returns or throws reaches its caller.
@Suite struct ThreadPoolTests {
    struct Refused: Error {}

    /// What the jobs of a test share (a closure given to a task can't capture a lock or an atomic in place).
    final class Shared: Sendable {
        let started = Mutex<[Int]>([])
        let running = Atomic(0)
        let released = Atomic(false)
    }

    /// Polls `condition` until it holds, for at most 60 s (the whole test run starts at once on two cores, and the
    /// tasks that ask for the jobs wait for the cooperative pool as every other test does); whether it held.
    private func eventually(_ condition: () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(60)
        while !condition() {
            if ContinuousClock.now > deadline { return false }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return true
    }

    @Test func theWorkRunsOnAThreadOfThePoolAndItsResultOrErrorComesBack() async throws {
        let pool = ThreadPool(name: "test-pool", threads: 2)
        let caller = pthread_self()
        let (name, sameThread) = await pool.run { (Thread.current.name, pthread_equal(pthread_self(), caller) != 0) }
        #expect(name == "test-pool")
        #expect(!sameThread)
        await #expect(throws: Refused.self) {
            try await pool.run { () throws(Refused) -> Int in throw Refused() }
        }
    }

    /// Jobs `numbers` asked of `pool` one after the other (each waits in its queue before the next is asked for, the
    /// first `running` excepted), each noting its number in `shared.started` as it starts, then waiting for `gate`.
    private func ask(_ pool: ThreadPool, _ numbers: Range<Int>, running: Int, shared: Shared,
                     gate: DispatchSemaphore) async -> [Task<Void, Never>] {
        var tasks: [Task<Void, Never>] = []
        for n in numbers {
            tasks.append(Task {
                await pool.run {
                    shared.started.withLock { $0.append(n) }
                    _ = gate.wait(timeout: .now() + 120)  // bounded: a pool that ran jobs inline would fail, not hang
                }
            })
            if n < running {
                #expect(await eventually { shared.started.withLock { $0.count } == n + 1 })
            } else {
                #expect(await eventually { pool.waitingJobs == n + 1 - running })
            }
        }
        return tasks
    }

    @Test func atMostAsManyJobsRunAsThePoolHasThreads() async throws {
        let pool = ThreadPool(name: "test-width", threads: 2)
        let gate = DispatchSemaphore(value: 0)
        let shared = Shared()
        // Two run, both threads taken: the four asked for next wait in the queue, and none starts.
        let tasks = await ask(pool, 0..<6, running: 2, shared: shared, gate: gate)
        #expect(shared.started.withLock { $0.count } == 2, "no third thread")
        #expect(pool.waitingJobs == 4)
        #expect(pool.startedThreads == 2)
        for _ in tasks { gate.signal() }
        for task in tasks { await task.value }
        #expect(shared.started.withLock { Set($0) } == Set(0..<6))
        #expect(pool.waitingJobs == 0)
    }

    @Test func aThreadStartsOnlyWhenAJobFindsNoneFree() async throws {
        let pool = ThreadPool(name: "test-lazy", threads: 4)
        #expect(pool.startedThreads == 0)
        // One job at a time: each finds the thread the one before ran on free.
        var threads: Set<pthread_t> = []
        for _ in 0..<5 { threads.insert(await pool.run { pthread_self() }) }
        #expect(threads.count == 1)
        #expect(pool.startedThreads == 1)
        // Three at once: two more threads, and no more than that.
        let gate = DispatchSemaphore(value: 0)
        let shared = Shared()
        let tasks = await ask(pool, 0..<3, running: 3, shared: shared, gate: gate)
        #expect(pool.startedThreads == 3)
        for _ in tasks { gate.signal() }
        for task in tasks { await task.value }
        #expect(pool.startedThreads == 3)
    }

    @Test func jobsStartInTheOrderTheyWereAskedFor() async throws {
        let pool = ThreadPool(name: "test-order", threads: 1)
        let gate = DispatchSemaphore(value: 0)
        let shared = Shared()
        let tasks = await ask(pool, 0..<6, running: 1, shared: shared, gate: gate)
        for _ in tasks { gate.signal() }
        for task in tasks { await task.value }
        #expect(shared.started.withLock { $0 } == Array(0..<6))
    }

    @Test func workThatBlocksHoldsNoneOfTheCooperativePoolsThreads() async throws {
        // More jobs blocked at once than the cooperative pool has threads (one per core).
        let count = ProcessInfo.processInfo.activeProcessorCount * 2 + 2
        let pool = ThreadPool(name: "test-block", threads: count)
        let gate = DispatchSemaphore(value: 0)
        let shared = Shared()
        let release = { @Sendable in
            guard !shared.released.exchange(true, ordering: .relaxed) else { return }
            for _ in 0..<count { gate.signal() }
        }
        // A net, on a thread of its own: were the blocked jobs holding the cooperative pool's threads, nothing below
        // would run until it lets them go.
        Thread {
            Thread.sleep(forTimeInterval: 120)
            release()
        }.start()
        let blocked = (0..<count).map { _ in
            Task {
                await pool.run {
                    shared.running.add(1, ordering: .relaxed)
                    _ = gate.wait(timeout: .now() + 120)  // bounded: a pool that ran jobs inline would fail, not hang
                }
            }
        }
        #expect(await eventually { shared.running.load(ordering: .relaxed) == count })
        let ranWhileBlocked = await Task.detached { !shared.released.load(ordering: .relaxed) }.value
        #expect(ranWhileBlocked, "a task on the cooperative pool ran while \(count) jobs blocked")
        release()
        for task in blocked { await task.value }
    }
}
