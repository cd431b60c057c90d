import Synchronization

/// Keeps each sender's replies in the order of its calls while a deferred method of that sender runs.
///
/// A deferred method (`Method.deferred`) leaves the call queue before its reply is known, so the sender's later
/// calls are handled meanwhile; their replies wait here until the deferred call's reply has gone out. Replies to a
/// sender with no deferred call running go out at once.
///
/// ```swift
/// order.holdLaterReplies(after: 7, from: ":1.5")        // call 7 is deferred
/// order.send(to: ":1.5", serial: 8) { sendReplyTo8() }  // waits for 7
/// order.complete(to: ":1.5", serial: 7) { sendReplyTo7() }  // sends 7's reply, then 8's
/// ```
final class ReplyOrder: Sendable {
    /// One reply in a sender's queue: a deferred call still running (`send` nil), or a reply waiting behind one.
    private struct HeldReply {
        let serial: UInt32
        var send: (@Sendable () -> Void)?
    }

    /// By sender, in the order of its calls; a sender with nothing held has no entry. Replies that leave the queue
    /// are sent under this lock, so that two completions can't reorder them.
    private let held = Mutex<[String: [HeldReply]]>([:])

    /// Whether serial `a` came before `b` from the same sender (serials increase, wrapping at 2³²).
    static func precedes(_ a: UInt32, _ b: UInt32) -> Bool { Int32(bitPattern: a &- b) < 0 }

    /// Whether replies to `sender` are held: its next reply may have to wait.
    func isHolding(_ sender: String) -> Bool { held.withLock { $0[sender] != nil } }

    /// The deferred call `serial` of `sender` now runs: replies to the sender's later calls wait for its reply.
    func holdLaterReplies(after serial: UInt32, from sender: String?) {
        guard let sender else { return }
        held.withLock { held in
            var queue = held[sender] ?? []
            queue.insert(HeldReply(serial: serial, send: nil), at: Self.index(of: serial, in: queue))
            held[sender] = queue
        }
    }

    /// Sends at once, unless an earlier deferred call of the same sender is still running.
    func send(to sender: String?, serial: UInt32, _ send: @escaping @Sendable () -> Void) {
        if let sender {
            let waits = held.withLock { held -> Bool in
                guard var queue = held[sender],
                      queue.contains(where: { $0.send == nil && Self.precedes($0.serial, serial) }) else { return false }
                queue.insert(HeldReply(serial: serial, send: send), at: Self.index(of: serial, in: queue))
                held[sender] = queue
                return true
            }
            if waits { return }
        }
        send()
    }

    /// The deferred call `serial` finished: its reply, and those that waited for it, go out in order.
    func complete(to sender: String?, serial: UInt32, _ send: @escaping @Sendable () -> Void) {
        guard let sender else { return send() }
        held.withLock { held in
            guard var queue = held[sender], let index = queue.firstIndex(where: { $0.serial == serial && $0.send == nil }) else {
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

    /// Where `serial` goes in a sender's queue: before the first later serial.
    private static func index(of serial: UInt32, in queue: [HeldReply]) -> Int {
        queue.firstIndex { precedes(serial, $0.serial) } ?? queue.endIndex
    }
}
