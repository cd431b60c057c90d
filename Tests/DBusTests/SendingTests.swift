import Foundation
import Synchronization
import Testing
@testable import DBus
import TestSupport

/// Sending never waits for the connection's I/O thread, which answers Get while it dispatches: an owner that sends
/// while it holds a lock that a property's getter takes too (the player's state, the store that orders
/// PropertiesChanged) must not deadlock with it.
@Suite struct SendingTests {
    static let path = "/org/example/Locked"
    static let interface = "org.example.Locked"

    @Test func anOwnerSendingUnderALockItsGetterTakesNeverDeadlocks() async throws {
        let bus = try PrivateBus()
        let server = try BusConnection(address: bus.address)
        let client = try BusConnection(address: bus.address)
        let shared = Mutex<Int32>(0)
        let value = Property("Value", .int32, changes: .none, get: { .int32(shared.withLock { $0 }) })
        let object = try server.export(ObjectPath(Self.path)!, interfaces: [
            Interface(Self.interface, properties: [value], signals: [SignalDecl("Ticked", [("count", .int32)])]),
        ])
        // The owner, on a thread of its own: each signal sent with the lock held.
        let sent = Mutex<Int32>(0)
        Thread {
            for count in Int32(1)...2000 {
                shared.withLock { current in
                    current = count
                    try? object.emit(Self.interface, "Ticked", [.int32(count)])
                }
                sent.withLock { $0 = count }
            }
        }.start()
        var last: Int32 = 0
        for _ in 0..<200 {
            let reply: [DBusValue]
            do {
                reply = try await client.call(server.uniqueName, path: Self.path, interface: "org.freedesktop.DBus.Properties",
                                              member: "Get", [.string(Self.interface), .string("Value")], timeout: .seconds(5))
            } catch {
                // Deadlocked: closing the server would wait for its I/O thread for good, so it is left behind.
                Issue.record("Get failed after \(sent.withLock { $0 }) signals: \(error)")
                return
            }
            guard case .variant(.int32(let seen))? = reply.first else {
                Issue.record("unexpected reply \(reply)")
                return
            }
            #expect(seen >= last, "the value went back from \(last) to \(seen)")
            last = seen
        }
        let finished = try await poll(timeout: .seconds(20), { sent.withLock { $0 } }, until: { $0 == 2000 })
        #expect(finished == 2000, "the owner stopped after \(finished) signals")
        guard finished == 2000 else { return }
        client.close()
        server.close()
    }
}
