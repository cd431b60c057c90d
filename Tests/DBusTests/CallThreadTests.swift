import Foundation
import Testing
import DBus
import TestSupport

/// A connection's method calls run on a thread of their own (`dbus-calls`), with the default actors their handlers
/// call and the completions of deferred methods: a call is answered while every thread of Swift's cooperative pool
/// is held by other work.
@Suite struct CallThreadTests {
    /// A default actor, as the daemon's `Player` is.
    actor Tally {
        var count = 0
        func add() -> Int {
            count += 1
            return count
        }
    }

    /// Holds every thread of the cooperative pool until `released` has been signalled once per holder (or 30 s), and
    /// runs `work` on a thread of its own once they are all held. Returns what `work` returned and, for each holder,
    /// whether it was released in time.
    static func withThePoolHeld<T: Sendable>(until released: DispatchSemaphore,
                                             _ work: @escaping @Sendable () -> T) async -> (T, [Bool]) {
        let width = ProcessInfo.processInfo.activeProcessorCount
        let holding = DispatchSemaphore(value: 0)
        let holders = (0..<width).map { _ in
            Task.detached {
                holding.signal()
                return released.wait(timeout: .now() + 30) == .success
            }
        }
        // Not on the pool: once the holders hold, no thread of it is left to this task until they are released.
        let result = await withCheckedContinuation { (done: CheckedContinuation<T, Never>) in
            Thread {
                for _ in 0..<width { holding.wait() }
                done.resume(returning: work())
            }.start()
        }
        var inTime: [Bool] = []
        for holder in holders { inTime.append(await holder.value) }
        return (result, inTime)
    }

    @Test func aCallIsAnsweredWhileEveryThreadOfThePoolIsHeld() async throws {
        let bus = try PrivateBus()
        let server = try BusConnection(address: bus.address)
        defer { server.close() }
        let tally = Tally()
        let released = DispatchSemaphore(value: 0)
        let width = ProcessInfo.processInfo.activeProcessorCount
        let object = Interface("org.example.Held", methods: [
            // Through an actor: its code runs where the handler runs.
            Method("Count", out: [("count", .int32)]) { _ in
                let count = await tally.add()
                released.signal()
                return [.int32(Int32(count))]
            },
            // The completion runs after the call queue has moved on, in a task of its own.
            Method.deferred("Later", out: [("count", .int32)]) { _ in
                { [tally] in
                    let count = await tally.add()
                    released.signal()
                    return [.int32(Int32(count))]
                }
            },
        ])
        _ = try server.export(ObjectPath("/org/example/Held")!, interfaces: [object])
        let serving = Task(executorPreference: BusConnection.callThread) { await server.serveCalls() }
        defer { serving.cancel() }
        // A first call answered with the pool free.
        let client = try BusConnection(address: bus.address)
        defer { client.close() }
        #expect(try await client.call(server.uniqueName, path: "/org/example/Held", interface: "org.example.Held",
                                      member: "Count") == [.int32(1)])
        released.wait()

        // Sent by gdbus, once every thread of the pool is held: each call releases one holder, half of them
        // through the deferred method (the first: a holder released frees a thread).
        let (replies, inTime) = await Self.withThePoolHeld(until: released) {
            (0..<width).map { index in
                let member = index.isMultiple(of: 2) ? "Later" : "Count"
                let result = try? Subprocess.run("gdbus", [
                    "call", "--address", bus.address, "--dest", server.uniqueName, "--object-path", "/org/example/Held",
                    "--method", "org.example.Held.\(member)", "--timeout", "20",
                ], timeout: .seconds(25))
                return result.map { $0.stdout + $0.stderr } ?? "dbus-send did not end"
            }
        }
        #expect(inTime.allSatisfy { $0 }, "a thread of the pool was held to the end: a call waited for the pool")
        #expect(replies.count == width)
        for (index, reply) in replies.enumerated() {
            #expect(reply.contains("(\(index + 2),)"), "call \(index + 2): \(reply)")
        }
    }
}
