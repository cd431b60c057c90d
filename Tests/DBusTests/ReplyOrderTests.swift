import Foundation
import Synchronization
import Testing
@testable import DBus

/// ReplyOrder alone: which replies wait for a deferred call of their sender, and in what order they leave.
@Suite struct ReplyOrderTests {
    /// The replies sent, by serial, in the order they went out.
    final class Sent: Sendable {
        private let serials = Mutex<[UInt32]>([])
        func reply(_ serial: UInt32) -> @Sendable () -> Void { { self.serials.withLock { $0.append(serial) } } }
        var all: [UInt32] { serials.withLock { $0 } }
    }

    @Test func serialsCompareAcrossTheWrap() {
        #expect(ReplyOrder.precedes(1, 2))
        #expect(!ReplyOrder.precedes(2, 1))
        #expect(!ReplyOrder.precedes(5, 5))
        #expect(ReplyOrder.precedes(UInt32.max, 0))
        #expect(ReplyOrder.precedes(UInt32.max - 1, 3))
        #expect(!ReplyOrder.precedes(3, UInt32.max))
    }

    @Test func repliesGoOutAtOnceWithoutADeferredCall() {
        let order = ReplyOrder(), sent = Sent()
        order.send(to: ":1.5", serial: 2, sent.reply(2))
        order.send(to: nil, serial: 3, sent.reply(3))
        #expect(sent.all == [2, 3])
        #expect(!order.isHolding(":1.5"))
    }

    @Test func laterRepliesWaitForTheDeferredCallThenFollowItInOrder() {
        let order = ReplyOrder(), sent = Sent()
        order.holdLaterReplies(after: 7, from: ":1.5")
        order.send(to: ":1.5", serial: 9, sent.reply(9))
        order.send(to: ":1.5", serial: 8, sent.reply(8))
        order.send(to: ":1.5", serial: 6, sent.reply(6))  // earlier than the deferred call: not held
        order.send(to: ":1.6", serial: 10, sent.reply(10))  // another sender: not held
        #expect(sent.all == [6, 10])
        #expect(order.isHolding(":1.5"))
        order.complete(to: ":1.5", serial: 7, sent.reply(7))
        #expect(sent.all == [6, 10, 7, 8, 9])
        #expect(!order.isHolding(":1.5"))
    }

    @Test func aSecondDeferredCallHoldsTheRepliesAfterIt() {
        let order = ReplyOrder(), sent = Sent()
        order.holdLaterReplies(after: 1, from: ":1.5")
        order.holdLaterReplies(after: 3, from: ":1.5")
        order.send(to: ":1.5", serial: 2, sent.reply(2))
        order.send(to: ":1.5", serial: 4, sent.reply(4))
        order.complete(to: ":1.5", serial: 3, sent.reply(3))  // finishes first, but waits for 1
        #expect(sent.all.isEmpty)
        order.complete(to: ":1.5", serial: 1, sent.reply(1))
        #expect(sent.all == [1, 2, 3, 4])
        #expect(!order.isHolding(":1.5"))
    }

    @Test func heldRepliesKeepTheirOrderAcrossTheSerialWrap() {
        let order = ReplyOrder(), sent = Sent()
        order.holdLaterReplies(after: UInt32.max, from: ":1.5")
        order.send(to: ":1.5", serial: 1, sent.reply(1))
        order.send(to: ":1.5", serial: 0, sent.reply(0))
        order.complete(to: ":1.5", serial: UInt32.max, sent.reply(UInt32.max))
        #expect(sent.all == [UInt32.max, 0, 1])
    }

    @Test func aCompletionNobodyWaitsForIsSentAtOnce() {
        let order = ReplyOrder(), sent = Sent()
        order.complete(to: ":1.5", serial: 4, sent.reply(4))
        order.complete(to: nil, serial: 5, sent.reply(5))
        #expect(sent.all == [4, 5])
    }

    /// A reply is sent outside the lock: a big one takes milliseconds to marshal, and the I/O thread asks `isHolding`
    /// before answering any sender's Get. The sender's replies that come meanwhile wait for it, in order.
    @Test func aReplyBeingSentHoldsNoLockAndItsSendersNextRepliesFollowIt() {
        let order = ReplyOrder(), sent = Sent()
        order.holdLaterReplies(after: 7, from: ":1.5")
        order.complete(to: ":1.5", serial: 7) {
            // From another thread, as the I/O thread and the call queue would: never kept waiting by this reply.
            let done = DispatchSemaphore(value: 0)
            Thread {
                _ = order.isHolding(":1.6")
                order.send(to: ":1.5", serial: 8, sent.reply(8))
                order.holdLaterReplies(after: 9, from: ":1.5")
                order.complete(to: ":1.5", serial: 9, sent.reply(9))
                order.send(to: ":1.6", serial: 3, sent.reply(3))  // another sender: at once
                done.signal()
            }.start()
            #expect(done.wait(timeout: .now() + 60) == .success, "the other thread waited for this reply to be sent")
            #expect(sent.all == [3], "8 and 9 wait for 7")
            sent.reply(7)()
        }
        #expect(sent.all == [3, 7, 8, 9])
        #expect(!order.isHolding(":1.5"))
        order.send(to: ":1.5", serial: 10, sent.reply(10))
        #expect(sent.all == [3, 7, 8, 9, 10])
    }
}
