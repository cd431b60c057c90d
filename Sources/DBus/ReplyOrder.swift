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

    /// A sender's replies held, in the order of its calls, and whether a completion is sending them (`draining`).
    private struct Held {
        var queue: [HeldReply] = []
        var draining = false

        /// Puts `reply` before the first later serial.
        mutating func insert(_ reply: HeldReply) {
            queue.insert(reply, at: queue.firstIndex { ReplyOrder.precedes(reply.serial, $0.serial) } ?? queue.endIndex)
        }
    }

    /// By sender; a sender with nothing held has no entry. A reply is marshalled and sent outside this lock (a page
    /// of 200 books takes milliseconds, and the I/O thread looks here before answering any Get): the one completion
    /// draining a sender's queue sends its replies one after another, and the sender's other replies join the queue
    /// meanwhile, so none overtakes another.
    private let held = Mutex<[String: Held]>([:])

    /// Whether serial `a` came before `b` from the same sender (serials increase, wrapping at 2³²).
    static func precedes(_ a: UInt32, _ b: UInt32) -> Bool { Int32(bitPattern: a &- b) < 0 }

    /// Whether replies to `sender` are held: its next reply may have to wait.
    func isHolding(_ sender: String) -> Bool { held.withLock { $0[sender] != nil } }

    /// The deferred call `serial` of `sender` now runs: replies to the sender's later calls wait for its reply.
    func holdLaterReplies(after serial: UInt32, from sender: String?) {
        guard let sender else { return }
        held.withLock { held in
            held[sender, default: Held()].insert(HeldReply(serial: serial, send: nil))
        }
    }

    /// Sends at once, unless an earlier deferred call of the same sender is still running or its replies are being
    /// sent.
    func send(to sender: String?, serial: UInt32, _ send: @escaping @Sendable () -> Void) {
        if let sender {
            let waits = held.withLock { held -> Bool in
                guard var replies = held[sender],
                      replies.draining || replies.queue.contains(where: { $0.send == nil && Self.precedes($0.serial, serial) })
                else { return false }
                replies.insert(HeldReply(serial: serial, send: send))
                held[sender] = replies
                return true
            }
            if waits { return }
        }
        send()
    }

    /// The deferred call `serial` finished: its reply, and those that waited for it, go out in order.
    func complete(to sender: String?, serial: UInt32, _ send: @escaping @Sendable () -> Void) {
        guard let sender else { return send() }
        enum Next { case sendAlone, drain, leaveToTheDrainer }
        let next = held.withLock { held -> Next in
            guard var replies = held[sender],
                  let index = replies.queue.firstIndex(where: { $0.serial == serial && $0.send == nil }) else { return .sendAlone }
            replies.queue[index].send = send
            let drainedElsewhere = replies.draining
            replies.draining = true
            held[sender] = replies
            return drainedElsewhere ? .leaveToTheDrainer : .drain
        }
        switch next {
        case .sendAlone: send()
        case .drain: while let ready = nextReady(of: sender) { ready() }
        case .leaveToTheDrainer: break
        }
    }

    /// The first of `sender`'s held replies when it is ready, taken off the queue; nil (and the draining over) when
    /// the first still waits for its deferred call or none is left.
    private func nextReady(of sender: String) -> (@Sendable () -> Void)? {
        held.withLock { held in
            guard var replies = held[sender] else { return nil }
            if let ready = replies.queue.first?.send {
                replies.queue.removeFirst()
                held[sender] = replies
                return ready
            }
            replies.draining = false
            held[sender] = replies.queue.isEmpty ? nil : replies
            return nil
        }
    }
}
