import Foundation
import Synchronization
import Testing
@testable import DBus
import TestSupport

/// A client call waiting for its reply ends, with an error, when its connection closes or its bus goes away: never
/// waits for good, never ends twice (a continuation resumed twice traps, and the test process with it).
@Suite struct PendingCallTests {
    static let path = "/org/example/Deaf"
    static let interface = "org.example.Deaf"
    static let disconnected = "org.freedesktop.DBus.Error.Disconnected"

    /// A bus, a server whose `Never` method never answers, and a client.
    final class Fixture: Sendable {
        let bus: PrivateBus
        let server: BusConnection
        let client: BusConnection
        let serving: Task<Void, Never>
        /// How many `Never` calls reached their handler.
        let started = Counter()

        init() async throws {
            bus = try PrivateBus()
            server = try BusConnection(address: bus.address)
            client = try BusConnection(address: bus.address)
            let started = self.started
            let deaf = Interface(PendingCallTests.interface, methods: [
                Method("Never") { _ in
                    started.value.withLock { $0 += 1 }
                    try await Task.sleep(for: .seconds(3600))
                    return []
                },
            ])
            _ = try server.export(ObjectPath(PendingCallTests.path)!, interfaces: [deaf])
            let server = self.server
            serving = Task(executorPreference: BusConnection.callThread) { await server.serveCalls() }
        }

        /// Calls `Never` from the client, in a task of its own.
        func callNever() -> StartedCall {
            let client = self.client, server = self.server.uniqueName
            return StartedCall.start {
                try await client.call(server, path: PendingCallTests.path, interface: PendingCallTests.interface,
                                      member: "Never", timeout: .seconds(120))
            }
        }

        /// Waits until `count` calls reached the handler (the first of them was sent and is waiting).
        func waitForHandlers(_ count: Int32) async throws {
            let reached = try await poll(timeout: .seconds(20), { self.started.value.withLock { $0 } }, until: { $0 >= count })
            try #require(reached >= count, "the server's handler was never called")
        }

        deinit {
            serving.cancel()
            client.close()
            server.close()
        }
    }

    @Test func aCallWaitingForItsReplyFailsWhenItsConnectionIsClosed() async throws {
        let f = try await Fixture()
        let call = f.callNever()
        try await f.waitForHandlers(1)
        f.client.close()
        let error = try await call.error(within: .seconds(10))
        #expect(error?.name == Self.disconnected, "\(String(describing: error))")
    }

    @Test func aCallWaitingForItsReplyFailsWhenTheBusIsKilled() async throws {
        let f = try await Fixture()
        let call = f.callNever()
        try await f.waitForHandlers(1)
        f.bus.stop()
        let error = try await call.error(within: .seconds(10))
        #expect(error?.name == Self.disconnected, "\(String(describing: error))")
        #expect(!f.client.isConnected)
    }

    @Test func aCallMadeAfterTheConnectionClosedFailsAtOnce() async throws {
        let f = try await Fixture()
        f.client.close()
        let error = try await f.callNever().error(within: .seconds(10))
        #expect(error?.name == Self.disconnected, "\(String(describing: error))")
        #expect(f.started.value.withLock { $0 } == 0)
    }

    /// Calls sent, queued behind the first, and still being made when the connection goes: each ends once, with the
    /// error, whether the close or the bus's death comes first.
    @Test(arguments: ["close", "kill the bus"])
    func manyCallsInEveryStateAllFailOnce(ending: String) async throws {
        let f = try await Fixture()
        var calls = (0..<40).map { _ in f.callNever() }
        try await f.waitForHandlers(1)
        calls += (0..<40).map { _ in f.callNever() }
        if ending == "close" { f.client.close() } else { f.bus.stop() }
        calls += (0..<10).map { _ in f.callNever() }
        for (index, call) in calls.enumerated() {
            let error = try await call.error(within: .seconds(10))
            #expect(error?.name == Self.disconnected, "call \(index): \(String(describing: error))")
        }
    }

    /// Calls made from several threads at the moment the bus dies, with calls pending: each ends with the error and
    /// the process survives (libdbus crashes when two threads at once queue its one Disconnected message). Rounds,
    /// because one round loses the race only now and then.
    @Test func callsRacingTheBusDeathAllEndWithTheError() async throws {
        for round in 0..<40 {
            let f = try await Fixture()
            var calls = (0..<20).map { _ in f.callNever() }
            try await f.waitForHandlers(1)
            let racing = (0..<4).map { _ in
                Task {
                    var started: [StartedCall] = []
                    for _ in 0..<20 {
                        started.append(f.callNever())
                        await Task.yield()
                    }
                    return started
                }
            }
            f.bus.stop()
            for task in racing { calls += await task.value }
            for (index, call) in calls.enumerated() {
                let error = try await call.error(within: .seconds(10))
                #expect(error?.name == Self.disconnected, "round \(round), call \(index): \(String(describing: error))")
            }
        }
    }

    /// A connection closed on its own I/O thread, while it dispatches (here by a property's getter): its calls
    /// waiting for replies end all the same.
    @Test func aCloseDuringDispatchEndsTheConnectionsCalls() async throws {
        let f = try await Fixture()
        let closing = try BusConnection(address: f.bus.address)
        let gets = Counter()
        let closed = Property("Closed", .boolean, changes: .none, get: { [weak closing] in
            gets.value.withLock { $0 += 1 }
            closing?.close()
            return .boolean(true)
        })
        _ = try closing.export(ObjectPath("/org/example/Closing")!, interfaces: [Interface("org.example.Closing", properties: [closed])])
        let server = f.server.uniqueName
        let call = StartedCall.start {
            try await closing.call(server, path: Self.path, interface: Self.interface, member: "Never", timeout: .seconds(120))
        }
        try await f.waitForHandlers(1)
        // The reply may never come: the getter closed the connection before it could answer.
        _ = try? await f.client.call(closing.uniqueName, path: "/org/example/Closing", interface: "org.freedesktop.DBus.Properties",
                                     member: "Get", [.string("org.example.Closing"), .string("Closed")], timeout: .seconds(2))
        #expect(gets.value.withLock { $0 } == 1)
        let error = try await call.error(within: .seconds(10))
        #expect(error?.name == Self.disconnected, "\(String(describing: error))")
    }
}

/// A call running in a task of its own, whose end is waited for with a limit: a call whose continuation leaked never
/// ends, and the test must fail rather than wait with it.
final class StartedCall: Sendable {
    private let outcome = Mutex<Result<[DBusValue], any Error>?>(nil)

    private init() {}

    static func start(_ body: @escaping @Sendable () async throws -> [DBusValue]) -> StartedCall {
        let call = StartedCall()
        Task {
            let result: Result<[DBusValue], any Error>
            do { result = .success(try await body()) } catch { result = .failure(error) }
            call.outcome.withLock { $0 = result }
        }
        return call
    }

    /// The D-Bus error the call ended with; nil when it succeeded or threw something else. Fails the test when it
    /// has not ended within `limit`.
    func error(within limit: Duration) async throws -> BusError? {
        let result = try await poll(timeout: limit, every: .milliseconds(5), { self.outcome.withLock { $0 } }, until: { $0 != nil })
        let ended = try #require(result, "the call did not end within \(limit)")
        guard case .failure(let error) = ended else { return nil }
        return error as? BusError
    }
}
