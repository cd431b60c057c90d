import Foundation
import Synchronization

/// The streams of ``BusConnection/signals(_:)``, each with its match rule: the I/O thread yields each signal
/// received to those it matches.
final class SignalSubscriptions: Sendable {
    private struct Subscription {
        let rule: MatchRule
        let continuation: AsyncStream<ReceivedMessage>.Continuation
    }
    private let subscriptions = Mutex<[UUID: Subscription]>([:])

    func add(_ id: UUID, rule: MatchRule, continuation: AsyncStream<ReceivedMessage>.Continuation) {
        subscriptions.withLock { $0[id] = Subscription(rule: rule, continuation: continuation) }
    }

    func remove(_ id: UUID) {
        subscriptions.withLock { _ = $0.removeValue(forKey: id) }
    }

    /// Yields `signal` to every subscription whose rule it matches (outside the lock).
    func deliver(_ signal: ReceivedMessage) {
        let targets = subscriptions.withLock { $0.values.filter { $0.rule.matches(signal) } }
        for target in targets { target.continuation.yield(signal) }
    }

    /// Ends every stream: the connection closed.
    func finishAll() {
        let all = subscriptions.withLock { s -> [Subscription] in
            defer { s = [:] }
            return Array(s.values)
        }
        for subscription in all { subscription.continuation.finish() }
    }
}
