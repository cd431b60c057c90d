import Foundation
import Synchronization

/// What the user asked for, not what the pipeline passes through (a seek briefly pauses the
/// pipeline; clients must not see that).
public enum PlaybackStatus: Sendable, Equatable {
    case playing, paused, stopped
}

/// What plays again when the end is reached.
public enum LoopMode: Sendable, Equatable, CaseIterable {
    /// Nothing: the end of the queue stops and finishes it.
    case none
    /// The current chapter, over and over (a file of one chapter follows itself gaplessly).
    case chapter
    /// The whole queue, in play order: its first file follows its last.
    case queue
}

/// Volume, rate, shuffle and loop together: a book's settings, applied in one step when it is opened.
public struct PlaybackSettings: Sendable, Equatable {
    public var volume: Double
    public var rate: Double
    public var shuffle: Bool
    public var loop: LoopMode
    public init(volume: Double = 1, rate: Double = 1, shuffle: Bool = false, loop: LoopMode = .none) {
        self.volume = volume
        self.rate = rate
        self.shuffle = shuffle
        self.loop = loop
    }
}

/// The identity of a queue of the player.
public enum QueueID: Hashable, Sendable {
    /// The files of a book of the library, by the book's id.
    case book(Int64)
    /// Files opened by URI, numbered in the order they were opened (1, 2, ...).
    case opened(Int)
}

/// A snapshot of everything a client can see of the player, published after every change.
public struct PlayerState: Sendable, Equatable {
    public var status: PlaybackStatus = .stopped
    /// Which queue this is: a book of the library, or files opened otherwise (numbered per daemon); nil before the
    /// first. Clients' track ids name it, so a new queue with the same identity keeps its ids (a book's are stable).
    public var queueID: QueueID?
    public var queue: [MediaItem] = []
    /// Index into `queue` of the current item.
    public var currentIndex: Int?
    /// The chapters of the queue's files, in queue order (see ``Chapter/chapters(of:)``).
    public var chapters: [Chapter] = []
    /// Index into `chapters` of the chapter being played.
    public var currentChapter: Int?
    /// The play order (queue indices) while shuffled; stays the same until reshuffled.
    public var shuffleOrder: [Int]?
    public var sleepTimer: SleepTimerStatus?
    public var loop: LoopMode = .none
    public var shuffle = false
    public var volume = 1.0
    public var rate = 1.0
    /// The last error the engine reported for the current item, cleared by the next load.
    public var lastError: String?
    /// Whether `next()` / `previous()` would change the current item.
    public var canGoNext = false
    public var canGoPrevious = false

    public static let minimumRate = 0.5
    public static let maximumRate = 3.0

    public init() {}

    public var current: MediaItem? { currentIndex.map { queue[$0] } }
    public var chapter: Chapter? { currentChapter.map { chapters[$0] } }
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

/// What the player tells its observers, synchronously, in the order things happened.
public enum PlayerEvent: Sendable, Equatable {
    /// Something in the snapshot changed: the new state (also in ``PlayerView/state`` by now) and the one
    /// published before it.
    case stateChanged(PlayerState, previous: PlayerState)
    /// The position jumped (not by playing): seek, set position, a load at a saved position, a smart
    /// rewind. The new position within the current chapter.
    case seeked(Duration)
    /// A stop was asked for while this item was at this position (the position then reads 0): where to
    /// resume a book from.
    case stopped(MediaItem, at: Duration)
    /// Playback reached the end of the queue (with loop off): the book is finished.
    case finished
    /// The sleep timer paused playback at this position of this item.
    case sleepTimerFired(MediaItem, at: Duration)
    /// This item, at this index of the queue, could not be played (the engine's message); playback went on with
    /// the next one, if any.
    case itemFailed(MediaItem, index: Int, message: String)
    /// Still playing, at this position of this item: sent at every tick while playing (``Player/tickInterval``),
    /// when the position is worth saving.
    case playing(MediaItem, at: Duration)
}

/// Hears every ``PlayerEvent``, synchronously, on the player's executor: it must not wait (hand the event on to
/// a stream or another executor for anything slow).
public protocol PlayerObserver: Sendable {
    func handle(_ event: PlayerEvent)
}

/// A stream of the player's events: for an observer that works on its own executor (it reads them in order).
extension AsyncStream.Continuation: PlayerObserver where Element == PlayerEvent {
    public func handle(_ event: PlayerEvent) { yield(event) }
}

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
    }
    private let published = Mutex(Published())

    public init() {}

    /// The last state the player published.
    public var state: PlayerState { published.withLock { $0.state } }
    public var clock: PositionClock { published.withLock { $0.clock } }

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
            guard let end = published.state.chapter?.end else { return nil }
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
}

/// Why a command was refused. Nothing changed.
public enum PlayerError: Error, Equatable, Sendable, CustomStringConvertible {
    case nothingToPlay
    case invalidValue(String)

    public var description: String {
        switch self {
        case .nothingToPlay: return "nothing is loaded"
        case .invalidValue(let what): return what
        }
    }
}
