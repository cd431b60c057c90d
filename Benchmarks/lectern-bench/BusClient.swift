import CDBus
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A deliberately thin, synchronous libdbus client: one private connection, used by one thread only.
/// Method calls are `dbus_connection_send_with_reply_and_block`; signals are read with
/// `dbus_connection_read_write` + `dbus_connection_pop_message`. No dispatch, no filters, no Swift layer
/// between the clock and the socket beyond what is timed.
final class BusClient {
    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    let connection: OpaquePointer
    let uniqueName: String

    init(address: String) throws {
        var error = DBusError()
        dbus_error_init(&error)
        guard let connection = dbus_connection_open_private(address, &error) else {
            defer { dbus_error_free(&error) }
            throw Failure("cannot connect to \(address): \(BusClient.text(error))")
        }
        dbus_connection_set_exit_on_disconnect(connection, 0)
        guard dbus_bus_register(connection, &error) != 0 else {
            defer { dbus_error_free(&error) }
            dbus_connection_close(connection)
            dbus_connection_unref(connection)
            throw Failure("Hello failed: \(BusClient.text(error))")
        }
        self.connection = connection
        self.uniqueName = dbus_bus_get_unique_name(connection).map { String(cString: $0) } ?? "?"
    }

    deinit {
        dbus_connection_close(connection)
        dbus_connection_unref(connection)
    }

    static func text(_ error: DBusError) -> String {
        let name = error.name.map { String(cString: $0) } ?? "?"
        let message = error.message.map { String(cString: $0) } ?? ""
        return "\(name): \(message)"
    }

    // MARK: Building messages

    enum Argument {
        case string(String)
        case int64(Int64)
        case uint32(UInt32)
        case bool(Bool)
        /// a{sv} whose values are all strings (a library query).
        case stringVardict([(String, String)])
        /// a{sv} of numbers and booleans (a book's settings).
        case vardict([(String, Variant)])
    }

    enum Variant {
        case string(String)
        case double(Double)
        case bool(Bool)
    }

    private static func appendString(_ iter: inout DBusMessageIter, _ s: String) {
        s.withCString { cString in
            var pointer: UnsafePointer<CChar>? = cString
            _ = dbus_message_iter_append_basic(&iter, typeCode("s"), &pointer)
        }
    }

    /// A new method call with `arguments` appended (the caller unrefs it, or `call` does).
    static func methodCall(_ destination: String, _ path: String, _ interface: String, _ member: String,
                           _ arguments: [Argument] = []) -> OpaquePointer {
        guard let message = dbus_message_new_method_call(destination, path, interface, member) else {
            fatalError("out of memory building \(interface).\(member)")
        }
        var iter = DBusMessageIter()
        dbus_message_iter_init_append(message, &iter)
        for argument in arguments {
            switch argument {
            case .string(let s):
                appendString(&iter, s)
            case .int64(let value):
                var v = value
                _ = dbus_message_iter_append_basic(&iter, typeCode("x"), &v)
            case .uint32(let value):
                var v = value
                _ = dbus_message_iter_append_basic(&iter, typeCode("u"), &v)
            case .bool(let value):
                var v: dbus_bool_t = value ? 1 : 0
                _ = dbus_message_iter_append_basic(&iter, typeCode("b"), &v)
            case .stringVardict(let pairs):
                appendVardict(&iter, pairs.map { ($0, .string($1)) })
            case .vardict(let pairs):
                appendVardict(&iter, pairs)
            }
        }
        return message
    }

    private static func appendVardict(_ iter: inout DBusMessageIter, _ pairs: [(String, Variant)]) {
        var array = DBusMessageIter()
        _ = dbus_message_iter_open_container(&iter, typeCode("a"), "{sv}", &array)
        for (key, value) in pairs {
            var entry = DBusMessageIter()
            _ = dbus_message_iter_open_container(&array, typeCode("e"), nil, &entry)
            appendString(&entry, key)
            var variant = DBusMessageIter()
            switch value {
            case .string(let s):
                _ = dbus_message_iter_open_container(&entry, typeCode("v"), "s", &variant)
                appendString(&variant, s)
            case .double(let d):
                _ = dbus_message_iter_open_container(&entry, typeCode("v"), "d", &variant)
                var v = d
                _ = dbus_message_iter_append_basic(&variant, typeCode("d"), &v)
            case .bool(let b):
                _ = dbus_message_iter_open_container(&entry, typeCode("v"), "b", &variant)
                var v: dbus_bool_t = b ? 1 : 0
                _ = dbus_message_iter_append_basic(&variant, typeCode("b"), &v)
            }
            _ = dbus_message_iter_close_container(&entry, &variant)
            _ = dbus_message_iter_close_container(&array, &entry)
        }
        _ = dbus_message_iter_close_container(&iter, &array)
    }

    static func typeCode(_ c: Unicode.Scalar) -> Int32 { Int32(c.value) }

    // MARK: Calls

    /// Sends `message` (consumed) and blocks for the reply; returns the time the round trip took (ns,
    /// send to reply) and whether the reply was a method return. The reply is freed after the clock stops.
    @inline(__always)
    func timedCall(_ message: OpaquePointer, timeoutMs: Int32 = 25_000) -> (ns: UInt64, ok: Bool) {
        let (ns, outcome) = timedRoundTrip(message, timeoutMs: timeoutMs)
        return (ns, outcome == .returned)
    }

    /// Like ``timedCall(_:timeoutMs:)``, for a call whose reply may be an error: whether any reply came (not a timeout,
    /// nor the connection lost).
    func timedAnswer(_ message: OpaquePointer, timeoutMs: Int32 = 25_000) -> (ns: UInt64, answered: Bool) {
        let (ns, outcome) = timedRoundTrip(message, timeoutMs: timeoutMs)
        return (ns, outcome != .noReply)
    }

    enum Outcome { case returned, error, noReply }

    @inline(__always)
    private func timedRoundTrip(_ message: OpaquePointer, timeoutMs: Int32) -> (ns: UInt64, outcome: Outcome) {
        var error = DBusError()
        dbus_error_init(&error)
        let start = DispatchTime.now().uptimeNanoseconds
        let reply = dbus_connection_send_with_reply_and_block(connection, message, timeoutMs, &error)
        let end = DispatchTime.now().uptimeNanoseconds
        dbus_message_unref(message)
        if let reply {
            let returned = dbus_message_get_type(reply) == 2  // DBUS_MESSAGE_TYPE_METHOD_RETURN
            dbus_message_unref(reply)
            return (end - start, returned ? .returned : .error)
        }
        // An error reply comes back as `error` set and no message; a timeout or a lost connection as one of these.
        let name = error.name.map { String(cString: $0) }
        dbus_error_free(&error)
        let lost = name == nil || name == "org.freedesktop.DBus.Error.NoReply" || name == "org.freedesktop.DBus.Error.Disconnected"
        return (end - start, lost ? .noReply : .error)
    }

    /// A blocking call whose reply the caller inspects (and must unref).
    func call(_ message: OpaquePointer, timeoutMs: Int32 = 10_000) throws -> OpaquePointer {
        var error = DBusError()
        dbus_error_init(&error)
        let reply = dbus_connection_send_with_reply_and_block(connection, message, timeoutMs, &error)
        dbus_message_unref(message)
        guard let reply else {
            defer { dbus_error_free(&error) }
            throw Failure(BusClient.text(error))
        }
        return reply
    }

    /// Sends without waiting (the method return, if any, arrives later as an incoming message).
    func send(_ message: OpaquePointer) {
        _ = dbus_connection_send(connection, message, nil)
        dbus_message_unref(message)
        dbus_connection_flush(connection)
    }

    func addMatch(_ rule: String) throws {
        var error = DBusError()
        dbus_error_init(&error)
        dbus_bus_add_match(connection, rule, &error)
        if dbus_error_is_set(&error) != 0 {
            defer { dbus_error_free(&error) }
            throw Failure("AddMatch \(rule): \(BusClient.text(error))")
        }
    }

    func removeMatch(_ rule: String) {
        var error = DBusError()
        dbus_error_init(&error)
        dbus_bus_remove_match(connection, rule, &error)
        if dbus_error_is_set(&error) != 0 { dbus_error_free(&error) }
    }

    // MARK: Incoming messages

    /// Drops everything already received.
    func drain() {
        _ = dbus_connection_read_write(connection, 0)
        while let message = dbus_connection_pop_message(connection) { dbus_message_unref(message) }
    }

    /// Reads until a message satisfies `predicate` (which must not keep it), or `timeout` passes.
    /// Returns the monotonic time (ns) at which the matching message was popped.
    func waitFor(timeout: Duration, _ predicate: (OpaquePointer) -> Bool) -> UInt64? {
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(timeout.components.seconds) * 1_000_000_000
            + UInt64(timeout.components.attoseconds / 1_000_000_000)
        while true {
            while let message = dbus_connection_pop_message(connection) {
                let now = DispatchTime.now().uptimeNanoseconds
                let hit = predicate(message)
                dbus_message_unref(message)
                if hit { return now }
            }
            let now = DispatchTime.now().uptimeNanoseconds
            if now >= deadline { return nil }
            let remainingMs = Int32(clamping: (deadline - now) / 1_000_000 + 1)
            guard dbus_connection_read_write(connection, min(remainingMs, 1000)) != 0 else { return nil }
        }
    }

    // MARK: Convenience calls (not timed)

    func string(_ destination: String, _ path: String, _ interface: String, _ member: String,
                _ arguments: [Argument] = []) throws -> String? {
        let reply = try call(BusClient.methodCall(destination, path, interface, member, arguments))
        defer { dbus_message_unref(reply) }
        return MessageReader(reply).strings().first
    }

    func getProperty(_ destination: String, interface: String, _ name: String) throws -> String? {
        try property(destination, interface: interface, name) { MessageReader.basicString(&$0) }
    }

    /// An Int64 property (MPRIS Position, µs); nil if it is something else.
    func getInt64Property(_ destination: String, interface: String, _ name: String) throws -> Int64? {
        try property(destination, interface: interface, name) { value in
            guard dbus_message_iter_get_arg_type(&value) == BusClient.typeCode("x") else { return nil }
            var number: Int64 = 0
            dbus_message_iter_get_basic(&value, &number)
            return number
        }
    }

    /// Properties.Get on the MPRIS object; `read` gets the variant's content.
    private func property<T>(_ destination: String, interface: String, _ name: String,
                             _ read: (inout DBusMessageIter) -> T?) throws -> T? {
        let reply = try call(BusClient.methodCall(destination, "/org/mpris/MediaPlayer2",
                                                  "org.freedesktop.DBus.Properties", "Get",
                                                  [.string(interface), .string(name)]))
        defer { dbus_message_unref(reply) }
        var iter = DBusMessageIter()
        guard dbus_message_iter_init(reply, &iter) != 0,
              dbus_message_iter_get_arg_type(&iter) == BusClient.typeCode("v") else { return nil }
        var inner = DBusMessageIter()
        dbus_message_iter_recurse(&iter, &inner)
        return read(&inner)
    }

    func listNames() throws -> [String] {
        let reply = try call(BusClient.methodCall("org.freedesktop.DBus", "/org/freedesktop/DBus",
                                                  "org.freedesktop.DBus", "ListNames"))
        defer { dbus_message_unref(reply) }
        var iter = DBusMessageIter()
        guard dbus_message_iter_init(reply, &iter) != 0,
              dbus_message_iter_get_arg_type(&iter) == BusClient.typeCode("a") else { return [] }
        var element = DBusMessageIter()
        dbus_message_iter_recurse(&iter, &element)
        var names: [String] = []
        while let s = MessageReader.basicString(&element) {
            names.append(s)
            guard dbus_message_iter_next(&element) != 0 else { break }
        }
        return names
    }
}

/// Reads the few message shapes the benchmark needs.
struct MessageReader {
    let message: OpaquePointer
    init(_ message: OpaquePointer) { self.message = message }

    static func basicString(_ iter: inout DBusMessageIter) -> String? {
        let type = dbus_message_iter_get_arg_type(&iter)
        guard type == BusClient.typeCode("s") || type == BusClient.typeCode("o") else { return nil }
        var pointer: UnsafePointer<CChar>? = nil
        dbus_message_iter_get_basic(&iter, &pointer)
        return pointer.map { String(cString: $0) }
    }

    /// The leading string arguments.
    func strings() -> [String] {
        var iter = DBusMessageIter()
        guard dbus_message_iter_init(message, &iter) != 0 else { return [] }
        var out: [String] = []
        while let s = MessageReader.basicString(&iter) {
            out.append(s)
            guard dbus_message_iter_next(&iter) != 0 else { break }
        }
        return out
    }

    func isSignal(_ interface: String, _ member: String) -> Bool {
        dbus_message_get_type(message) == 4 && dbus_message_is_signal(message, interface, member) != 0
    }

    /// For a PropertiesChanged(s a{sv} as): the string value of `property` in the changed dictionary.
    func changedString(_ property: String) -> String? {
        var iter = DBusMessageIter()
        guard dbus_message_iter_init(message, &iter) != 0, dbus_message_iter_next(&iter) != 0,
              dbus_message_iter_get_arg_type(&iter) == BusClient.typeCode("a") else { return nil }
        var entries = DBusMessageIter()
        dbus_message_iter_recurse(&iter, &entries)
        while dbus_message_iter_get_arg_type(&entries) == BusClient.typeCode("e") {
            var entry = DBusMessageIter()
            dbus_message_iter_recurse(&entries, &entry)
            if MessageReader.basicString(&entry) == property, dbus_message_iter_next(&entry) != 0 {
                var variant = DBusMessageIter()
                dbus_message_iter_recurse(&entry, &variant)
                return MessageReader.basicString(&variant)
            }
            guard dbus_message_iter_next(&entries) != 0 else { break }
        }
        return nil
    }
}

/// A client that owns `name` and answers every method call with a copy of one reply it fetched from another peer:
/// the floor of a reply's transport (dbus-daemon relaying it, the caller's libdbus reading it), without the work of
/// making it. Its own thread and connection; the fetched message never leaves that thread.
final class EchoPeer {
    private final class State: Sendable {
        let value = Mutex<(ready: Bool, failure: String?, stop: Bool)>((false, nil, false))
    }
    private let state = State()
    private let thread: Thread

    /// Starts the peer: it calls `fetch` (its reply is what it echoes) and takes `name`; returns once it answers.
    init(address: String, name: String, fetch: @escaping @Sendable () -> OpaquePointer) throws {
        let state = self.state
        thread = Thread {
            let peer: BusClient, reply: OpaquePointer
            do {
                peer = try BusClient(address: address)
                reply = try peer.call(fetch(), timeoutMs: 60_000)
                var error = DBusError()
                dbus_error_init(&error)
                guard dbus_bus_request_name(peer.connection, name, 0, &error) == 1 else {
                    defer { dbus_error_free(&error) }
                    throw BusClient.Failure("RequestName \(name): \(BusClient.text(error))")
                }
            } catch {
                state.value.withLock { $0.failure = "\(error)" }
                return
            }
            defer { dbus_message_unref(reply) }
            state.value.withLock { $0.ready = true }
            while !state.value.withLock({ $0.stop }) {
                _ = dbus_connection_read_write(peer.connection, 100)
                while let call = dbus_connection_pop_message(peer.connection) {
                    if dbus_message_get_type(call) == 1, let echo = dbus_message_copy(reply) {  // a method call
                        _ = dbus_message_set_reply_serial(echo, dbus_message_get_serial(call))
                        _ = dbus_message_set_destination(echo, dbus_message_get_sender(call))
                        _ = dbus_message_set_sender(echo, nil)
                        _ = dbus_connection_send(peer.connection, echo, nil)
                        dbus_message_unref(echo)
                    }
                    dbus_message_unref(call)
                }
                dbus_connection_flush(peer.connection)
            }
        }
        thread.start()
        while true {
            let (ready, failure) = state.value.withLock { ($0.ready, $0.failure) }
            if let failure { throw BusClient.Failure("echo peer: \(failure)") }
            if ready { return }
            Thread.sleep(forTimeInterval: 0.01)
        }
    }

    /// Stops the peer and waits for its thread (again: nothing).
    func stop() {
        state.value.withLock { $0.stop = true }
        while !thread.isFinished { Thread.sleep(forTimeInterval: 0.01) }
    }
}
