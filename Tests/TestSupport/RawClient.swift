import CDBus

/// A private libdbus connection, registered on the bus, used without the DBus module's I/O thread: to write calls
/// in an order of its own without waiting for their replies (pipelined, as a client flooding a service does), to
/// write and never read (a deaf client), or to make blocking calls from a thread of its own.
///
/// ```swift
/// let flood = try RawClient(address: bus.address)
/// for n in 0..<100 { flood.send(service, "/thing", "org.example.Thing", "Record", ["\(n)"]) }
/// try flood.ping(service)   // the service has dispatched all 100 calls
/// ```
open class RawClient: @unchecked Sendable {  // one thread at a time uses it; close() runs after that thread is done
    public private(set) var connection: OpaquePointer?

    public init(address: String) throws {
        var error = DBusError()
        dbus_error_init(&error)
        defer { dbus_error_free(&error) }
        guard let connection = dbus_connection_open_private(address, &error) else {
            throw RawClientError.failed("raw client: cannot connect to \(address)")
        }
        dbus_connection_set_exit_on_disconnect(connection, 0)
        guard dbus_bus_register(connection, &error) != 0 else {
            dbus_connection_close(connection)
            dbus_connection_unref(connection)
            throw RawClientError.failed("raw client: Hello failed")
        }
        self.connection = connection
    }

    /// A method call with string arguments (the caller unrefs it).
    public static func message(_ destination: String, _ path: String, _ interface: String, _ member: String,
                               _ strings: [String] = []) -> OpaquePointer? {
        guard let message = dbus_message_new_method_call(destination, path, interface, member) else { return nil }
        var iter = DBusMessageIter()
        dbus_message_iter_init_append(message, &iter)
        for argument in strings {
            argument.withCString { text in
                var pointer: UnsafePointer<CChar>? = text
                _ = dbus_message_iter_append_basic(&iter, Int32(UInt8(ascii: "s")), &pointer)
            }
        }
        return message
    }

    /// Queues a method call with string arguments and writes it out, without waiting for its reply (which stays
    /// unread). Calls sent one after the other reach `destination` in that order.
    public func send(_ destination: String, _ path: String, _ interface: String, _ member: String, _ strings: [String] = []) {
        guard let connection, let message = Self.message(destination, path, interface, member, strings) else { return }
        defer { dbus_message_unref(message) }
        _ = dbus_connection_send(connection, message, nil)
        dbus_connection_flush(connection)
    }

    /// Peer.Ping to `destination`, blocking until answered: libdbus answers it when it dispatches it, so once this
    /// returns `destination` has dispatched every message this client sent before.
    public func ping(_ destination: String, timeoutMilliseconds: Int32 = 5_000) throws {
        guard let connection, let message = Self.message(destination, "/", "org.freedesktop.DBus.Peer", "Ping") else {
            throw RawClientError.failed("raw client: closed")
        }
        defer { dbus_message_unref(message) }
        var error = DBusError()
        dbus_error_init(&error)
        defer { dbus_error_free(&error) }
        guard let reply = dbus_connection_send_with_reply_and_block(connection, message, timeoutMilliseconds, &error) else {
            throw RawClientError.failed("Ping \(destination): \(error.message.map { String(cString: $0) } ?? "no reply")")
        }
        dbus_message_unref(reply)
    }

    public func close() {
        guard let connection else { return }
        self.connection = nil
        dbus_connection_close(connection)
        dbus_connection_unref(connection)
    }

    deinit { close() }
}

public enum RawClientError: Error, CustomStringConvertible {
    case failed(String)
    public var description: String {
        switch self {
        case .failed(let why): return why
        }
    }
}
