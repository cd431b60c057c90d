import CDBus
import Synchronization

/// The continuation of one outgoing call; resumed exactly once, by the notify function or by the caller.
///
/// libdbus keeps the pending calls (and times them out); this box is what its notify function finds. It is retained
/// by the pending call until libdbus frees the notify data (``releasePendingReply``).
final class PendingReply: Sendable {
    private let continuation = Mutex<CheckedContinuation<ReceivedMessage, any Error>?>(nil)
    init(_ continuation: CheckedContinuation<ReceivedMessage, any Error>) { self.continuation.withLock { $0 = continuation } }

    /// Sends `message` on `connection` and waits for its reply (or libdbus's timeout error after `timeout`).
    static func send(_ message: OutgoingMessage, on connection: OpaquePointer, timeout: Duration) async throws -> ReceivedMessage {
        let ms = Int32(clamping: timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        return try await withCheckedThrowingContinuation { continuation in
            var pending: OpaquePointer?
            guard dbus_connection_send_with_reply(connection, message.raw, &pending, max(ms, 1)) != 0, let pending else {
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
