import Foundation
import Synchronization

/// Records events from any thread (a bus-thread handler, or a stream drained by a task) so a test can wait
/// for one with a timeout, without giving up on the events that came before or after.
public final class EventLog<Event: Sendable>: Sendable {
    public struct Timeout: Error, CustomStringConvertible {
        public let description: String
    }

    private let events = Mutex<[Event]>([])

    public init() {}

    /// Drains `stream` into the log on a task of its own until the stream finishes.
    public init(draining stream: AsyncStream<Event>) {
        Task { [self] in
            for await event in stream {
                append(event)
            }
        }
    }

    public func append(_ event: Event) {
        events.withLock { $0.append(event) }
    }

    public var all: [Event] { events.withLock { $0 } }
    public var count: Int { events.withLock { $0.count } }

    /// Waits for the first event at index `after` or later that matches, polling every 10 ms.
    /// - Returns: its index and value. - Throws: `Timeout` listing what arrived.
    @discardableResult
    public func waitFor(
        after start: Int = 0, timeout: Duration = .seconds(10), _ what: String = "event",
        _ matches: @Sendable (Event) -> Bool
    ) async throws -> (index: Int, event: Event) {
        let deadline = ContinuousClock.now + timeout
        while true {
            let list = all
            if start < list.count, let index = list[start...].firstIndex(where: matches) {
                return (index, list[index])
            }
            guard ContinuousClock.now < deadline else {
                throw Timeout(description: "no \(what) within \(timeout); got \(all)")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }
}
