import Foundation

/// When the sleep timer stops playback.
public enum SleepMode: Sendable, Equatable {
    /// After this much playing time (the timer does not run while paused).
    case after(Duration)
    /// At the end of the chapter being played.
    case endOfChapter
}

/// The sleep timer as clients see it; the time it has left is counted by ``PlayerView/sleepTimeLeft(at:)``.
public struct SleepTimerStatus: Sendable, Equatable {
    public var mode: SleepMode
    /// Whether the volume is fading out now (a command extends the timer).
    public var fading: Bool

    public init(mode: SleepMode, fading: Bool) {
        self.mode = mode
        self.fading = fading
    }
}

/// Resuming after a long pause starts a little earlier, more for longer pauses: nothing for a pause shorter
/// than `threshold`, `minimum` just after it, growing linearly to `maximum` for a pause of `fullAfter` or more.
public struct SmartRewind: Sendable, Equatable {
    public var threshold: Duration
    public var minimum: Duration
    public var maximum: Duration
    public var fullAfter: Duration

    public init(threshold: Duration = .seconds(30), minimum: Duration = .seconds(3), maximum: Duration = .seconds(30),
                fullAfter: Duration = .seconds(3600)) {
        self.threshold = threshold
        self.minimum = minimum
        self.maximum = max(minimum, maximum)
        self.fullAfter = max(threshold, fullAfter)
    }

    public static let off = SmartRewind(minimum: .zero, maximum: .zero)

    /// How far to go back after a pause of `pause`.
    public func rewind(after pause: Duration) -> Duration {
        guard pause >= threshold, maximum > .zero else { return .zero }
        guard fullAfter > threshold else { return maximum }
        let fraction = min(1, (pause - threshold) / (fullAfter - threshold))
        return minimum + (maximum - minimum) * fraction
    }
}

/// What the player does beyond plain playback; set once, when the daemon starts.
public struct ListeningOptions: Sendable, Equatable {
    public var smartRewind: SmartRewind
    /// How long the sleep timer's fade-out lasts.
    public var sleepFade: Duration
    /// Previous further than this into a chapter goes back to its start.
    public var previousRestartsAfter: Duration

    public init(smartRewind: SmartRewind = SmartRewind(), sleepFade: Duration = .seconds(10),
                previousRestartsAfter: Duration = .seconds(3)) {
        self.smartRewind = smartRewind
        self.sleepFade = sleepFade
        self.previousRestartsAfter = previousRestartsAfter
    }
}
