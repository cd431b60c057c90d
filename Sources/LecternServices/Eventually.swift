import Synchronization

/// A value made after those who will need it: set once, and reading it waits until then. At start-up the MPRIS
/// object is exported before the library is open; its Playlists handlers and OpenUri reach the book session
/// through one of these.
///
/// ```swift
/// let session = Eventually<BookSession>()
/// let handler: @Sendable () async -> Void = { await session.value.detach() }
/// session.set(BookSession(...))
/// ```
public final class Eventually<Value: Sendable>: Sendable {
    private enum State {
        case waiting([CheckedContinuation<Value, Never>])
        case set(Value)
    }
    private let state = Mutex(State.waiting([]))

    public init() {}

    /// Sets the value and resumes those waiting for it. Only the first call counts.
    public func set(_ value: Value) {
        let waiting = state.withLock { state -> [CheckedContinuation<Value, Never>] in
            guard case .waiting(let waiting) = state else { return [] }
            state = .set(value)
            return waiting
        }
        for waiter in waiting { waiter.resume(returning: value) }
    }

    /// The value, once set.
    public var value: Value {
        get async {
            await withCheckedContinuation { (waiter: CheckedContinuation<Value, Never>) in
                let value = state.withLock { state -> Value? in
                    switch state {
                    case .waiting(var waiting):
                        waiting.append(waiter)
                        state = .waiting(waiting)
                        return nil
                    case .set(let value):
                        return value
                    }
                }
                if let value { waiter.resume(returning: value) }
            }
        }
    }
}
