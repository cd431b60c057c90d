import CDBus
import Foundation
import Synchronization

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
    nonisolated(unsafe) private let raw: OpaquePointer
    private let loop: EventLoop
    /// This connection's unique name on the bus (`:1.42`).
    public let uniqueName: String

    private struct State: ~Copyable {
        var objects: [ObjectPath: ExportedObject] = [:]
        /// Calls that wait for an object or some of its interfaces (few, and only while starting).
        var holds: [CallHold] = []
        var subscriptions: [UUID: Subscription] = [:]
        var closed = false
    }
    private struct Subscription {
        let rule: MatchRule
        let continuation: AsyncStream<ReceivedMessage>.Continuation
    }
    private let state = Mutex(State())

    /// Method calls waiting for, or in, their handler, by sender; a sender's Get/GetAll go the fast way only
    /// when it has none. Filled on the I/O thread, emptied by ``serveCalls()``.
    private let calls = Mutex(CallQueue<@Sendable () async -> Void>())
    /// Wakes ``serveCalls()`` when a call is queued; finished when the connection closes.
    private let callQueued: AsyncStream<Void>
    private let callQueuedContinuation: AsyncStream<Void>.Continuation

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
        (callQueued, callQueuedContinuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        guard dbus_connection_add_filter(connection, filter, Unmanaged.passUnretained(self).toOpaque(), nil) != 0 else {
            throw BusError.noMemory()
        }
        loop.start(name: "dbus " + uniqueName)
    }

    /// Connects to the session bus named by `DBUS_SESSION_BUS_ADDRESS` (or `$XDG_RUNTIME_DIR/bus`).
    public static func session() throws -> BusConnection {
        // getenv: ProcessInfo's environment copies all of it into a dictionary at every read.
        func environment(_ name: String) -> String? { getenv(name).map { String(cString: $0) } }
        if let address = environment("DBUS_SESSION_BUS_ADDRESS"), !address.isEmpty {
            return try BusConnection(address: address)
        }
        if let runtime = environment("XDG_RUNTIME_DIR"), FileManager.default.fileExists(atPath: runtime + "/bus") {
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
        let objects = state.withLock { s -> [ExportedObject] in
            s.closed = true
            defer { s.objects = [:] }
            return Array(s.objects.values)
        }
        _ = objects
        finishSubscriptions()
        stopQueueingCalls()
        loop.stop()
    }

    /// Whether the bus is still connected.
    public var isConnected: Bool { !state.withLock { $0.closed } && dbus_connection_get_is_connected(raw) != 0 }

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

    private func send(_ message: OutgoingMessage) throws {
        guard isConnected else { throw BusError.disconnected("the connection is closed") }
        guard dbus_connection_send(raw, message.raw, nil) != 0 else { throw BusError.noMemory() }
    }

    /// Calls a method and waits for its reply (or `timeout`); throws the peer's error as a ``BusError``.
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
        let reply = try await sendWithReply(message, timeout: timeout)
        if reply.kind == .error { throw reply.busError }
        return reply.arguments
    }

    private func sendWithReply(_ message: OutgoingMessage, timeout: Duration) async throws -> ReceivedMessage {
        guard isConnected else { throw BusError.disconnected("the connection is closed") }
        let ms = Int32(clamping: timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        return try await withCheckedThrowingContinuation { continuation in
            var pending: OpaquePointer?
            guard dbus_connection_send_with_reply(raw, message.raw, &pending, max(ms, 1)) != 0, let pending else {
                continuation.resume(throwing: BusError.disconnected("cannot send: the connection is closed"))
                return
            }
            let box = PendingReply(continuation)
            let data = Unmanaged.passRetained(box).toOpaque()
            guard dbus_pending_call_set_notify(pending, pendingCallNotify, data, releasePendingReply) != 0 else {
                Unmanaged<PendingReply>.fromOpaque(data).release()
                dbus_pending_call_cancel(pending)
                dbus_pending_call_unref(pending)
                continuation.resume(throwing: BusError.noMemory())
                return
            }
            // The reply may have been dispatched before the notify function was set.
            if dbus_pending_call_get_completed(pending) != 0 { box.complete(pending) }
            dbus_pending_call_unref(pending)
        }
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
        state.withLock { $0.subscriptions[id] = Subscription(rule: rule, continuation: continuation) }
        continuation.onTermination = { [weak self] _ in
            guard let self else { return }
            self.state.withLock { _ = $0.subscriptions.removeValue(forKey: id) }
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

    private func finishSubscriptions() {
        let subscriptions = state.withLock { s -> [Subscription] in
            defer { s.subscriptions = [:] }
            return Array(s.subscriptions.values)
        }
        for subscription in subscriptions { subscription.continuation.finish() }
    }

    // MARK: - Exporting objects

    /// Exports an object at `path`; its method calls are handled once ``serveCalls()`` runs.
    public func export(_ path: ObjectPath, interfaces: [Interface]) throws -> ExportedObject {
        let object = ExportedObject(path: path, interfaces: interfaces, connection: self)
        try state.withLock { s in
            guard s.objects[path] == nil else { throw BusError.failed("an object is already exported at \(path)") }
            s.objects[path] = object
        }
        return object
    }

    /// Stops exporting the object at `path`.
    public func unexport(_ path: ObjectPath) {
        state.withLock { _ = $0.objects.removeValue(forKey: path) }
    }

    /// Holds the calls to the object at `path` (or to its `interfaces` only) until the returned hold is released:
    /// for an object that clients may call before it is exported, or before those interfaces' properties are set.
    /// See ``CallHold``. Once the connection is closed, the hold is released at once.
    public func hold(_ path: ObjectPath, interfaces: [String]? = nil) -> CallHold {
        let hold = CallHold(path: path, interfaces: interfaces.map(Set.init), connection: self)
        let closed = state.withLock { s in
            if !s.closed { s.holds.append(hold) }
            return s.closed
        }
        if closed { hold.release() }
        return hold
    }

    func removeHold(_ hold: CallHold) {
        state.withLock { $0.holds.removeAll { $0 === hold } }
    }

    /// Handles the exported objects' method calls and property sets, one at a time, each sender's in arrival
    /// order and senders in turn, until the connection closes. Run it once, in the owner's task group.
    public func serveCalls() async {
        var wakeUps = callQueued.makeAsyncIterator()
        repeat {
            var backlog = 0  // the most calls waiting at once since the queue was last empty
            while let (sender, handle, waiting) = calls.withLock({ queue -> (String, @Sendable () async -> Void, Int)? in
                guard let (sender, job) = queue.next() else { return nil }
                return (sender, job, queue.count + 1)
            }) {
                backlog = max(backlog, waiting)
                await handle()
                calls.withLock { $0.finished(sender) }
            }
            // A burst of queued calls grew the heap, and glibc keeps the freed pages of a fragmented heap: measured,
            // 10,000 calls pipelined by one client left 12 MiB more resident for good. A few ms, after bursts only.
            if backlog >= Self.trimAfterBacklog { _ = malloc_trim(0) }
        } while await wakeUps.next() != nil
    }

    /// How many calls waiting at once make a burst after which ``serveCalls()`` gives memory back.
    static let trimAfterBacklog = 500

    /// The connection closed: calls queued so far are still handled, later ones not.
    private func stopQueueingCalls() {
        calls.withLock { $0.close() }
        callQueuedContinuation.finish()
        // Calls already queued are still handled: none may wait for a release that no longer matters.
        for hold in state.withLock({ $0.holds }) { hold.release() }
    }

    // MARK: - Incoming messages (I/O thread)

    fileprivate func handle(_ message: OpaquePointer) -> Bool {
        switch dbus_message_get_type(message) {
        case 1:  // method call
            if answerGetAtOnce(message) { return true }
            let header = ReceivedMessage(message, decodeBody: false)
            switch handling(header, body: { header.withBody(from: message) }) {
            case .unhandled: return false
            case .now(let answer): answer()
            case .read(let answer): answerNowOrInOrder(header, answer)
            case .inTurn(let job): enqueue(from: header, job)
            }
            return true
        case 4:  // signal
            let signal = ReceivedMessage(message)
            if signal.interface == "org.freedesktop.DBus.Local", signal.member == "Disconnected" {
                state.withLock { $0.closed = true }
                finishSubscriptions()
                stopQueueingCalls()
            }
            let targets = state.withLock { s in s.subscriptions.values.filter { $0.rule.matches(signal) } }
            for target in targets { target.continuation.yield(signal) }
            return false
        default:
            return false
        }
    }

    /// Answers Properties.Get straight from the libdbus message when nothing stands in its way: no call held, no
    /// earlier call of the same sender unfinished or waiting for its reply, an exported object with that interface
    /// and a readable property whose value can be sent. The answer is the general path's (``handling(_:body:)``,
    /// ``handlePropertiesCall(_:_:object:)``), without its conversions: no ``ReceivedMessage``, no decoded
    /// arguments, no closures, the variant's signature the property's own. Get is what media widgets and
    /// playerctl send most (Position, PlaybackStatus, Metadata), so this is the path of most calls.
    /// false: nothing was sent, and the general path answers, errors included.
    private func answerGetAtOnce(_ message: OpaquePointer) -> Bool {
        guard let member = dbus_message_get_member(message), strcmp(member, "Get") == 0,
              let interface = dbus_message_get_interface(message), strcmp(interface, "org.freedesktop.DBus.Properties") == 0,
              let signature = dbus_message_get_signature(message), strcmp(signature, "ss") == 0,
              let rawPath = dbus_message_get_path(message), let rawSender = dbus_message_get_sender(message)
        else { return false }
        let path = ObjectPath(validated: String(cString: rawPath))
        guard let object = state.withLock({ $0.holds.isEmpty ? $0.objects[path] : nil }) else { return false }
        let sender = String(cString: rawSender)
        guard !calls.withLock({ $0.hasUnfinished(sender) }), heldReplies.withLock({ $0[sender] == nil }) else { return false }

        var arguments = DBusMessageIter()
        var interfaceName: UnsafePointer<CChar>?
        var propertyName: UnsafePointer<CChar>?
        guard dbus_message_iter_init(message, &arguments) != 0 else { return false }
        dbus_message_iter_get_basic(&arguments, &interfaceName)
        guard dbus_message_iter_next(&arguments) != 0 else { return false }
        dbus_message_iter_get_basic(&arguments, &propertyName)
        guard let interfaceName, let propertyName,
              let declaration = object.interfaces.first(where: { $0.name.rawValue.withCString { strcmp($0, interfaceName) == 0 } }),
              let property = declaration.properties.first(where: { $0.name.rawValue.withCString { strcmp($0, propertyName) == 0 } }),
              property.isReadable,
              let value = object.value(of: property, in: declaration), value.type == property.type,
              (try? value.validate(depth: 1)) != nil
        else { return false }

        if dbus_message_get_no_reply(message) != 0 { return true }
        guard let reply = dbus_message_new_method_return(message) else { return false }
        defer { dbus_message_unref(reply) }
        guard Marshaller.appendVariant(value, signature: property.signature, to: reply) else { return false }
        _ = dbus_connection_send(raw, reply, nil)
        return true
    }

    /// How a method call is answered.
    private enum Handling {
        /// Not ours: libdbus's default handling.
        case unhandled
        /// At once, on the I/O thread: Introspect, and errors found before any handler.
        case now(@Sendable () -> Void)
        /// Get and GetAll: at once unless an earlier call of the same sender is unfinished (then in its turn).
        case read(@Sendable () -> Void)
        /// Method calls, Set and held calls: in the sender's turn, by ``serveCalls()``.
        case inTurn(@Sendable () async -> Void)
    }

    /// Decides how a method call is answered. `body` decodes the call's arguments: only once its signature is
    /// checked, or to hold it. On the I/O thread, and again for a held call once it is released.
    private func handling(_ header: ReceivedMessage, body: () -> ReceivedMessage) -> Handling {
        guard let path = header.path, let member = header.member else { return .unhandled }
        var decoded: ReceivedMessage?
        func call() -> ReceivedMessage {
            if let decoded { return decoded }
            let call = body()
            decoded = call
            return call
        }
        let (objects, holds) = state.withLock { ($0.objects, $0.holds) }
        let object = objects[path]
        if !holds.isEmpty, header.interface != "org.freedesktop.DBus.Peer", let hold = holds.first(where: { hold in
            hold.holds(path: path, member: member) {
                if header.interface == "org.freedesktop.DBus.Properties" { return call().arguments.first?.string }
                return header.interface ?? object?.interfaces.first { $0.method(member) != nil }?.name.rawValue
            }
        }) {
            let held = call()
            return .inTurn { [self] in
                await hold.wait()
                switch handling(held, body: { held }) {
                case .unhandled: reply(to: held, error: .unknownMethod("No method '\(member)' at \(path)"))
                case .now(let answer), .read(let answer): answer()
                case .inTurn(let job): await job()
                }
            }
        }
        if let object { return handleCall(header, call, object: object) }
        if header.interface == "org.freedesktop.DBus.Introspectable" || header.interface == nil,
           member == "Introspect", objects.keys.contains(where: path.isAncestor(of:)) {
            return .now { [self] in
                let objects = state.withLock { $0.objects }
                reply(to: header, [.string(Introspection.xml(interfaces: [], children: children(of: path, in: objects)))])
            }
        }
        if header.interface == "org.freedesktop.DBus.Peer" { return .unhandled }  // libdbus answers Ping
        return .now { [self] in reply(to: header, error: .unknownObject("No object at path '\(path)'")) }
    }

    private func children(of path: ObjectPath, in objects: [ObjectPath: ExportedObject]) -> [String] {
        let prefix = path.rawValue == "/" ? "/" : path.rawValue + "/"
        let names = objects.keys.filter(path.isAncestor(of:)).compactMap {
            $0.rawValue.dropFirst(prefix.count).split(separator: "/").first.map(String.init)
        }
        return Array(Set(names)).sorted()
    }

    private func handleCall(_ header: ReceivedMessage, _ body: () -> ReceivedMessage, object: ExportedObject) -> Handling {
        let member = header.member ?? ""
        let interface = header.interface
        switch (interface, member) {
        case ("org.freedesktop.DBus.Introspectable", "Introspect"), (nil, "Introspect"):
            return .now { [self] in
                let objects = state.withLock { $0.objects }
                reply(to: header, [.string(Introspection.xml(interfaces: object.interfaces,
                                                             children: children(of: object.path, in: objects)))])
            }
        case ("org.freedesktop.DBus.Properties", _):
            return handlePropertiesCall(header, body, object: object)
        case ("org.freedesktop.DBus.Peer", _):
            // libdbus answers Ping and GetMachineId before filters run; anything else is unknown.
            return .now { [self] in reply(to: header, error: .unknownMethod("No method '\(member)' in org.freedesktop.DBus.Peer")) }
        default:
            let found: (Interface, Method)? = {
                if let interface {
                    return object.interface(interface).flatMap { i in i.method(member).map { (i, $0) } }
                }
                return object.interfaces.lazy.compactMap { i in i.method(member).map { (i, $0) } }.first
            }()
            guard let (declaration, method) = found else {
                if let interface, object.interface(interface) == nil {
                    return .now { [self] in reply(to: header, error: .unknownInterface("Object \(object.path) has no interface '\(interface)'")) }
                }
                return .now { [self] in
                    reply(to: header, error: .unknownMethod(
                        "No method '\(member)' with signature '\(header.signature)' in interface '\(interface ?? "")' at \(object.path)"))
                }
            }
            guard header.signature == method.inputSignature else {
                return .now { [self] in
                    reply(to: header, error: .invalidArgs(
                        "\(declaration.name).\(member) takes arguments of type '\(method.inputSignature)', not '\(header.signature)'"))
                }
            }
            let call = body()
            let methodCall = MethodCall(sender: call.sender, path: object.path, interface: declaration.name,
                                        member: method.name, arguments: call.arguments)
            let outputSignature = method.outputSignature
            return .inTurn { [self] in
                guard let deferred = method.deferred else {
                    do {
                        answer(call, member, outputSignature, .success(try await method.handler(methodCall)))
                    } catch {
                        answer(call, member, outputSignature, .failure(error))
                    }
                    return
                }
                let completion: Method.Completion
                do {
                    completion = try await deferred(methodCall)
                } catch {
                    answer(call, member, outputSignature, .failure(error))
                    return
                }
                // Before the queue moves on: the replies to this sender's later calls wait for this one.
                holdLaterReplies(after: call)
                Task.detached { [self] in
                    do {
                        answer(call, member, outputSignature, .success(try await completion()), deferred: true)
                    } catch {
                        answer(call, member, outputSignature, .failure(error), deferred: true)
                    }
                }
            }
        }
    }

    private func handlePropertiesCall(_ header: ReceivedMessage, _ body: () -> ReceivedMessage, object: ExportedObject) -> Handling {
        let expected: String? = switch header.member {
        case "Get": "ss"
        case "GetAll": "s"
        case "Set": "ssv"
        default: nil
        }
        guard let signature = expected else {
            return .now { [self] in reply(to: header, error: .unknownMethod("No method '\(header.member ?? "")' in org.freedesktop.DBus.Properties")) }
        }
        guard header.signature == signature else {
            return .now { [self] in reply(to: header, error: .invalidArgs("Properties.\(header.member ?? "") takes '\(signature)', not '\(header.signature)'")) }
        }
        let call = body()
        let interface = call.arguments[0].string ?? ""
        switch call.member {
        case "Get":
            let name = call.arguments[1].string ?? ""
            return .read { [self] in
                do { reply(to: call, [.variant(try object.value(interface, name))]) } catch let error as BusError { reply(to: call, error: error) } catch { reply(to: call, error: .failed("\(error)")) }
            }
        case "GetAll":
            return .read { [self] in
                do { reply(to: call, [.vardict(try object.allValues(interface))]) } catch let error as BusError { reply(to: call, error: error) } catch { reply(to: call, error: .failed("\(error)")) }
            }
        default:  // Set
            let name = call.arguments[1].string ?? ""
            guard let declaration = object.interface(interface) else {
                return .now { [self] in reply(to: call, error: .unknownInterface("Object \(object.path) has no interface '\(interface)'")) }
            }
            guard let property = declaration.property(name) else {
                return .now { [self] in reply(to: call, error: .unknownProperty("Interface '\(interface)' has no property '\(name)'")) }
            }
            guard property.isWritable, let setter = property.setter else {
                return .now { [self] in reply(to: call, error: .propertyReadOnly("Property '\(interface).\(name)' is read-only")) }
            }
            // Exactly one variant level: a value nested in further variants is not of the property's type.
            let value: DBusValue = if case .variant(let inner) = call.arguments[2] { inner } else { call.arguments[2] }
            guard value.type == property.type else {
                return .now { [self] in reply(to: call, error: .invalidArgs("Property '\(interface).\(name)' is of type '\(property.type)', not '\(value.type)'")) }
            }
            return .inTurn { [self] in
                do {
                    try await setter(value)
                    reply(to: call, [])
                } catch let error as BusError {
                    reply(to: call, error: error)
                } catch {
                    reply(to: call, error: .failed("\(error)"))
                }
            }
        }
    }

    /// Runs `answer` at once when no earlier call of the same sender is pending, else queues it behind them
    /// (a Get sent after a Set sees the Set). Another sender's calls don't hold it up: nothing orders them.
    private func answerNowOrInOrder(_ call: ReceivedMessage, _ answer: @escaping @Sendable () -> Void) {
        let sender = call.sender ?? ""
        let queued = calls.withLock { queue in
            queue.hasUnfinished(sender) && queue.append({ answer() }, from: sender)
        }
        if queued { callQueuedContinuation.yield() } else { answer() }
    }

    /// Queues a call's handling behind its sender's earlier calls (dropped once the connection has closed).
    private func enqueue(from call: ReceivedMessage, _ job: @escaping @Sendable () async -> Void) {
        if calls.withLock({ $0.append(job, from: call.sender ?? "") }) { callQueuedContinuation.yield() }
    }

    /// Replies with a handler's result, checked against the declared output signature.
    private func answer(_ call: ReceivedMessage, _ member: String, _ outputSignature: String,
                        _ result: Result<[DBusValue], any Error>, deferred: Bool = false) {
        let send: @Sendable () -> Void
        switch result {
        case .success(let results):
            let signature = results.map(\.type.signature).joined()
            if signature == outputSignature {
                send = { [self] in sendReply(to: call, results) }
            } else {
                send = { [self] in sendReply(to: call, error: .failed("internal error: \(member) produced '\(signature)', declared '\(outputSignature)'")) }
            }
        case .failure(let error as BusError):
            send = { [self] in sendReply(to: call, error: error) }
        case .failure(let error):
            send = { [self] in sendReply(to: call, error: .failed("\(error)")) }
        }
        if deferred { completeHeldReply(call, send) } else { sendInOrder(call, send) }
    }

    // MARK: - Reply order per sender (deferred methods)

    /// One reply in a sender's queue: a deferred call still running (`send` nil), or a reply waiting behind one.
    private struct HeldReply {
        let serial: UInt32
        var send: (@Sendable () -> Void)?
    }

    /// By sender, in the order of its calls: while a deferred call of a sender runs, the replies to that sender's
    /// later calls wait here. Replies are sent under the lock, so that two completions can't reorder them.
    private let heldReplies = Mutex<[String: [HeldReply]]>([:])

    /// Whether serial `a` came before `b` from the same sender (serials increase, wrapping at 2³²).
    private static func precedes(_ a: UInt32, _ b: UInt32) -> Bool { Int32(bitPattern: a &- b) < 0 }

    private func holdLaterReplies(after call: ReceivedMessage) {
        guard let sender = call.sender else { return }
        heldReplies.withLock { held in
            var queue = held[sender] ?? []
            let index = queue.firstIndex { Self.precedes(call.serial, $0.serial) } ?? queue.endIndex
            queue.insert(HeldReply(serial: call.serial, send: nil), at: index)
            held[sender] = queue
        }
    }

    /// Sends at once, unless an earlier deferred call of the same sender is still running.
    private func sendInOrder(_ call: ReceivedMessage, _ send: @escaping @Sendable () -> Void) {
        if let sender = call.sender {
            let waits = heldReplies.withLock { held -> Bool in
                guard var queue = held[sender],
                      queue.contains(where: { $0.send == nil && Self.precedes($0.serial, call.serial) }) else { return false }
                let index = queue.firstIndex { Self.precedes(call.serial, $0.serial) } ?? queue.endIndex
                queue.insert(HeldReply(serial: call.serial, send: send), at: index)
                held[sender] = queue
                return true
            }
            if waits { return }
        }
        send()
    }

    /// A deferred call finished: its reply, and those that waited for it, go out in order.
    private func completeHeldReply(_ call: ReceivedMessage, _ send: @escaping @Sendable () -> Void) {
        guard let sender = call.sender else { return send() }
        heldReplies.withLock { held in
            guard var queue = held[sender], let index = queue.firstIndex(where: { $0.serial == call.serial && $0.send == nil }) else {
                send()
                return
            }
            queue[index].send = send
            while let first = queue.first, let ready = first.send {
                ready()
                queue.removeFirst()
            }
            held[sender] = queue.isEmpty ? nil : queue
        }
    }

    private func reply(to call: ReceivedMessage, _ values: [DBusValue]) {
        sendInOrder(call) { [self] in sendReply(to: call, values) }
    }

    private func reply(to call: ReceivedMessage, error: BusError) {
        sendInOrder(call) { [self] in sendReply(to: call, error: error) }
    }

    private func sendReply(to call: ReceivedMessage, _ values: [DBusValue]) {
        guard !call.noReplyExpected else { return }
        guard let message = OutgoingMessage.reply(to: call.serial, destination: call.sender) else { return }
        do {
            try message.append(values)
            try send(message)
        } catch {
            sendReply(to: call, error: .failed("cannot send the reply: \(error)"))
        }
    }

    private func sendReply(to call: ReceivedMessage, error: BusError) {
        guard !call.noReplyExpected,
              let message = OutgoingMessage.reply(to: call.serial, destination: call.sender, error: error) else { return }
        try? message.append([.string(Self.errorText(error.message))])
        try? send(message)
    }

    /// An error message as sent: without NULs, and at most 1 KiB (a message may quote what a client sent, e.g.
    /// a 16 MB name: echoing it back takes seconds on this thread and tells nobody anything).
    static func errorText(_ message: String) -> String {
        let limit = 1024
        var text = message.utf8.count > limit ? String(decoding: message.utf8.prefix(limit), as: UTF8.self) + "…" : message
        if text.utf8.contains(0) { text = text.replacingOccurrences(of: "\0", with: "") }
        return text
    }
}

/// The continuation of one outgoing call; resumed exactly once, by the notify function or by the caller.
private final class PendingReply: Sendable {
    private let continuation = Mutex<CheckedContinuation<ReceivedMessage, any Error>?>(nil)
    init(_ continuation: CheckedContinuation<ReceivedMessage, any Error>) { self.continuation.withLock { $0 = continuation } }

    func complete(_ pending: OpaquePointer) {
        guard let continuation = continuation.withLock({ c -> CheckedContinuation<ReceivedMessage, any Error>? in
            defer { c = nil }
            return c
        }) else { return }
        guard let reply = dbus_pending_call_steal_reply(pending) else {
            continuation.resume(throwing: BusError.noReply("no reply"))
            return
        }
        defer { dbus_message_unref(reply) }
        continuation.resume(returning: ReceivedMessage(reply))
    }
}

private func pendingCallNotify(_ pending: OpaquePointer?, _ data: UnsafeMutableRawPointer?) {
    guard let pending, let data else { return }
    Unmanaged<PendingReply>.fromOpaque(data).takeUnretainedValue().complete(pending)
}

private func releasePendingReply(_ data: UnsafeMutableRawPointer?) {
    guard let data else { return }
    Unmanaged<PendingReply>.fromOpaque(data).release()
}

private func filter(_ connection: OpaquePointer?, _ message: OpaquePointer?, _ data: UnsafeMutableRawPointer?) -> DBusHandlerResult {
    guard let message, let data else { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
    let bus = Unmanaged<BusConnection>.fromOpaque(data).takeUnretainedValue()
    return bus.handle(message) ? DBUS_HANDLER_RESULT_HANDLED : DBUS_HANDLER_RESULT_NOT_YET_HANDLED
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
