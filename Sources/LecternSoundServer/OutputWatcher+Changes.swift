import Foundation
import LecternCore

// What the watcher tells its observer (the daemon's org.lectern.Output1 face): the output in use, whether the sound
// server is connected, the last route event, and the policy, window and interruptions mode it works with.
extension OutputWatcher {
    /// The last route event, as `LastRouteEvent` and `RouteChanged` carry it.
    public struct RouteEvent: Sendable, Equatable {
        public enum Kind: String, Sendable {
            case none
            case outputLost = "output-lost"
            case outputReturned = "output-returned"
            case serverLost = "server-lost"
            case serverReturned = "server-returned"
            /// Another sound asked for the output (a call started).
            case interrupted
            /// It gave the output back (the call ended).
            case interruptionEnded = "interruption-ended"
        }
        public enum Action: String, Sendable {
            case none, paused, resumed
        }
        public var kind: Kind
        public var output: String
        public var port: String
        public var action: Action
        /// Microseconds since the Unix epoch; 0 for `.none`.
        public var time: Int64

        static let initial = RouteEvent(kind: .none, output: "", port: "", action: .none, time: 0)
    }

    /// Everything the watcher publishes, as it is now.
    public struct Status: Sendable, Equatable {
        public var currentOutput: String
        public var serverConnected: Bool
        public var lastEvent: RouteEvent
        public var policy: OutputPolicyMode
        public var resumeWindow: Duration
        public var interruptions: InterruptionMode
    }

    /// What is published (the last route event, the output in use as last settled) and to whom: a ``Mutex``'s, so that
    /// the player's observer can record an interruption's event at once.
    struct Published {
        var observer: (@Sendable (Change) -> Void)?
        var lastEvent = RouteEvent.initial
        var currentOutput = ""
    }

    /// One change of the ``Status``; `.routeEvent` is also an announcement (D-Bus: the RouteChanged signal).
    public enum Change: Sendable, Equatable {
        case currentOutput(String)
        case serverConnected(Bool)
        case routeEvent(RouteEvent)
        case policy(OutputPolicyMode)
        case resumeWindow(Duration)
        case interruptions(InterruptionMode)
    }

    /// Gives the player its interruption mode, then tells `observer` of every change from now on; returns the status
    /// to start from. The observer is called on the actor, or on the player's thread for an interruption's event, and
    /// must not wait.
    public func observe(_ observer: @escaping @Sendable (Change) -> Void) async -> Status {
        let lastEvent = published.withLock { published in
            published.observer = observer
            return published.lastEvent
        }
        await player.setInterruptions(interruptions)
        return Status(currentOutput: soundServer.currentOutput, serverConnected: soundServer.connected, lastEvent: lastEvent,
                      policy: policy.mode, resumeWindow: policy.resumeWindow, interruptions: interruptions)
    }

    /// Tells the observer of `change`.
    nonisolated func announce(_ change: Change) {
        published.withLock { $0.observer }?(change)
    }

    public func setMode(_ mode: OutputPolicyMode) {
        policy.mode = mode
        announce(.policy(mode))
    }

    public func setResumeWindow(_ window: Duration) {
        policy.resumeWindow = window
        announce(.resumeWindow(window))
    }

    public func setInterruptions(_ mode: InterruptionMode) async {
        interruptions = mode
        await player.setInterruptions(mode)
        announce(.interruptions(mode))
    }

    /// Recomputes the output in use and publishes it when it changed.
    func updateCurrentOutput() {
        guard let name = soundServer.settleCurrentOutput() else { return }
        published.withLock { $0.currentOutput = name }
        announce(.currentOutput(name))
    }

    func publishServerConnected() {
        announce(.serverConnected(soundServer.connected))
    }

    /// Notes a route event as the last one, and announces it; `output` nil: the output in use as last settled.
    nonisolated func record(_ kind: RouteEvent.Kind, output: String?, port: String = "", action: RouteEvent.Action) {
        let now = Date().timeIntervalSince1970
        let (event, observer) = published.withLock { published in
            published.lastEvent = RouteEvent(kind: kind, output: output ?? published.currentOutput, port: port, action: action,
                                             time: Int64(now * 1_000_000))
            return (published.lastEvent, published.observer)
        }
        observer?(.routeEvent(event))
    }
}
