import CDBus
import Synchronization

/// One outgoing call waiting for its reply: its continuation is resumed exactly once, whichever comes first of
/// - libdbus's notify function, with the reply (or libdbus's own timeout error);
/// - libdbus freeing the call without notifying: it drops every pending call when the connection closes or the bus
///   goes away (their timeout errors are queued, but no longer matched to the calls), so the release function of
///   the notify data ends the call with ``BusError/disconnected(_:)``;
/// - the connection closing first (``PendingCalls/close()``): the loop that would dispatch a reply has stopped.
///
/// The box is retained by the pending call until libdbus frees the notify data (``releasePendingReply``), and by
/// the connection's ``PendingCalls`` while the caller waits.
final class PendingReply: Sendable {
    private enum State {
        /// Made, not yet waited for.
        case new
        case waiting(CheckedContinuation<ReceivedMessage, any Error>)
        /// Failed before the caller waited: the caller's continuation is resumed with this at once.
        case failed(BusError)
        /// Resumed.
        case ended
    }
    private let state = Mutex(State.new)

    /// Sends `message` on `connection` and waits for its reply (or libdbus's timeout error after `timeout`), or the
    /// error of `calls` closing.
    static func send(_ message: OutgoingMessage, on loop: EventLoop, timeout: Duration,
                     tracking calls: PendingCalls) async throws -> ReceivedMessage {
        let ms = Int32(clamping: timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        let box = PendingReply()
        guard calls.add(box) else { throw PendingCalls.closedError }
        defer { calls.remove(box) }
        return try await withCheckedThrowingContinuation { continuation in
            guard box.wait(continuation) else { return }  // the connection closed meanwhile: resumed with its error
            loop.perform { connection in box.send(message, on: connection, timeoutMs: max(ms, 1)) }
        }
    }

    /// Sends the call and arranges for its reply to end the wait; with the connection to itself (``EventLoop/perform(_:)``).
    private func send(_ message: OutgoingMessage, on connection: OpaquePointer, timeoutMs: Int32) {
        var pending: OpaquePointer?
        guard dbus_connection_send_with_reply(connection, message.raw, &pending, timeoutMs) != 0 else {
            fail(BusError.noMemory())
            return
        }
        // No pending call when the connection is already closed or disconnected.
        guard let pending else {
            fail(PendingCalls.closedError)
            return
        }
        let data = Unmanaged.passRetained(self).toOpaque()
        guard dbus_pending_call_set_notify(pending, pendingCallNotify, data, releasePendingReply) != 0 else {
            Unmanaged<PendingReply>.fromOpaque(data).release()
            dbus_pending_call_cancel(pending)
            dbus_pending_call_unref(pending)
            fail(BusError.noMemory())
            return
        }
        // No reply can have been dispatched before the notify function was set: the loop thread dispatches only while
        // it holds the gate, which this thread holds (``EventLoop/perform(_:)``).
        // Dropped by libdbus already (the connection went away since the send): this frees the call, and its
        // release function ends the wait.
        dbus_pending_call_unref(pending)
    }

    /// Keeps `continuation`; false when the call already failed (`continuation` is resumed with that error then).
    private func wait(_ continuation: CheckedContinuation<ReceivedMessage, any Error>) -> Bool {
        let earlier = state.withLock { state -> BusError? in
            guard case .failed(let error) = state else {
                state = .waiting(continuation)
                return nil
            }
            state = .ended
            return error
        }
        guard let earlier else { return true }
        continuation.resume(throwing: earlier)
        return false
    }

    /// Takes the continuation, once: nil when it was already taken.
    private func take(failing error: BusError? = nil) -> CheckedContinuation<ReceivedMessage, any Error>? {
        state.withLock { state -> CheckedContinuation<ReceivedMessage, any Error>? in
            switch state {
            case .waiting(let continuation):
                state = .ended
                return continuation
            case .new:
                if let error { state = .failed(error) }
                return nil
            case .failed, .ended:
                return nil
            }
        }
    }

    /// The reply has come (or libdbus's timeout error): from the notify function, or from `send` when it came first.
    func complete(_ pending: OpaquePointer) {
        guard let continuation = take() else { return }
        guard let reply = dbus_pending_call_steal_reply(pending) else {
            continuation.resume(throwing: BusError.noReply("no reply"))
            return
        }
        defer { dbus_message_unref(reply) }
        continuation.resume(returning: ReceivedMessage(reply))
    }

    /// Ends the wait with `error`, unless it has ended already. Before the caller waits, the caller gets it then.
    func fail(_ error: BusError) {
        take(failing: error)?.resume(throwing: error)
    }
}

/// The client calls of one connection still waiting for their replies, so that closing the connection ends them all.
final class PendingCalls: Sendable {
    private struct State: ~Copyable {
        var closed = false
        var waiting: [ObjectIdentifier: PendingReply] = [:]
    }
    private let state = Mutex(State())

    static let closedError = BusError.disconnected("the connection closed before the reply came")

    /// Tracks `reply` while its caller waits; false once closed (the call must not be made).
    func add(_ reply: PendingReply) -> Bool {
        state.withLock { state in
            guard !state.closed else { return false }
            state.waiting[ObjectIdentifier(reply)] = reply
            return true
        }
    }

    func remove(_ reply: PendingReply) {
        _ = state.withLock { $0.waiting.removeValue(forKey: ObjectIdentifier(reply)) }
    }

    /// Ends every call still waiting with ``closedError``; calls made from now on fail at once. Idempotent.
    func close() {
        let waiting = state.withLock { state in
            state.closed = true
            return Array(state.waiting.values)
        }
        for reply in waiting { reply.fail(Self.closedError) }
    }
}

private func pendingCallNotify(_ pending: OpaquePointer?, _ data: UnsafeMutableRawPointer?) {
    guard let pending, let data else { return }
    Unmanaged<PendingReply>.fromOpaque(data).takeUnretainedValue().complete(pending)
}

/// libdbus frees the notify data: after the notify function ran, or instead of it when it dropped the call.
private func releasePendingReply(_ data: UnsafeMutableRawPointer?) {
    guard let data else { return }
    let box = Unmanaged<PendingReply>.fromOpaque(data)
    box.takeUnretainedValue().fail(PendingCalls.closedError)
    box.release()
}
