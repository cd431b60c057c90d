/// What to do when the audio output in use goes away and comes back: a value-type state machine with no clock
/// and no I/O of its own. The caller reports route changes with the time they happened and applies the
/// ``Decision`` (``Player/pauseForLostOutput()`` / ``Player/resumeForReturnedOutput()``).
///
/// ```swift
/// var policy = OutputPolicy<ContinuousClock.Instant>(mode: .pauseAndResume, resumeWindow: .seconds(1800))
/// policy.handle(.lost(output: "headphones", reason: .removed, playing: true), at: .now)   // -> .pause
/// policy.handle(.returned(output: "headphones", untouched: await player.isPausedForLostOutput), at: .now)  // -> .resume
/// ```
///
/// "Nothing else happened since" is the caller's to say (`untouched`): for an output it is the player's
/// `isPausedForLostOutput`, which any command clears.
public struct OutputPolicy<Instant: InstantProtocol>: Sendable where Instant.Duration == Duration, Instant: Sendable {
    public typealias Mode = OutputPolicyMode

    /// Why an output is gone.
    public enum LossReason: String, Sendable, Hashable {
        /// The sink itself disappeared (USB or Bluetooth device, module unloaded).
        case removed
        /// The sink is there but its active port became unavailable (a headphone jack).
        case portUnavailable = "port-unavailable"
        /// The sound server died or restarted.
        case serverLost = "server-lost"
    }

    /// A route change, as the route source saw it.
    public enum Input: Sendable, Hashable {
        /// The output in use went away. `playing`: whether the player was playing (only then is there
        /// anything to pause, and a pause the route caused earlier stays the one to undo).
        case lost(output: String, reason: LossReason, playing: Bool)
        /// An output came (back). `untouched`: no command reached the player since the pause.
        case returned(output: String, untouched: Bool)
        /// The sound server is reachable again (after `.lost(reason: .serverLost)`); `untouched` as above.
        /// `outputPresent`: whether the output in use before the loss is among its sinks. A server that has just
        /// started may not have loaded it yet: its arrival then resumes, as after an unplug.
        case serverReturned(outputPresent: Bool, untouched: Bool)
        /// Any other sink event (another sink added or removed, a default-sink change): never acts.
        case other
    }

    public enum Decision: Sendable, Hashable {
        case nothing
        /// Pause, and remember the pause was the route's doing.
        case pause
        /// Resume playback.
        case resume
    }

    /// A pause the route caused, waiting for its output to come back (kept in every mode but `off`, so that the
    /// return is recognised; only `pauseAndResume` resumes).
    public struct PendingResume: Sendable, Hashable {
        public var output: String
        public var reason: LossReason
        public var since: Instant
    }

    public var mode: Mode {
        didSet { if mode == .off { pending = nil } }
    }
    /// How long after the loss a return still resumes.
    public var resumeWindow: Duration
    /// The route's pause waiting for a return, if any.
    public private(set) var pending: PendingResume?

    public init(mode: Mode = .pauseAndResume, resumeWindow: Duration = .seconds(30 * 60)) {
        self.mode = mode
        self.resumeWindow = resumeWindow
    }

    /// Takes one route change that happened at `now` and says what to do.
    public mutating func handle(_ input: Input, at now: Instant) -> Decision {
        expire(at: now)
        switch input {
        case .lost(let output, let reason, let playing):
            guard mode != .off, playing else { return .nothing }
            // The same loss reported twice (the stream moved off a sink, then the sink's removal): act once.
            if let pending, pending.output == output, pending.reason == reason { return .nothing }
            pending = PendingResume(output: output, reason: reason, since: now)
            return .pause
        case .returned(let output, let untouched):
            guard let pending, pending.output == output, pending.reason != .serverLost else { return .nothing }
            self.pending = nil
            return untouched && mode == .pauseAndResume ? .resume : .nothing
        case .serverReturned(let outputPresent, let untouched):
            guard var pending, pending.reason == .serverLost else { return .nothing }
            guard outputPresent else {
                pending.reason = .removed  // its `.returned` resumes, within the same window
                self.pending = pending
                return .nothing
            }
            self.pending = nil
            return untouched && mode == .pauseAndResume ? .resume : .nothing
        case .other:
            return .nothing
        }
    }

    /// Forgets the pending resume when the window has passed; call it on a timer or before reading `pending`.
    public mutating func expire(at now: Instant) {
        if let pending, pending.since.duration(to: now) > resumeWindow { self.pending = nil }
    }

    /// Forgets the pending resume (e.g. the pause did not happen because nothing was playing).
    public mutating func forget() { pending = nil }
}

/// What Lectern does when the output in use goes away (see ``OutputPolicy``); the user's choice.
public enum OutputPolicyMode: String, Sendable, CaseIterable {
    /// Pause when the output goes, resume when it comes back within the window.
    case pauseAndResume = "pause-and-resume"
    /// Pause when the output goes; never resume by itself.
    case pauseOnly = "pause-only"
    /// Ignore route changes (the sound server moves the stream wherever it likes).
    case off
}
