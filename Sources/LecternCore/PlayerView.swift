import Foundation
import Synchronization

/// What anyone may read of the player without a hop to its actor (e.g. the D-Bus thread answering `Get Position`):
/// the last published state, the position clock and the sleep timer's time left. Written only by the player, before
/// its observers hear of the change.
public final class PlayerView: Sendable {
    private struct Published {
        var state = PlayerState()
        var clock = PositionClock()
        /// When `state` was published.
        var at = ContinuousClock.now
        var sleep: SleepCount?
        var silenceSkipped = Duration.zero
    }
    private let published = Mutex(Published())

    public init() {}

    /// The last state the player published.
    public var state: PlayerState { published.withLock { $0.state } }
    public var clock: PositionClock { published.withLock { $0.clock } }

    /// Listening time skip silence saved since the player was made: what the pauses heard lost (it only grows).
    public var silenceSkipped: Duration { published.withLock { $0.silenceSkipped } }

    /// The position in the current file.
    public func position(at now: ContinuousClock.Instant = .now) -> Duration { clock.position(at: now) }

    /// Where the listener is in the file, the chapter and the book.
    public func progress(at now: ContinuousClock.Instant = .now) -> BookProgress? {
        let (state, clock) = published.withLock { ($0.state, $0.clock) }
        return state.progress(atFilePosition: clock.position(at: now))
    }

    /// Playing time until the sleep timer stops playback: nil without a timer, or at a chapter end still unknown.
    /// The player's own count at the last publication, less the playing time since.
    public func sleepTimeLeft(at now: ContinuousClock.Instant = .now) -> Duration? {
        let published = published.withLock { $0 }
        switch published.sleep {
        case nil, .laterChapterEnd?:
            return nil
        case .playingTime(let left)?:
            let counted = published.state.status == .playing ? now - published.at : .zero
            return max(.zero, left - counted)
        case .thisChapterEnd?:
            guard let end = published.state.currentChapter.flatMap(published.state.playedEnd(ofChapter:)) else { return nil }
            return max(.zero, end - published.clock.position(at: now)) / published.state.rate
        }
    }

    /// How the sleep timer counts, as the player last published it.
    enum SleepCount {
        /// This much playing time was left at publication.
        case playingTime(Duration)
        /// It stops at the end of the current chapter.
        case thisChapterEnd
        /// It stops at the end of a later chapter (extended during its fade).
        case laterChapterEnd
    }

    func publish(_ state: PlayerState, sleep: SleepCount?) {
        published.withLock {
            $0.state = state
            $0.sleep = sleep
            $0.at = .now
        }
    }

    func set(_ clock: PositionClock) { published.withLock { $0.clock = clock } }

    func setSilenceSkipped(_ skipped: Duration) { published.withLock { $0.silenceSkipped = skipped } }
}

/// The position of the current item as a function of time: re-anchored on every play, pause, seek
/// and chapter change and at every tick (``Player/tickInterval``), so a reader on another thread can compute "now" without
/// asking the pipeline.
public struct PositionClock: Sendable, Equatable {
    public var anchor: Duration
    public var anchoredAt: ContinuousClock.Instant
    /// 0 while not advancing.
    public var speed: Double

    public init(anchor: Duration = .zero, at instant: ContinuousClock.Instant = .now, speed: Double = 0) {
        self.anchor = anchor
        self.anchoredAt = instant
        self.speed = speed
    }

    public func position(at now: ContinuousClock.Instant = .now) -> Duration {
        guard speed > 0 else { return anchor }
        return anchor + (now - anchoredAt) * speed
    }
}
