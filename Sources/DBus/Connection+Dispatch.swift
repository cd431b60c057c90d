import CDBus

// Incoming messages, on the I/O thread: which object and handler answers a method call, and whether at once or in
// the sender's turn; the replies to them. The state this reads lives in the connection's parts: `table`
// (objects, holds), `calls` (the queue), `replies` (the order of a sender's replies while a deferred call runs).
extension BusConnection {
    /// Handles one message the filter passes; false leaves it to libdbus's default handling.
    fileprivate func handle(_ message: OpaquePointer) -> Bool {
        switch dbus_message_get_type(message) {
        case 1:  // method call
            if answerGetAtOnce(message) { return true }
            let header = ReceivedMessage(message, decodeBody: false)
            switch handling(header, body: { header.withBody(from: message) }) {
            case .unhandled: return false
            case .now(let answer): answer()
            case .read(let answer): calls.answerNowOrInOrder(from: header.sender ?? "", answer)
            case .inTurn(let job): calls.enqueue(from: header.sender ?? "", job)
            }
            return true
        case 4:  // signal
            let signal = ReceivedMessage(message)
            if signal.interface == "org.freedesktop.DBus.Local", signal.member == "Disconnected" {
                markClosed(removingObjects: false)
            }
            subscriptions.deliver(signal)
            return false
        default:
            return false
        }
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
        let (objects, holds) = table.snapshot
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
                let objects = table.objects
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
                let objects = table.objects
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
                replies.holdLaterReplies(after: call.serial, from: call.sender)
                Task.detached(executorPreference: Self.callThread) { [self] in
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
        do throws(BusError) {
            switch call.member {
            case "Get":
                let (interface, name) = try call.arguments(String.self, String.self)
                return .read { [self] in
                    do { reply(to: call, [.variant(try object.value(interface, name))]) } catch let error as BusError { reply(to: call, error: error) } catch { reply(to: call, error: .failed("\(error)")) }
                }
            case "GetAll":
                let interface: String = try call.argument(0)
                return .read { [self] in
                    do { reply(to: call, [.vardict(try object.allValues(interface))]) } catch let error as BusError { reply(to: call, error: error) } catch { reply(to: call, error: .failed("\(error)")) }
                }
            default:  // Set
                // The value read from its variant: one level; a value nested in further variants is a variant.
                let (interface, name, value) = try call.arguments(String.self, String.self, DBusValue.self)
                guard let declaration = object.interface(interface) else {
                    return .now { [self] in reply(to: call, error: .unknownInterface("Object \(object.path) has no interface '\(interface)'")) }
                }
                guard let property = declaration.property(name) else {
                    return .now { [self] in reply(to: call, error: .unknownProperty("Interface '\(interface)' has no property '\(name)'")) }
                }
                guard property.isWritable, let setter = property.setter else {
                    return .now { [self] in reply(to: call, error: .propertyReadOnly("Property '\(interface).\(name)' is read-only")) }
                }
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
        } catch {
            return .now { [self] in reply(to: call, error: error) }
        }
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
        if deferred {
            replies.complete(to: call.sender, serial: call.serial, send)
        } else {
            replies.send(to: call.sender, serial: call.serial, send)
        }
    }

    // MARK: - Replies

    private func reply(to call: ReceivedMessage, _ values: [DBusValue]) {
        replies.send(to: call.sender, serial: call.serial) { [self] in sendReply(to: call, values) }
    }

    private func reply(to call: ReceivedMessage, error: BusError) {
        replies.send(to: call.sender, serial: call.serial) { [self] in sendReply(to: call, error: error) }
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

/// libdbus's filter: every message received passes here first, on the I/O thread.
func messageFilter(_ connection: OpaquePointer?, _ message: OpaquePointer?, _ data: UnsafeMutableRawPointer?) -> DBusHandlerResult {
    guard let message, let data else { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
    let bus = Unmanaged<BusConnection>.fromOpaque(data).takeUnretainedValue()
    return bus.handle(message) ? DBUS_HANDLER_RESULT_HANDLED : DBUS_HANDLER_RESULT_NOT_YET_HANDLED
}
