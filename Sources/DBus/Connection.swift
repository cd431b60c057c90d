import CDBus
import Foundation
import Synchronization
import Threads

/// A connection to a message bus, with its own I/O thread (``EventLoop``).
///
/// Server side: ``export(_:interfaces:)`` objects, run ``serveCalls()`` to handle their method calls
/// one at a time, each sender's in arrival order, senders taking turns (``CallQueue``); `Get` and `GetAll`
/// are answered on the I/O thread when no earlier call of the same sender is still being handled,
/// `Introspect` always; calls to an object not ready yet wait for it (``hold(_:interfaces:)``).
/// Client side: ``call(_:path:interface:member:_:timeout:)`` and ``signals(_:)``.
///
/// ```swift
/// let bus = try BusConnection(address: address)
/// let reply = try await bus.call("org.freedesktop.DBus", path: "/org/freedesktop/DBus",
///                                interface: "org.freedesktop.DBus", member: "GetId")
/// ```
public final class BusConnection: Sendable {
    // Safe to share: libdbus connections are thread-safe after dbus_threads_init_default(); the pointer
    // is released only in deinit, when nothing else can use it.
    nonisolated(unsafe) let raw: OpaquePointer
    let loop: EventLoop
    /// This connection's unique name on the bus (`:1.42`).
    public let uniqueName: String

    // Each part keeps its own state under its own lock.
    /// The exported objects, the holds on calls to them, and whether the connection is closed.
    let table = ObjectTable()
    /// The method calls waiting for, or in, their handler; filled on the I/O thread, drained by ``serveCalls()``.
    let calls = CallScheduler()
    /// Each sender's replies in the order of its calls while a deferred call of that sender runs.
    let replies = ReplyOrder()
    /// The streams of ``signals(_:)``.
    let subscriptions = SignalSubscriptions()
    /// The client calls waiting for their replies: they end with an error when the connection closes.
    let pendingCalls = PendingCalls()

    private static let threadsInitialised: Bool = { dbus_threads_init_default() != 0 }()

    /// Connects to the bus at `address` (e.g. `unix:path=/run/user/1000/bus`) and registers on it.
    public init(address: String) throws {
        guard Self.threadsInitialised else { throw BusError.failed("libdbus could not initialise threads") }
        var error = CDBus.DBusError()
        dbus_error_init(&error)
        defer { dbus_error_free(&error) }
        guard let connection = dbus_connection_open_private(address, &error) else {
            throw BusError(cError: error, fallback: "cannot connect to \(address)")
        }
        dbus_connection_set_exit_on_disconnect(connection, 0)
        guard dbus_bus_register(connection, &error) != 0, let name = dbus_bus_get_unique_name(connection) else {
            let failure = BusError(cError: error, fallback: "cannot register on the bus at \(address)")
            dbus_connection_close(connection)
            dbus_connection_unref(connection)
            throw failure
        }
        raw = connection
        uniqueName = String(cString: name)
        loop = try EventLoop(connection: connection)
        guard dbus_connection_add_filter(connection, messageFilter, Unmanaged.passUnretained(self).toOpaque(), nil) != 0 else {
            throw BusError.noMemory()
        }
        loop.start(name: "dbus " + uniqueName)
    }

    /// Connects to the session bus named by `DBUS_SESSION_BUS_ADDRESS` (or `$XDG_RUNTIME_DIR/bus`).
    public static func session() throws -> BusConnection {
        let environment = ProcessInfo.processInfo.environment
        if let address = environment["DBUS_SESSION_BUS_ADDRESS"], !address.isEmpty {
            return try BusConnection(address: address)
        }
        if let runtime = environment["XDG_RUNTIME_DIR"], FileManager.default.fileExists(atPath: runtime + "/bus") {
            return try BusConnection(address: "unix:path=\(runtime)/bus")
        }
        throw BusError(name: "org.freedesktop.DBus.Error.NoServer",
                       message: "no session bus: DBUS_SESSION_BUS_ADDRESS is not set and $XDG_RUNTIME_DIR/bus does not exist")
    }

    deinit {
        close()
        if !loop.isLoopThread { dbus_connection_unref(raw) }
    }

    /// Sends what is queued, stops the I/O thread and closes the connection. Idempotent.
    public func close() {
        markClosed(removingObjects: true)
        loop.stop()
    }

    /// The connection is closed, by ``close()`` or by the bus (the I/O thread keeps the objects then): signal
    /// streams end, calls queued so far are still handled, later ones not; the client calls still waiting for a
    /// reply end with ``BusError/disconnected(_:)``, and later ones fail at once.
    func markClosed(removingObjects: Bool) {
        let objects = table.close(removingObjects: removingObjects)
        _ = objects  // released here, outside the table's lock
        pendingCalls.close()
        subscriptions.finishAll()
        calls.close()
        // Calls already queued are still handled: none may wait for a release that no longer matters.
        for hold in table.holds { hold.release() }
    }

    /// Whether the bus is still connected.
    public var isConnected: Bool { !table.isClosed && dbus_connection_get_is_connected(raw) != 0 }

    // MARK: - Sending

    /// Sends a signal from `path`.
    public func emitSignal(path: ObjectPath, interface: String, member: String, arguments: [DBusValue] = [],
                           destination: BusName? = nil) throws {
        guard let interfaceName = InterfaceName(rawValue: interface), let memberName = MemberName(rawValue: member) else {
            throw BusError.invalidArgs("invalid signal name \(interface).\(member)")
        }
        guard let message = OutgoingMessage.signal(path: path, interface: interfaceName, member: memberName) else {
            throw BusError.noMemory()
        }
        if let destination { dbus_message_set_destination(message.raw, destination.rawValue) }
        try message.append(arguments)
        try send(message)
    }

    /// Queues `message` for sending (libdbus running out of memory for it is not reported).
    func send(_ message: OutgoingMessage) throws {
        guard isConnected else { throw BusError.disconnected("the connection is closed") }
        loop.perform { _ = dbus_connection_send($0, message.raw, nil) }
    }

    /// Calls a method and waits for its reply (or `timeout`); throws the peer's error as a ``BusError``, and
    /// ``BusError/disconnected(_:)`` when the connection closes (or the bus goes away) before the reply comes.
    public func call(_ destination: String?, path: String, interface: String?, member: String,
                     _ arguments: [DBusValue] = [], timeout: Duration = .seconds(25)) async throws -> [DBusValue] {
        guard let objectPath = ObjectPath(rawValue: path) else { throw BusError.invalidArgs("invalid object path '\(path)'") }
        guard let memberName = MemberName(rawValue: member) else { throw BusError.invalidArgs("invalid member name '\(member)'") }
        let busName = try destination.map { name in
            guard let valid = BusName(rawValue: name) else { throw BusError.invalidArgs("invalid bus name '\(name)'") }
            return valid
        }
        let interfaceName = try interface.map { name in
            guard let valid = InterfaceName(rawValue: name) else { throw BusError.invalidArgs("invalid interface name '\(name)'") }
            return valid
        }
        guard let message = OutgoingMessage.methodCall(destination: busName, path: objectPath,
                                                       interface: interfaceName, member: memberName) else {
            throw BusError.noMemory()
        }
        try message.append(arguments)
        guard isConnected else { throw BusError.disconnected("the connection is closed") }
        let reply = try await PendingReply.send(message, on: loop, timeout: timeout, tracking: pendingCalls)
        if reply.kind == .error { throw reply.busError }
        return reply.arguments
    }

    // MARK: - Names

    public enum RequestNameReply: UInt32, Sendable {
        case primaryOwner = 1, inQueue = 2, exists = 3, alreadyOwner = 4
    }

    /// Asks the bus for a well-known name (`DBUS_NAME_FLAG_DO_NOT_QUEUE` by default).
    public func requestName(_ name: String, flags: UInt32 = 4) async throws -> RequestNameReply {
        let reply = try await call("org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                                   member: "RequestName", [.string(name), .uint32(flags)])
        guard case .uint32(let code)? = reply.first, let result = RequestNameReply(rawValue: code) else {
            throw BusError.failed("unexpected RequestName reply \(reply)")
        }
        return result
    }

    /// Gives a well-known name back to the bus.
    public func releaseName(_ name: String) async throws {
        _ = try await call("org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                           member: "ReleaseName", [.string(name)])
    }

    // MARK: - Signals

    /// Signals matching `rule`, from now until the stream's consumer stops or the connection closes.
    public func signals(_ rule: MatchRule) async throws -> AsyncStream<ReceivedMessage> {
        let id = UUID()
        let (stream, continuation) = AsyncStream.makeStream(of: ReceivedMessage.self, bufferingPolicy: .unbounded)
        subscriptions.add(id, rule: rule, continuation: continuation)
        continuation.onTermination = { [weak self] _ in
            guard let self else { return }
            self.subscriptions.remove(id)
            Task { try? await self.call("org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                        interface: "org.freedesktop.DBus", member: "RemoveMatch", [.string(rule.text)]) }
        }
        do {
            _ = try await call("org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                               member: "AddMatch", [.string(rule.text)])
        } catch {
            continuation.finish()
            throw error
        }
        return stream
    }

    // MARK: - Exporting objects

    /// Exports an object at `path`; its method calls are handled once ``serveCalls()`` runs.
    public func export(_ path: ObjectPath, interfaces: [Interface]) throws -> ExportedObject {
        let object = ExportedObject(path: path, interfaces: interfaces, connection: self)
        try table.add(object)
        return object
    }

    /// Stops exporting the object at `path`.
    public func unexport(_ path: ObjectPath) {
        table.remove(path)
    }

    /// Holds the calls to the object at `path` (or to its `interfaces` only) until the returned hold is released:
    /// for an object that clients may call before it is exported, or before those interfaces' properties are set.
    /// See ``CallHold``. Once the connection is closed, the hold is released at once.
    public func hold(_ path: ObjectPath, interfaces: [String]? = nil) -> CallHold {
        let hold = CallHold(path: path, interfaces: interfaces.map(Set.init), connection: self)
        if !table.add(hold) { hold.release() }
        return hold
    }

    func removeHold(_ hold: CallHold) {
        table.remove(hold)
    }

    /// Handles the exported objects' method calls and property sets, one at a time, each sender's in arrival
    /// order and senders in turn, until the connection closes. Run it once, in the owner's task group.
    ///
    /// The handlers run on ``callThread``, with the default actors they call: a call is answered however long the
    /// cooperative pool's threads are held by other work.
    public func serveCalls() async {
        await withTaskExecutorPreference(Self.callThread) { await calls.serve() }
    }

    /// The thread of every connection's method calls and deferred replies in this process. A task that runs
    /// ``serveCalls()`` and is made with it as its executor preference starts there too, not on the pool.
    public static let callThread = ThreadExecutor(name: "dbus-calls")
}

extension BusError {
    init(cError: CDBus.DBusError, fallback: String) {
        if dbus_error_is_set_value(cError), let name = cError.name {
            self.init(name: String(cString: name), message: cError.message.map { String(cString: $0) } ?? fallback)
        } else {
            self = .failed(fallback)
        }
    }
}

private func dbus_error_is_set_value(_ error: CDBus.DBusError) -> Bool {
    var copy = error
    return dbus_error_is_set(&copy) != 0
}
