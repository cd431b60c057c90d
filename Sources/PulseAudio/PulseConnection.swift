import CPulse
import Foundation
import Synchronization

/// One connection to the sound server: a libpulse threaded main loop and a context on it, subscribed to sink,
/// sink-input and server events. Single-shot: once it fails or the server goes away, ``events`` ends with
/// `.disconnected` and a new connection is needed (``PulseClient`` does that, with backoff).
///
/// ```swift
/// let connection = try await PulseConnection.connect(applicationName: "lectern")
/// let sinks = try await connection.sinks()
/// for await event in connection.events { ... }
/// ```
///
/// Threads: libpulse runs its loop on a thread of its own and calls the C callbacks there, with the loop's lock
/// held; they only convert what they are given into Swift values, resume a continuation or yield into
/// ``events``. Every other libpulse call is made with the lock held (`withLock`).
// @unchecked Sendable: `mainloop` and `context` are set in init and released in deinit; every use of them outside
// the loop thread holds the loop's lock (pa_threaded_mainloop_lock), which is libpulse's own rule. `pending` has
// its own Mutex.
public final class PulseConnection: @unchecked Sendable {
    /// What happens on the connection after it was ready.
    public enum Event: Sendable, Hashable {
        /// A sink, sink input or the server's defaults changed.
        case object(PulseObjectEvent)
        /// The context failed or was terminated (the server died or kicked us out); the last event.
        case disconnected(String)
    }

    /// Subscription events, then `.disconnected` once; ends when the connection does.
    public let events: AsyncStream<Event>

    private let mainloop: OpaquePointer   // pa_threaded_mainloop*
    private let context: OpaquePointer    // pa_context*
    /// What the callbacks touch. A separate object, so that a callback never holds the last reference to this
    /// one: deinit must not run on the loop thread (pa_threaded_mainloop_stop from there aborts).
    private let state: ContextState

    private init(applicationName: String) throws(PulseError) {
        guard let mainloop = pulse.pa_threaded_mainloop_new() else { throw .connectionFailed("pa_threaded_mainloop_new failed") }
        guard let api = pulse.pa_threaded_mainloop_get_api(mainloop),
              let context = pulse.pa_context_new(api, applicationName) else {
            pulse.pa_threaded_mainloop_free(mainloop)
            throw .connectionFailed("pa_context_new failed")
        }
        self.mainloop = mainloop
        self.context = context
        let (events, continuation) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .unbounded)
        self.events = events
        state = ContextState(context: context, continuation: continuation)
    }

    /// Connects to `server` (nil: libpulse's default, i.e. `PULSE_SERVER` or the per-user socket; never
    /// autospawned) and subscribes to sink, sink-input and server events. Throws when the server can't be
    /// reached or refuses us; gives up after `timeout`.
    public static func connect(server: String? = nil, applicationName: String,
                               timeout: Duration = .seconds(5)) async throws(PulseError) -> PulseConnection {
        try await LibPulse.load()
        let connection = try PulseConnection(applicationName: applicationName)
        do {
            try await connection.start(server: server, timeout: timeout)
        } catch let error as PulseError {
            throw error
        } catch {
            throw .connectionFailed("\(error)")
        }
        return connection
    }

    private func start(server: String?, timeout: Duration) async throws {
        let state = self.state
        let userdata = Unmanaged.passUnretained(state).toOpaque()
        try await withCheckedThrowingContinuation { (ready: CheckedContinuation<Void, any Error>) in
            state.readiness.withLock { $0 = ready }
            withLock {
                pulse.pa_context_set_state_callback(context, contextStateCallback, userdata)
                pulse.pa_context_set_subscribe_callback(context, subscribeCallback, userdata)
                let flags = pa_context_flags_t(rawValue: PA_CONTEXT_NOAUTOSPAWN.rawValue)
                if pulse.pa_context_connect(context, server, flags, nil) < 0 {
                    state.resumeReadiness(with: PulseError.connectionFailed(state.lastError))
                }
            }
            // The loop thread starts after connect, so nothing above races with a callback.
            if pulse.pa_threaded_mainloop_start(mainloop) < 0 {
                state.resumeReadiness(with: PulseError.connectionFailed("pa_threaded_mainloop_start failed"))
            }
            // A server that accepts the socket but never answers: give up after `timeout`.
            let deadline = DispatchTime.now() + .nanoseconds(Int(timeout.components.seconds) * 1_000_000_000
                                                            + Int(timeout.components.attoseconds / 1_000_000_000))
            DispatchQueue.global().asyncAfter(deadline: deadline) {
                state.resumeReadiness(with: PulseError.connectionFailed("no answer within \(timeout)"))
            }
        }
        try await subscribe()
    }

    deinit {
        pulse.pa_threaded_mainloop_lock(mainloop)
        pulse.pa_context_set_state_callback(context, nil, nil)
        pulse.pa_context_set_subscribe_callback(context, nil, nil)
        pulse.pa_context_disconnect(context)
        pulse.pa_context_unref(context)
        pulse.pa_threaded_mainloop_unlock(mainloop)
        pulse.pa_threaded_mainloop_stop(mainloop)  // joins the loop thread: no callback runs after this
        pulse.pa_threaded_mainloop_free(mainloop)
        state.failPending(PulseError.disconnected("closed"))
        state.continuation.finish()
    }

    /// Whether the context is ready now (false once the server went away).
    public var isConnected: Bool { state.phase.withLock { $0.ready && !$0.ended } }

    // MARK: - Queries

    /// pa_context_get_server_info.
    public func serverInfo() async throws(PulseError) -> PulseServerInfo {
        let infos = try await run(Collect<PulseServerInfo>.self) { context, box in
            pulse.pa_context_get_server_info(context, serverInfoCallback, box)
        }
        guard let info = infos.first else { throw .requestFailed("no server info") }
        return info
    }

    /// pa_context_get_sink_info_list.
    public func sinks() async throws(PulseError) -> [PulseSink] {
        try await run(Collect<PulseSink>.self) { context, box in
            pulse.pa_context_get_sink_info_list(context, sinkInfoCallback, box)
        }
    }

    /// pa_context_get_sink_info_by_index; nil if there is no such sink (any more).
    public func sink(index: UInt32) async throws(PulseError) -> PulseSink? {
        do {
            return try await run(Collect<PulseSink>.self) { context, box in
                pulse.pa_context_get_sink_info_by_index(context, index, sinkInfoCallback, box)
            }.first
        } catch .requestFailed {
            return nil
        }
    }

    /// pa_context_get_sink_info_by_name; nil if there is no such sink (any more). The server resolves its own
    /// names too: `@DEFAULT_SINK@` is the default sink, with its real index and name.
    public func sink(named name: String) async throws(PulseError) -> PulseSink? {
        do {
            return try await run(Collect<PulseSink>.self) { context, box in
                pulse.pa_context_get_sink_info_by_name(context, name, sinkInfoCallback, box)
            }.first
        } catch .requestFailed {
            return nil
        }
    }

    /// pa_context_get_sink_input_info_list: every playback stream.
    public func sinkInputs() async throws(PulseError) -> [PulseSinkInput] {
        try await run(Collect<PulseSinkInput>.self) { context, box in
            pulse.pa_context_get_sink_input_info_list(context, sinkInputInfoCallback, box)
        }
    }

    /// The playback streams of process `pid` (sink-input property `application.process.id`).
    public func sinkInputs(ofProcess pid: Int32) async throws(PulseError) -> [PulseSinkInput] {
        try await sinkInputs().filter { $0.processID == pid }
    }

    /// pa_context_move_sink_input_by_index: moves a stream to another sink, named by its index (PipeWire lets two
    /// sinks have one name).
    public func moveSinkInput(_ index: UInt32, toSinkIndex sink: UInt32) async throws(PulseError) {
        _ = try await run(Collect<Bool>.self) { context, box in
            pulse.pa_context_move_sink_input_by_index(context, index, sink, successCallback, box)
        }
    }

    /// pa_context_set_sink_input_mute: mutes or unmutes a stream.
    public func setSinkInputMute(_ index: UInt32, muted: Bool) async throws(PulseError) {
        _ = try await run(Collect<Bool>.self) { context, box in
            pulse.pa_context_set_sink_input_mute(context, index, muted ? 1 : 0, successCallback, box)
        }
    }

    private func subscribe() async throws(PulseError) {
        let mask = PA_SUBSCRIPTION_MASK_SINK.rawValue | PA_SUBSCRIPTION_MASK_SINK_INPUT.rawValue
            | PA_SUBSCRIPTION_MASK_SERVER.rawValue
        _ = try await run(Collect<Bool>.self) { context, box in
            pulse.pa_context_subscribe(context, pa_subscription_mask_t(rawValue: mask), successCallback, box)
        }
    }

    /// Starts one libpulse operation with the lock held and waits for its callback to finish `Box`.
    private func run<Item>(_ type: Collect<Item>.Type,
                           _ start: (OpaquePointer, UnsafeMutableRawPointer) -> OpaquePointer?) async throws(PulseError) -> [Item] {
        do {
            return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<[Item], any Error>) in
                let box = Collect<Item>(owner: state, continuation: continuation)
                guard isConnected else {
                    box.finish(error: PulseError.notConnected)
                    return
                }
                state.pending.withLock { $0[ObjectIdentifier(box)] = box }
                withLock {
                    // The registry keeps the box alive; the callback gets it unretained.
                    if let operation = start(context, Unmanaged.passUnretained(box).toOpaque()) {
                        pulse.pa_operation_unref(operation)
                    } else {
                        box.finish(error: PulseError.requestFailed(state.lastError))
                    }
                }
            }
        } catch let error as PulseError {
            throw error
        } catch {
            throw .requestFailed("\(error)")
        }
    }

    // MARK: - Internals (any thread)

    /// Runs `body` with the main loop's lock held. Not on the loop thread (callbacks hold it already).
    private func withLock<T>(_ body: () throws -> T) rethrows -> T {
        pulse.pa_threaded_mainloop_lock(mainloop)
        defer { pulse.pa_threaded_mainloop_unlock(mainloop) }
        return try body()
    }
}

/// The part of a ``PulseConnection`` its C callbacks reach (loop thread, lock held): the event stream, pending
/// queries, readiness. Holds no libpulse reference of its own (`context` is the connection's, used only while it
/// lives, on the loop thread or with the lock held).
// @unchecked Sendable: mutable state is behind Mutexes; `context` is only read by libpulse calls made under the
// loop's lock or on its thread; `continuation` is Sendable.
final class ContextState: @unchecked Sendable {
    let context: OpaquePointer
    let continuation: AsyncStream<PulseConnection.Event>.Continuation
    /// Queries waiting for their callback; failed all at once when the context dies (libpulse then cancels
    /// their operations without calling back).
    let pending = Mutex<[ObjectIdentifier: PendingOperation]>([:])
    /// Resumed once by the state callback when the context is first ready or fails.
    let readiness = Mutex<CheckedContinuation<Void, any Error>?>(nil)
    /// Set by the state callback: whether the context reached READY and whether it ended since.
    let phase = Mutex<(ready: Bool, ended: Bool)>((false, false))

    init(context: OpaquePointer, continuation: AsyncStream<PulseConnection.Event>.Continuation) {
        self.context = context
        self.continuation = continuation
    }

    /// pa_strerror of the context's last error. With the lock held, or on the loop thread.
    var lastError: String { errorText(context) }

    func resumeReadiness(with error: (any Error)?) {
        guard let ready = readiness.withLock({ r -> CheckedContinuation<Void, any Error>? in
            defer { r = nil }
            return r
        }) else { return }
        if let error { ready.resume(throwing: error) } else { ready.resume() }
    }

    func failPending(_ error: PulseError) {
        let boxes = pending.withLock { p -> [PendingOperation] in
            defer { p = [:] }
            return Array(p.values)
        }
        for box in boxes { box.fail(error) }
    }

    // MARK: - Callbacks' side (loop thread, lock held)

    func contextStateChanged() {
        let state = pulse.pa_context_get_state(context)
        switch state {
        case PA_CONTEXT_READY:
            phase.withLock { $0.ready = true }
            resumeReadiness(with: nil)
        case PA_CONTEXT_FAILED, PA_CONTEXT_TERMINATED:
            let reason = state == PA_CONTEXT_FAILED ? lastError : "terminated"
            let wasReady = phase.withLock { p -> Bool in
                defer { p.ended = true }
                return p.ready && !p.ended
            }
            resumeReadiness(with: PulseError.connectionFailed(reason))
            failPending(.disconnected(reason))
            if wasReady { continuation.yield(.disconnected(reason)) }
            continuation.finish()
        default:
            break
        }
    }

    func subscriptionEvent(_ type: pa_subscription_event_type_t, index: UInt32) {
        let facilityBits = type.rawValue & PA_SUBSCRIPTION_EVENT_FACILITY_MASK.rawValue
        let changeBits = type.rawValue & PA_SUBSCRIPTION_EVENT_TYPE_MASK.rawValue
        let facility: PulseObjectEvent.Facility
        switch facilityBits {
        case PA_SUBSCRIPTION_EVENT_SINK.rawValue: facility = .sink
        case PA_SUBSCRIPTION_EVENT_SINK_INPUT.rawValue: facility = .sinkInput
        case PA_SUBSCRIPTION_EVENT_SERVER.rawValue: facility = .server
        default: return
        }
        let change: PulseObjectEvent.Change
        switch changeBits {
        case PA_SUBSCRIPTION_EVENT_NEW.rawValue: change = .new
        case PA_SUBSCRIPTION_EVENT_REMOVE.rawValue: change = .remove
        default: change = .change
        }
        continuation.yield(.object(PulseObjectEvent(facility, change, index: index)))
    }
}

// MARK: - Pending operations

/// A query waiting for libpulse to call back; finished exactly once (by its callback, or failed with the rest).
class PendingOperation: @unchecked Sendable {
    func fail(_ error: PulseError) {}
}

/// Collects a query's items until end-of-list, then resumes the caller.
// @unchecked Sendable: `items` is appended to only on the loop thread, by callbacks of this one operation, before
// `finish`; the continuation is taken under `lock` so it is resumed once.
final class Collect<Item>: PendingOperation, @unchecked Sendable {
    private var items: [Item] = []
    private let lock = NSLock()
    private var continuation: CheckedContinuation<[Item], any Error>?
    private weak var owner: ContextState?

    init(owner: ContextState, continuation: CheckedContinuation<[Item], any Error>) {
        self.owner = owner
        self.continuation = continuation
    }

    func append(_ item: Item) { items.append(item) }

    /// Ends the operation: the items so far, or `error`.
    func finish(error: (any Error)? = nil) {
        lock.lock()
        let continuation = self.continuation
        self.continuation = nil
        lock.unlock()
        guard let continuation else { return }
        _ = owner?.pending.withLock { $0.removeValue(forKey: ObjectIdentifier(self)) }
        if let error { continuation.resume(throwing: error) } else { continuation.resume(returning: items) }
    }

    override func fail(_ error: PulseError) { finish(error: error) }

    static func from(_ userdata: UnsafeMutableRawPointer) -> Collect<Item> {
        Unmanaged<Collect<Item>>.fromOpaque(userdata).takeUnretainedValue()
    }
}

// MARK: - C callbacks (loop thread): convert, hand on, never block

private func connection(_ userdata: UnsafeMutableRawPointer?) -> ContextState? {
    userdata.map { Unmanaged<ContextState>.fromOpaque($0).takeUnretainedValue() }
}

private func contextStateCallback(_ context: OpaquePointer?, _ userdata: UnsafeMutableRawPointer?) {
    connection(userdata)?.contextStateChanged()
}

private func subscribeCallback(_ context: OpaquePointer?, _ type: pa_subscription_event_type_t, _ index: UInt32,
                               _ userdata: UnsafeMutableRawPointer?) {
    connection(userdata)?.subscriptionEvent(type, index: index)
}

private func requestError(_ context: OpaquePointer?) -> PulseError {
    .requestFailed(context.map(errorText) ?? "unknown error")
}

/// pa_strerror of the context's last error.
private func errorText(_ context: OpaquePointer) -> String {
    string(pulse.pa_strerror(pulse.pa_context_errno(context))) ?? "unknown error"
}

private func successCallback(_ context: OpaquePointer?, _ success: Int32, _ userdata: UnsafeMutableRawPointer?) {
    guard let userdata else { return }
    let box = Collect<Bool>.from(userdata)
    if success != 0 {
        box.append(true)
        box.finish()
    } else {
        box.finish(error: requestError(context))
    }
}

private func serverInfoCallback(_ context: OpaquePointer?, _ info: UnsafePointer<pa_server_info>?,
                                _ userdata: UnsafeMutableRawPointer?) {
    guard let userdata else { return }
    let box = Collect<PulseServerInfo>.from(userdata)
    guard let info = info?.pointee else {
        box.finish(error: requestError(context))
        return
    }
    box.append(PulseServerInfo(serverName: string(info.server_name) ?? "", serverVersion: string(info.server_version) ?? "",
                               defaultSinkName: string(info.default_sink_name)))
    box.finish()
}

private func sinkInfoCallback(_ context: OpaquePointer?, _ info: UnsafePointer<pa_sink_info>?, _ eol: Int32,
                              _ userdata: UnsafeMutableRawPointer?) {
    guard let userdata else { return }
    let box = Collect<PulseSink>.from(userdata)
    if eol < 0 {
        box.finish(error: requestError(context))
    } else if eol > 0 {
        box.finish()
    } else if let info = info?.pointee {
        var ports: [PulsePort] = []
        if let array = info.ports {
            for i in 0..<Int(info.n_ports) {
                guard let port = array[i]?.pointee else { continue }
                ports.append(PulsePort(name: string(port.name) ?? "", description: string(port.description) ?? "",
                                       availability: availability(port.available)))
            }
        }
        box.append(PulseSink(index: info.index, name: string(info.name) ?? "", description: string(info.description) ?? "",
                             ports: ports, activePort: info.active_port.flatMap { string($0.pointee.name) }))
    }
}

private func sinkInputInfoCallback(_ context: OpaquePointer?, _ info: UnsafePointer<pa_sink_input_info>?, _ eol: Int32,
                                   _ userdata: UnsafeMutableRawPointer?) {
    guard let userdata else { return }
    let box = Collect<PulseSinkInput>.from(userdata)
    if eol < 0 {
        box.finish(error: requestError(context))
    } else if eol > 0 {
        box.finish()
    } else if let info = info?.pointee {
        let pid = info.proplist.flatMap { string(pulse.pa_proplist_gets($0, "application.process.id")) }.flatMap { Int32($0) }
        let name = info.proplist.flatMap { string(pulse.pa_proplist_gets($0, "application.name")) }
        box.append(PulseSinkInput(index: info.index, sinkIndex: info.sink, processID: pid, applicationName: name,
                                  muted: info.mute != 0))
    }
}

private func string(_ pointer: UnsafePointer<CChar>?) -> String? {
    pointer.map { String(cString: $0) }
}

private func availability(_ value: Int32) -> PulsePort.Availability {
    switch value {
    case Int32(PA_PORT_AVAILABLE_NO.rawValue): return .no
    case Int32(PA_PORT_AVAILABLE_YES.rawValue): return .yes
    default: return .unknown
    }
}
