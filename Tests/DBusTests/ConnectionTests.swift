import CDBus
import Foundation
import Synchronization
import Testing
@testable import DBus
import TestSupport

final class Recorder: Sendable {
    private let lines = Mutex<[String]>([])
    func append(_ line: String) { lines.withLock { $0.append(line) } }
    var entries: [String] { lines.withLock { $0 } }
}

final class Counter: Sendable {
    let value = Mutex<Int32>(0)
}

/// Closed until `open()`: a handler waiting on it holds the call queue.
final class Gate: Sendable {
    private let isOpen = Mutex(false)
    func open() { isOpen.withLock { $0 = true } }
    func wait() async throws {
        while !isOpen.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(5)) }
    }
}

/// A server and a client connection on a private dbus-daemon, with one exported test object.
private final class Harness: Sendable {
    let bus: PrivateBus
    let server: BusConnection
    let client: BusConnection
    let object: ExportedObject
    let log = Recorder()
    /// What `Hold` and `HeldList` wait for.
    let gate = Gate()
    let serving: Task<Void, Never>
    static let path = "/org/example/Thing"
    static let interface = "org.example.Thing"

    init(serve: Bool = true) async throws {
        bus = try PrivateBus()
        server = try BusConnection(address: bus.address)
        client = try BusConnection(address: bus.address)
        let log = self.log
        let gate = self.gate
        let counter = Counter()
        let thing = Interface(Self.interface,
            methods: [
                Method("Echo", in: [("value", .variant)], out: [("value", .variant)]) { call in
                    [.variant(try call.argument(0))]
                },
                Method("Add", in: [("a", .int32), ("b", .int32)], out: [("sum", .int32)]) { call in
                    let (a, b) = try call.arguments(Int32.self, Int32.self)
                    return [.int32(a &+ b)]
                },
                Method("Record", in: [("tag", .string)]) { call in
                    log.append(try call.argument(0))
                    return []
                },
                Method("Hold", in: [("tag", .string)]) { call in
                    log.append(try call.argument(0))
                    try await gate.wait()
                    return []
                },
                Method("SlowRecord", in: [("tag", .string), ("ms", .uint32)]) { call in
                    let (tag, ms) = try call.arguments(String.self, UInt32.self)
                    log.append("start \(tag)")
                    try await Task.sleep(for: .milliseconds(Int(ms)))
                    log.append(tag)
                    return []
                },
                Method.deferred("SlowList", in: [("tag", .string), ("ms", .uint32)], out: [("tag", .string)]) { call in
                    let (tag, ms) = try call.arguments(String.self, UInt32.self)
                    log.append("start \(tag)")
                    return {
                        try await Task.sleep(for: .milliseconds(Int(ms)))
                        log.append("done \(tag)")
                        if tag == "fail" { throw BusError(name: "org.example.Error.Nope", message: "nope, later") }
                        return [.string(tag)]
                    }
                },
                // Deferred, its reply held until the test opens the gate: "still running" with no clock involved.
                Method.deferred("HeldList", in: [("tag", .string)], out: [("tag", .string)]) { call in
                    let tag: String = try call.argument(0)
                    log.append("start \(tag)")
                    return {
                        try await gate.wait()
                        log.append("done \(tag)")
                        return [.string(tag)]
                    }
                },
                Method("Fail") { _ in throw BusError(name: "org.example.Error.Nope", message: "nope, as asked") },
                Method("Crash") { _ in throw CocoaError(.fileNoSuchFile) },
                Method("Lie", out: [("n", .int32)]) { _ in [.string("not an int")] },
                // Reads its argument as another type than it declares: a mistake of the handler's, told the caller.
                Method("Misread", in: [("n", .int32)]) { call in
                    log.append("\(try call.argument(0, as: Int64.self))")
                    return []
                },
            ],
            properties: [
                Property("Name", .string),
                Property("Count", .int32, access: .readwrite, set: { value in
                    let n: Int32 = try value.decoded()
                    guard n >= 0 else { throw BusError.invalidArgs("Count must be >= 0") }
                    counter.value.withLock { $0 = n }
                }),
                Property("Live", .int32, changes: .none, get: { .int32(counter.value.withLock { $0 }) }),
                Property("Items", .array(.string), changes: .invalidates),
                Property("Fixed", .string, changes: .const),
            ],
            signals: [SignalDecl("Happened", [("what", .string)])])
        object = try server.export(ObjectPath(Self.path)!, interfaces: [thing])
        object.update(Self.interface, ["Name": .string("thing"), "Count": .int32(0), "Items": .strings([]),
                                       "Fixed": .string("fixed")])
        let server = self.server
        serving = Task(executorPreference: BusConnection.callThread) { if serve { await server.serveCalls() } }
    }

    /// `timeout` is generous: on two busy cores (the whole suite, a release build beside it) a handler that needs
    /// the cooperative pool has waited more than 5 s for a thread; the tests assert answers, not speed.
    func call(_ member: String, _ args: [DBusValue] = [], interface: String = Harness.interface,
              path: String = Harness.path, timeout: Duration = .seconds(20)) async throws -> [DBusValue] {
        try await client.call(server.uniqueName, path: path, interface: interface, member: member, args, timeout: timeout)
    }

    func get(_ name: String, interface: String = Harness.interface) async throws -> DBusValue {
        try await call("Get", [.string(interface), .string(name)], interface: "org.freedesktop.DBus.Properties")[0].unwrapped
    }

    func set(_ name: String, _ value: DBusValue) async throws {
        _ = try await call("Set", [.string(Self.interface), .string(name), .variant(value)],
                           interface: "org.freedesktop.DBus.Properties")
    }

    func propertiesChanged() async throws -> AsyncStream<ReceivedMessage> {
        try await client.signals(MatchRule(interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
                                           path: Self.path))
    }

    deinit {
        serving.cancel()
        client.close()
        server.close()
    }
}

private func busError(_ body: () async throws -> Void) async -> BusError? {
    do { try await body() } catch let error as BusError { return error } catch { return nil }
    return nil
}

/// The next message of a stream, or nil after `timeout`.
private func next(_ stream: AsyncStream<ReceivedMessage>, within timeout: Duration = .seconds(2)) async -> ReceivedMessage? {
    await withTaskGroup(of: ReceivedMessage?.self) { group in
        group.addTask { var iterator = stream.makeAsyncIterator(); return await iterator.next() }
        group.addTask { try? await Task.sleep(for: timeout); return nil }
        let first = await group.next() ?? nil
        group.cancelAll()
        return first
    }
}

extension RawClient {
    /// Sends a call with string arguments without waiting; its reply is read with ``reply(to:)``.
    func start(_ destination: String, _ path: String, _ interface: String, _ member: String,
               _ strings: [String] = []) -> OpaquePointer? {
        guard let connection, let message = Self.message(destination, path, interface, member, strings) else { return nil }
        defer { dbus_message_unref(message) }
        var pending: OpaquePointer?
        guard dbus_connection_send_with_reply(connection, message, &pending, 60_000) != 0 else { return nil }
        dbus_connection_flush(connection)
        return pending
    }

    /// The reply to a call made with ``start(_:_:_:_:_:)``: its arguments, or its error thrown.
    /// Waits without blocking a thread of Swift's cooperative pool (two on two cores), which other tests hold, and
    /// this task with them, for seconds at a time: the socket is read once more after the deadline, so that a reply
    /// that came while the task waited for a thread is read.
    func reply(to pending: OpaquePointer?) async throws -> [DBusValue] {
        guard let pending, let connection else { throw BusError.failed("the call was not sent") }
        defer { dbus_pending_call_unref(pending) }
        let deadline = ContinuousClock.now + .seconds(60)
        while true {
            _ = dbus_connection_read_write(connection, 0)
            _ = dbus_connection_dispatch(connection)
            if dbus_pending_call_get_completed(pending) != 0 || ContinuousClock.now >= deadline { break }
            try await Task.sleep(for: .milliseconds(2))
        }
        // libdbus aborts the process when a reply is stolen from a call not yet completed: fail the test instead.
        guard dbus_pending_call_get_completed(pending) != 0 else {
            dbus_pending_call_cancel(pending)
            throw BusError.noReply("no reply within 60 s")
        }
        guard let reply = dbus_pending_call_steal_reply(pending) else { throw BusError.noReply("no reply") }
        defer { dbus_message_unref(reply) }
        let message = ReceivedMessage(reply)
        if message.kind == .error { throw message.busError }
        return message.arguments
    }
}

@Suite struct ConnectionTests {
    @Test func methodCallsReturnTheirResults() async throws {
        let h = try await Harness()
        #expect(try await h.call("Add", [.int32(2), .int32(40)]) == [.int32(42)])
    }

    @Test func everyTypeSurvivesTheBus() async throws {
        let h = try await Harness()
        var deep: DBusValue = .string("bottom")
        for _ in 0..<60 { deep = .variant(deep) }
        let values: [DBusValue] = [
            .byte(7), .boolean(true), .int16(-3), .uint16(3), .int32(-5), .uint32(5), .int64(.min), .uint64(.max),
            .double(2.5), .string("⏯ Ünïcode"), .objectPath(ObjectPath("/a/b")!), .signature(Signature("a(sv)")!),
            .array(.int32, []), .emptyVardict, .vardict(["k": .strings(["x", "y"]), "n": .vardict([:])]),
            .structure([.string("s"), .array(.array(.byte), [.array(.byte, [.byte(1)])])]), deep,
        ]
        for value in values {
            let reply = try await h.call("Echo", [.variant(value)])
            #expect(reply == [.variant(value)], "\(value)")
        }
    }

    @Test func wrongArgumentsAreRefusedBeforeTheHandler() async throws {
        let h = try await Harness()
        let error = await busError { _ = try await h.call("Add", [.string("2"), .int32(40)]) }
        #expect(error?.name == "org.freedesktop.DBus.Error.InvalidArgs")
        #expect(error?.message.contains("'ii'") == true)
        let missing = await busError { _ = try await h.call("Add", [.int32(1)]) }
        #expect(missing?.name == "org.freedesktop.DBus.Error.InvalidArgs")
        let extra = await busError { _ = try await h.call("Record", [.string("x"), .string("y")]) }
        #expect(extra?.name == "org.freedesktop.DBus.Error.InvalidArgs")
        #expect(h.log.entries.isEmpty)
    }

    @Test func unknownTargetsGetTheStandardErrors() async throws {
        let h = try await Harness()
        #expect(await busError { _ = try await h.call("Nope") }?.name == "org.freedesktop.DBus.Error.UnknownMethod")
        #expect(await busError { _ = try await h.call("Add", interface: "org.example.Other") }?.name
                == "org.freedesktop.DBus.Error.UnknownInterface")
        #expect(await busError { _ = try await h.call("Add", path: "/org/example/Nothing") }?.name
                == "org.freedesktop.DBus.Error.UnknownObject")
        #expect(await busError { _ = try await h.get("Nope") }?.name == "org.freedesktop.DBus.Error.UnknownProperty")
        #expect(await busError { _ = try await h.get("Name", interface: "org.example.Other") }?.name
                == "org.freedesktop.DBus.Error.UnknownInterface")
    }

    @Test func handlerErrorsBecomeErrorReplies() async throws {
        let h = try await Harness()
        #expect(await busError { _ = try await h.call("Fail") } == BusError(name: "org.example.Error.Nope", message: "nope, as asked"))
        #expect(await busError { _ = try await h.call("Crash") }?.name == "org.freedesktop.DBus.Error.Failed")
        #expect(await busError { _ = try await h.call("Lie") }?.name == "org.freedesktop.DBus.Error.Failed")
        #expect(try await h.call("Add", [.int32(1), .int32(1)]) == [.int32(2)])  // still serving
    }

    @Test func aHandlerReadingOtherTypesThanItDeclaresRepliesInvalidArgs() async throws {
        let h = try await Harness()
        let error = await busError { _ = try await h.call("Misread", [.int32(7)]) }
        #expect(error?.name == "org.freedesktop.DBus.Error.InvalidArgs")
        #expect(error?.message.contains("'i'") == true && error?.message.contains("'x'") == true, "\(String(describing: error))")
        #expect(h.log.entries.isEmpty)
        #expect(try await h.call("Add", [.int32(1), .int32(1)]) == [.int32(2)])  // still serving
    }

    @Test func propertiesGetSetAndGetAll() async throws {
        let h = try await Harness()
        #expect(try await h.get("Name") == .string("thing"))
        try await h.set("Count", .int32(5))
        #expect(try await h.get("Live") == .int32(5))
        let all = try await h.call("GetAll", [.string(Harness.interface)], interface: "org.freedesktop.DBus.Properties")
        #expect(all[0].stringKeyedDictionary?.keys.sorted() == ["Count", "Fixed", "Items", "Live", "Name"])
        #expect(await busError { try await h.set("Name", .string("x")) }?.name == "org.freedesktop.DBus.Error.PropertyReadOnly")
        #expect(await busError { try await h.set("Count", .string("x")) }?.name == "org.freedesktop.DBus.Error.InvalidArgs")
        #expect(await busError { try await h.set("Count", .int32(-1)) }?.name == "org.freedesktop.DBus.Error.InvalidArgs")
        #expect(try await h.get("Live") == .int32(5))
    }

    @Test func aValueThatCannotBeSentIsAnErrorReplyAndTheOtherPropertiesStillAnswer() async throws {
        let h = try await Harness()
        // A tag read from a file can hold a NUL, which libdbus would abort the process on: the caller gets an error.
        h.object.update(Harness.interface, ["Name": .string("a\u{0}b"), "Items": .strings(["ok"])])
        let error = await busError { _ = try await h.get("Name") }
        #expect(error?.name == "org.freedesktop.DBus.Error.Failed")
        #expect(error?.message.contains("NUL") == true, "\(String(describing: error))")
        #expect(try await h.get("Items") == .strings(["ok"]))
        #expect(try await h.get("Fixed") == .string("fixed"))
    }

    @Test func propertiesChangedIsBatchedAndOnlyForRealChanges() async throws {
        let h = try await Harness()
        let changes = try await h.propertiesChanged()
        h.object.update(Harness.interface, ["Name": .string("thing")])  // unchanged: nothing
        h.object.update(Harness.interface, ["Name": .string("renamed"), "Count": .int32(3), "Items": .strings(["a"])])
        let signal = try #require(await next(changes))
        #expect(signal.arguments[0] == .string(Harness.interface))
        #expect(signal.arguments[1].stringKeyedDictionary == ["Name": .string("renamed"), "Count": .int32(3)])
        #expect(signal.arguments[2] == .strings(["Items"]))  // 'invalidates': named without its value
        h.object.update(Harness.interface, ["Fixed": .string("changed quietly")])  // const: never announced
        #expect(await next(changes, within: .milliseconds(300)) == nil)
    }

    @Test func signalsReachSubscribers() async throws {
        let h = try await Harness()
        let stream = try await h.client.signals(MatchRule(interface: Harness.interface, member: "Happened"))
        try h.object.emit(Harness.interface, "Happened", [.string("it")])
        let signal = try #require(await next(stream))
        #expect(signal.arguments == [.string("it")])
        #expect(signal.path?.rawValue == Harness.path)
        #expect(signal.sender == h.server.uniqueName)
    }

    @Test func introspectionDescribesTheObjectAndItsParents() async throws {
        let h = try await Harness()
        let xml = try await h.call("Introspect", interface: "org.freedesktop.DBus.Introspectable")[0].string ?? ""
        #expect(xml.contains("<interface name=\"org.example.Thing\">"))
        #expect(xml.contains("<method name=\"Add\">"))
        #expect(xml.contains("<arg name=\"sum\" type=\"i\" direction=\"out\"/>"))
        #expect(xml.contains("<signal name=\"Happened\">"))
        #expect(xml.contains("<property name=\"Live\" type=\"i\" access=\"read\">"))
        #expect(xml.contains("EmitsChangedSignal\" value=\"false\""))
        #expect(xml.contains("EmitsChangedSignal\" value=\"invalidates\""))
        #expect(xml.contains("org.freedesktop.DBus.Properties"))
        for (path, child) in [("/", "org"), ("/org", "example"), ("/org/example", "Thing")] {
            let parent = try await h.call("Introspect", interface: "org.freedesktop.DBus.Introspectable", path: path)[0].string ?? ""
            #expect(parent.contains("<node name=\"\(child)\"/>"), "\(path)")
        }
    }

    @Test func introspectionEscapesMarkupScalarByScalar() {
        #expect(Introspection.escape("a{sv}") == "a{sv}")
        #expect(Introspection.escape("a&b<c>\"d\" é") == "a&amp;b&lt;c&gt;&quot;d&quot; é")
        // A combining mark after "&" makes one Character with it; the XML still needs the "&" escaped.
        #expect(Introspection.escape("&\u{301}<") == "&amp;\u{301}&lt;")
    }

    @Test func peerPingIsAnswered() async throws {
        let h = try await Harness()
        #expect(try await h.call("Ping", interface: "org.freedesktop.DBus.Peer").isEmpty)
    }

    @Test func callsAreHandledInArrivalOrder() async throws {
        let h = try await Harness()
        // A slow call, then quick ones sent while it runs: they wait for it, in order. Sent once it runs (after a fixed
        // sleep instead, a loaded machine could run the slow call's task after the quick calls were sent).
        let slow = Task { try await h.call("SlowRecord", [.string("slow"), .uint32(200)]) }
        _ = try await poll({ h.log.entries }, until: { $0.contains("start slow") })
        for i in 0..<5 { _ = try await h.call("Record", [.string("quick\(i)")]) }
        _ = try await slow.value
        #expect(h.log.entries == ["start slow", "slow", "quick0", "quick1", "quick2", "quick3", "quick4"])
    }

    @Test func sendersTakeTurnsInTheCallQueueAndEachKeepsItsOrder() async throws {
        let h = try await Harness()
        let flood = try RawClient(address: h.bus.address)
        let quiet = try RawClient(address: h.bus.address)
        defer {
            flood.close()
            quiet.close()
        }
        let server = h.server.uniqueName
        // One sender's call holds the queue; 20 more of its calls queue up behind it, then one of another sender.
        flood.send(server, Harness.path, Harness.interface, "Hold", ["F0"])
        let held = try await poll(timeout: .seconds(5), { h.log.entries }, until: { $0 == ["F0"] })
        try #require(held == ["F0"])
        for n in 1...20 { flood.send(server, Harness.path, Harness.interface, "Record", ["F\(n)"]) }
        try flood.ping(server)  // answered once the server has dispatched (queued) the 20 calls
        quiet.send(server, Harness.path, Harness.interface, "Record", ["Q"])
        try quiet.ping(server)

        // A Get of a third sender with nothing queued is answered while the queue is held.
        #expect(try await h.get("Name") == .string("thing"))

        h.gate.open()
        let log = try await poll(timeout: .seconds(5), { h.log.entries }, until: { $0.count == 22 })
        // The quiet sender's call comes at its turn: after the call running and one more of the flood, not after
        // all 20 (a FIFO's order); the flood's calls keep theirs.
        #expect(log.firstIndex(of: "Q").map { $0 <= 2 } == true, "\(log)")
        #expect(log.filter { $0 != "Q" } == (0...20).map { "F\($0)" }, "\(log)")
    }

    @Test func aDeferredCallDoesNotHoldUpOtherSenders() async throws {
        let h = try await Harness()
        let other = try BusConnection(address: h.bus.address)
        defer { other.close() }
        let slow = Task { try await h.call("HeldList", [.string("slow")]) }
        // The deferred call is running (not merely sent: under load the task may not have run yet).
        _ = try await poll({ h.log.entries }, until: { $0.contains("start slow") })
        _ = try await other.call(h.server.uniqueName, path: Harness.path, interface: Harness.interface, member: "Record",
                                 [.string("other")])
        let got = try await other.call(h.server.uniqueName, path: Harness.path, interface: "org.freedesktop.DBus.Properties",
                                       member: "Get", [.string(Harness.interface), .string("Name")])
        #expect(got.first?.unwrapped == .string("thing"))
        // Handled and answered while the deferred call was still running (held until the gate opens).
        #expect(h.log.entries == ["start slow", "other"])
        h.gate.open()
        #expect(try await slow.value == [.string("slow")])
        #expect(h.log.entries == ["start slow", "other", "done slow"])
    }

    @Test func aSenderGetsItsRepliesInTheOrderOfItsCalls() async throws {
        let h = try await Harness()
        let replies = Recorder()
        let slow = Task {
            let reply = try await h.call("HeldList", [.string("slow")])
            replies.append("slow")
            return reply
        }
        // The deferred call is running, its reply held until the gate opens.
        _ = try await poll({ h.log.entries }, until: { $0.contains("start slow") })
        // Sent after the deferred call by the same connection: handled at once, answered after it.
        let quick = Task {
            _ = try await h.call("Record", [.string("quick")])
            replies.append("quick")
            // Held until the deferred call's reply went out, i.e. after its handler finished (answered at once,
            // "done slow" would not be in the log yet). Which client task runs first after both replies arrived is up
            // to the scheduler, so that order proves nothing.
            return h.log.entries
        }
        let get = Task {
            _ = try await h.get("Name")
            replies.append("get")
        }
        // "quick" handled while the deferred call still runs; only then may it end.
        _ = try await poll(timeout: .seconds(60), { h.log.entries }, until: { $0.contains("quick") })
        #expect(replies.entries.isEmpty, "nothing answered before the deferred call: \(replies.entries)")
        h.gate.open()
        _ = try await slow.value
        let logWhenQuickWasAnswered = try await quick.value
        try await get.value
        #expect(h.log.entries == ["start slow", "quick", "done slow"])
        #expect(logWhenQuickWasAnswered.contains("done slow"), "\(logWhenQuickWasAnswered)")
        #expect(Set(replies.entries) == ["slow", "quick", "get"])
    }

    /// A Get is answered on the I/O thread at once (no queue) only when nothing of its sender's is still running.
    @Test func aGetSentWhileItsSendersCallRunsIsAnsweredAfterThatCall() async throws {
        let h = try await Harness()
        let slow = Task { try await h.call("SlowList", [.string("slow"), .uint32(1_000)]) }
        _ = try await poll({ h.log.entries }, until: { $0.contains("start slow") })
        _ = try await h.get("Name")
        let logWhenGetWasAnswered = h.log.entries
        _ = try await slow.value
        #expect(logWhenGetWasAnswered == ["start slow", "done slow"])
        // With nothing of its own pending, a Get is answered while another sender's call runs.
        let other = try BusConnection(address: h.bus.address)
        defer { other.close() }
        let slowAgain = Task { try await h.call("HeldList", [.string("again")]) }
        _ = try await poll({ h.log.entries }, until: { $0.contains("start again") })
        _ = try await other.call(h.server.uniqueName, path: Harness.path, interface: "org.freedesktop.DBus.Properties",
                                 member: "Get", [.string(Harness.interface), .string("Name")])
        #expect(!h.log.entries.contains("done again"))
        h.gate.open()
        _ = try await slowAgain.value
    }

    @Test func aDeferredCallsErrorsAreErrorReplies() async throws {
        let h = try await Harness()
        let error = await busError { _ = try await h.call("SlowList", [.string("fail"), .uint32(10)]) }
        #expect(error?.name == "org.example.Error.Nope")
        #expect(error?.message == "nope, later")
    }

    /// A Get sent after a Set still queued behind a call of the same sender sees the Set's effect, though Gets are
    /// normally answered at once. One raw client writes the three calls in that order without waiting for replies:
    /// sent by tasks of their own a fixed sleep apart, the Set and the Get could go in either order on a loaded
    /// machine.
    @Test func getWaitsForAnEarlierSetStillBeingHandled() async throws {
        let h = try await Harness()
        let raw = try RawClient(address: h.bus.address)
        defer { raw.close() }
        let server = h.server.uniqueName, properties = "org.freedesktop.DBus.Properties"
        raw.send(server, Harness.path, Harness.interface, "Hold", ["slow"])
        try #require(try await poll(timeout: .seconds(5), { h.log.entries }, until: { $0 == ["slow"] }) == ["slow"])
        let set = try #require(RawClient.message(server, Harness.path, properties, "Set", [Harness.interface, "Count"]))
        defer { dbus_message_unref(set) }
        var iter = DBusMessageIter(), variant = DBusMessageIter()
        dbus_message_iter_init_append(set, &iter)
        var count: Int32 = 9
        _ = dbus_message_iter_open_container(&iter, Int32(UInt8(ascii: "v")), "i", &variant)
        _ = dbus_message_iter_append_basic(&variant, Int32(UInt8(ascii: "i")), &count)
        _ = dbus_message_iter_close_container(&iter, &variant)
        let get = try #require(RawClient.message(server, Harness.path, properties, "Get", [Harness.interface, "Live"]))
        defer { dbus_message_unref(get) }
        var getSerial: UInt32 = 0
        _ = dbus_connection_send(raw.connection, set, nil)
        _ = dbus_connection_send(raw.connection, get, &getSerial)
        dbus_connection_flush(raw.connection)
        // The server has dispatched both: a Get answered at once would have been answered by now, with 0.
        try raw.ping(server)
        h.gate.open()
        let serial = getSerial
        let live = try await offThePool { Self.int32Reply(on: raw, to: serial, within: .seconds(20)) }
        #expect(live == 9)
    }

    /// The Int32 in the variant of `raw`'s reply to call `serial`; nil for an error reply or none within `timeout`.
    private static func int32Reply(on raw: RawClient, to serial: UInt32, within timeout: Duration) -> Int32? {
        guard let connection = raw.connection else { return nil }
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            _ = dbus_connection_read_write(connection, 100)
            while let message = dbus_connection_pop_message(connection) {
                defer { dbus_message_unref(message) }
                guard dbus_message_get_reply_serial(message) == serial else { continue }
                var iter = DBusMessageIter(), variant = DBusMessageIter()
                guard dbus_message_get_type(message) == DBUS_MESSAGE_TYPE_METHOD_RETURN, dbus_message_iter_init(message, &iter) != 0,
                      dbus_message_iter_get_arg_type(&iter) == Int32(UInt8(ascii: "v")) else { return nil }
                dbus_message_iter_recurse(&iter, &variant)
                guard dbus_message_iter_get_arg_type(&variant) == Int32(UInt8(ascii: "i")) else { return nil }
                var value: Int32 = 0
                dbus_message_iter_get_basic(&variant, &value)
                return value
            }
        }
        return nil
    }

    @Test func aCallWithNoAnswerTimesOut() async throws {
        let h = try await Harness(serve: false)
        let error = await busError { _ = try await h.call("Add", [.int32(1), .int32(2)], timeout: .milliseconds(200)) }
        #expect(error?.name == "org.freedesktop.DBus.Error.NoReply")
    }

    @Test func wellKnownNamesAreOwnedAndReleased() async throws {
        let h = try await Harness()
        #expect(try await h.server.requestName("org.example.Owner") == .primaryOwner)
        #expect(try await h.client.requestName("org.example.Owner") == .exists)
        try await h.server.releaseName("org.example.Owner")
        #expect(try await h.client.requestName("org.example.Owner") == .primaryOwner)
    }

    @Test func losingTheBusEndsServing() async throws {
        let h = try await Harness(serve: false)
        let served = Task(executorPreference: BusConnection.callThread) { await h.server.serveCalls(); return true }
        h.bus.stop()
        #expect(await served.value)
        #expect(!h.server.isConnected)
        #expect(await busError { _ = try await h.client.call("org.freedesktop.DBus", path: "/", interface: nil, member: "GetId") } != nil)
    }

    @Test func callsToAHeldInterfaceWaitForItsReleaseWhileTheOthersAreAnswered() async throws {
        let h = try await Harness()
        let path = ObjectPath("/org/example/Late")!
        let total = Mutex<Int32>(0)
        let late = Interface("org.example.Late",
                             methods: [Method("Total", out: [("n", .int32)]) { _ in [.int32(total.withLock { $0 })] }],
                             properties: [Property("Total", .int32)])
        let ready = Interface("org.example.Ready", properties: [Property("Name", .string)])
        let object = try h.server.export(path, interfaces: [ready, late])
        object.update("org.example.Ready", ["Name": .string("early")])
        let hold = h.server.hold(path, interfaces: ["org.example.Late"])

        // Before Late has its values: answered at once, Get would say "no value yet" and Total 0.
        let raw = try RawClient(address: h.bus.address)
        defer { raw.close() }
        let server = h.server.uniqueName
        let get = raw.start(server, path.rawValue, "org.freedesktop.DBus.Properties", "Get", ["org.example.Late", "Total"])
        let getAll = raw.start(server, path.rawValue, "org.freedesktop.DBus.Properties", "GetAll", ["org.example.Late"])
        let method = raw.start(server, path.rawValue, "org.example.Late", "Total")
        try raw.ping(server)  // all three have reached the server

        // Meanwhile another client gets the other interface, and Introspect, at once.
        let name = try await h.client.call(server, path: path.rawValue, interface: "org.freedesktop.DBus.Properties",
                                           member: "Get", [.string("org.example.Ready"), .string("Name")])
        #expect(name.first?.unwrapped == .string("early"))
        let xml = try await h.client.call(server, path: path.rawValue, interface: "org.freedesktop.DBus.Introspectable",
                                          member: "Introspect").first?.string ?? ""
        #expect(xml.contains("<interface name=\"org.example.Late\">"))

        total.withLock { $0 = 42 }
        object.update("org.example.Late", ["Total": .int32(42)])
        hold.release()
        #expect(try await raw.reply(to: get) == [.variant(.int32(42))])
        #expect(try await raw.reply(to: getAll) == [.vardict(["Total": .int32(42)])])
        #expect(try await raw.reply(to: method) == [.int32(42)])
    }

    @Test func callsToAHeldObjectWaitUntilItIsExported() async throws {
        let h = try await Harness()
        let path = ObjectPath("/org/example/Later")!
        let hold = h.server.hold(path)
        let raw = try RawClient(address: h.bus.address)
        defer { raw.close() }
        let server = h.server.uniqueName
        let hello = raw.start(server, path.rawValue, "org.example.Later", "Hello")
        let get = raw.start(server, path.rawValue, "org.freedesktop.DBus.Properties", "Get", ["org.example.Later", "Name"])
        let parent = raw.start(server, "/org/example", "org.freedesktop.DBus.Introspectable", "Introspect")
        try raw.ping(server)  // all three have reached the server, before the object exists

        let later = Interface("org.example.Later", methods: [Method("Hello", out: [("s", .string)]) { _ in [.string("hello")] }],
                              properties: [Property("Name", .string)])
        let object = try h.server.export(path, interfaces: [later])
        object.update("org.example.Later", ["Name": .string("later")])
        hold.release()
        #expect(try await raw.reply(to: hello) == [.string("hello")])
        #expect(try await raw.reply(to: get) == [.variant(.string("later"))])
        let xml = try await raw.reply(to: parent).first?.string ?? ""
        #expect(xml.contains("<node name=\"Later\"/>") && xml.contains("<node name=\"Thing\"/>"), "\(xml)")
    }

    @Test(.timeLimit(.minutes(1))) func closingTheConnectionReleasesItsHolds() async throws {
        let h = try await Harness(serve: false)
        let served = Task(executorPreference: BusConnection.callThread) { await h.server.serveCalls(); return true }
        _ = h.server.hold(ObjectPath("/org/example/Never")!)
        let raw = try RawClient(address: h.bus.address)
        defer { raw.close() }
        raw.send(h.server.uniqueName, "/org/example/Never", "org.example.Never", "Call")
        try raw.ping(h.server.uniqueName)
        h.server.close()
        #expect(await served.value)  // the held call did not keep the queue waiting for ever
    }
}
